import {
  bodyField,
  bodyObject,
  successfulMutation,
  type RequestLogEntry,
} from '../../runtime/request-log.ts';

/** Currencies without minor units (Stripe's list): their amounts are whole units. */
const ZERO_DECIMAL = new Set(
  'bif clp djf gnf jpy kmf krw mga pyg rwf ugx vnd vuv xaf xof xpf'.split(' ').map((c) => c.toLowerCase()),
);

/** Past tenses of the actions Stripe exposes as `POST /v1/<objects>/<id>/<action>`. */
const ACTIONS: Record<string, string> = {
  confirm: 'confirmed',
  capture: 'captured',
  cancel: 'canceled',
  attach: 'attached',
  detach: 'detached',
  finalize: 'finalized',
  pay: 'paid',
  void: 'voided',
  send: 'sent',
  expire: 'expired',
  resume: 'resumed',
  mark_uncollectible: 'marked uncollectible',
  verify_microdeposits: 'verified',
  apply_customer_balance: 'funded from the customer balance',
  increment_authorization: 'authorization incremented',
};

/** `payment_intent` → `payment intent`, `checkout.session` → `checkout session`. */
function label(object: string): string {
  return object.replace(/[._]/g, ' ');
}

function money(amount: unknown, currency: unknown): string | undefined {
  if (typeof amount !== 'number' || typeof currency !== 'string') return undefined;
  const whole = ZERO_DECIMAL.has(currency.toLowerCase()) ? String(amount) : (amount / 100).toFixed(2);
  return `${whole} ${currency.toUpperCase()}`;
}

/** What identifies a created object to a person, beyond its id. */
function particulars(object: Record<string, unknown>): string | undefined {
  const parts: string[] = [];
  const amount = money(object.amount ?? object.amount_total ?? object.amount_due, object.currency);
  switch (object.object) {
    case 'customer':
      if (typeof object.email === 'string') parts.push(object.email);
      else if (typeof object.name === 'string') parts.push(object.name);
      break;
    case 'product':
      if (typeof object.name === 'string') parts.push(object.name);
      break;
    case 'price': {
      const unit = money(object.unit_amount, object.currency);
      const interval = (object.recurring as { interval?: unknown } | null | undefined)?.interval;
      if (unit) parts.push(typeof interval === 'string' ? `${unit}/${interval}` : unit);
      break;
    }
    case 'payment_method': {
      const card = object.card as { brand?: unknown; last4?: unknown } | undefined;
      if (card && typeof card.brand === 'string') parts.push(`${card.brand} •••• ${String(card.last4)}`);
      break;
    }
    case 'refund':
      if (amount) parts.push(amount);
      if (typeof object.payment_intent === 'string') parts.push(`of ${object.payment_intent}`);
      else if (typeof object.charge === 'string') parts.push(`of ${object.charge}`);
      break;
    case 'subscription':
      if (typeof object.customer === 'string') parts.push(`for ${object.customer}`);
      break;
    default:
      if (amount) parts.push(amount);
      if (typeof object.customer === 'string') parts.push(`for ${object.customer}`);
  }
  if (typeof object.status === 'string') parts.push(object.status);
  return parts.length ? parts.join(', ') : undefined;
}

/**
 * What a Stripe request changed, from the object Stripe answered with (`object` and `id`): created on
 * `POST /v1/<objects>`, updated on `POST /v1/<objects>/<id>`, an action on `.../<id>/<action>`,
 * deleted (or, for subscriptions, canceled) on `DELETE`.
 */
export function describeStripeChange(entry: RequestLogEntry): string | undefined {
  const mutation = successfulMutation(entry);
  if (!mutation) return undefined;
  const object = bodyObject(entry.response_body);
  if (!object || typeof object.object !== 'string' || typeof object.id !== 'string') return undefined;
  const what = `${label(object.object)} ${object.id}`;
  if (object.deleted === true) return `${what} deleted`;
  // /v1/<objects>[/<id>[/<action>]]; nested collections (/v1/customers/<id>/sources) count as creation.
  const segments = mutation.pathname.split('/').filter(Boolean).slice(1);
  const details = particulars(object);
  const withDetails = (text: string) => (details ? `${text} (${details})` : text);
  if (mutation.method === 'DELETE') return `${what} canceled`;
  if (segments.length === 0) return undefined;
  const action = segments.length >= 3 ? segments.at(-1)! : undefined;
  if (action && segments[1] === object.id) {
    const done = ACTIONS[action] ?? action.replace(/_/g, ' ');
    if (action === 'attach') {
      const customer =
        typeof object.customer === 'string' ? object.customer : bodyField(entry.request_body, 'customer');
      return `${what} attached${customer ? ` to customer ${customer}` : ''}`;
    }
    return withDetails(`${what} ${done}`);
  }
  if (segments.length === 2 && segments[1] === object.id) return withDetails(`${what} updated`);
  return withDetails(`${what} created`);
}
