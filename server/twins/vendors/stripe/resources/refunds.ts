/** Refunds (`/v1/refunds`): of a charge, or of a payment intent's latest charge. */
import { invalid } from '../errors.ts';
import { int, mergeMetadata, metadata, oneOf, str, type FormObject } from '../params.ts';
import { previousOf, type StripeObject, type StripeStore } from '../store.ts';

/**
 * `POST /v1/refunds`: of a charge or of a payment intent's latest charge, all of what is left unless
 * `amount` says less. Test-mode refunds succeed at once, as Stripe's do.
 */
export function createRefund(store: StripeStore, b: FormObject, idempotencyKey?: string) {
  const chargeParam = str(b.charge);
  const piParam = str(b.payment_intent);
  if (!chargeParam && !piParam) {
    throw invalid(
      'One of the following params should be provided for this request: payment_intent or charge.',
    );
  }
  let charge: StripeObject;
  if (chargeParam) charge = store.find('charge', chargeParam, 'charge');
  else {
    const pi = store.find('payment_intent', piParam!, 'payment_intent');
    const latest = pi.latest_charge ? store.lookup(pi.latest_charge as string) : undefined;
    if (pi.status !== 'succeeded' || !latest || latest.status !== 'succeeded') {
      throw invalid(
        `This PaymentIntent (${pi.id}) does not have a successful charge to refund.`,
        'payment_intent',
        'charge_not_refundable',
      );
    }
    charge = latest;
  }
  if (piParam && charge.payment_intent !== piParam) {
    throw invalid(`Charge ${charge.id} does not belong to PaymentIntent ${piParam}.`, 'charge');
  }
  if (charge.status !== 'succeeded' || !charge.captured) {
    throw invalid(`Charge ${charge.id} has not been captured and cannot be refunded.`, 'charge');
  }
  const left = (charge.amount_captured as number) - (charge.amount_refunded as number);
  if (left <= 0) {
    throw invalid(`Charge ${charge.id} has already been refunded.`, 'charge', 'charge_already_refunded');
  }
  const amount = int(b.amount, 'amount', { min: 1 }) ?? left;
  if (amount > left) {
    const shown = (n: number) => `$${(n / 100).toFixed(2)}`;
    throw invalid(
      `Refund amount (${shown(amount)}) is greater than unrefunded amount on charge (${shown(left)})`,
      'amount',
      'amount_too_large',
    );
  }
  const refund = store.insert('refund', {
    amount,
    balance_transaction: null,
    charge: charge.id,
    currency: charge.currency,
    customer: charge.customer ?? null,
    customer_account: null,
    destination_details: {
      card: { reference_status: 'pending', reference_type: 'acquirer_reference_number', type: 'refund' },
      type: 'card',
    },
    metadata: metadata(b.metadata),
    payment_intent: charge.payment_intent ?? null,
    payment_method: charge.payment_method ?? null,
    reason: oneOf(b.reason, 'reason', ['duplicate', 'fraudulent', 'requested_by_customer'] as const) ?? null,
    receipt_number: null,
    source_transfer_reversal: null,
    status: 'succeeded',
    transfer_reversal: null,
  });
  const refunded = (charge.amount_refunded as number) + amount;
  const updatedCharge = store.update(charge.id, {
    amount_refunded: refunded,
    refunded: refunded >= (charge.amount_captured as number),
  });
  store.event('refund.created', refund, { idempotencyKey });
  store.event('charge.refunded', updatedCharge, { idempotencyKey });
  return refund;
}

export function updateRefund(store: StripeStore, id: string, b: FormObject) {
  const refund = store.find('refund', id);
  const changes: Record<string, unknown> = {};
  if (b.metadata !== undefined) changes.metadata = mergeMetadata(refund.metadata, b.metadata);
  const updated = store.update(id, changes);
  store.event('refund.updated', updated, undefined, previousOf(refund, changes));
  return updated;
}

export function listRefunds(store: StripeStore, q: URLSearchParams) {
  return store.list(
    'refund',
    q,
    '/v1/refunds',
    (r) =>
      (!q.get('charge') || r.charge === q.get('charge')) &&
      (!q.get('payment_intent') || r.payment_intent === q.get('payment_intent')),
  );
}
