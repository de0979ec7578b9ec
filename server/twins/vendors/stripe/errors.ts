/** A Stripe API error: `status` and the `error` object of Stripe's body (`{type, message, code?, param?}`). */
export class StripeError extends Error {
  constructor(
    readonly status: number,
    readonly body: Record<string, unknown>,
  ) {
    super(String(body.message));
  }
}
