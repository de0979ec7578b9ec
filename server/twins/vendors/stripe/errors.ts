/** A Stripe API error: `status` and the `error` object of Stripe's body (`{type, message, code?, param?}`). */
export class StripeError extends Error {
  constructor(
    readonly status: number,
    readonly body: Record<string, unknown>,
  ) {
    super(String(body.message));
  }
}

export const invalid = (message: string, param?: string, code?: string) =>
  new StripeError(400, {
    type: 'invalid_request_error',
    message,
    ...(param ? { param } : {}),
    ...(code ? { code } : {}),
  });

export const missing = (type: string, id: string, param?: string) =>
  new StripeError(param ? 400 : 404, {
    type: 'invalid_request_error',
    code: 'resource_missing',
    message: `No such ${type.replace(/^checkout\.session$/, 'checkout session')}: '${id}'`,
    ...(param ? { param } : {}),
  });
