/**
 * Payment intents (`/v1/payment_intents`): each confirmation attempt records a charge (charges.ts), and a
 * test card's decline (cards.ts) fails it as Stripe's would.
 */
import { randomBytes } from 'node:crypto';
import { cardOutcome } from '../cards.ts';
import { StripeError, invalid } from '../errors.ts';
import { bool, currencyOf, int, mergeMetadata, metadata, oneOf, str, type FormObject } from '../params.ts';
import { newId, now, type StripeStore } from '../store.ts';
import { chargeShape } from './charges.ts';
import { cardError, declineDocUrl, resolvePaymentMethod } from './payment-methods.ts';

export function createPaymentIntent(store: StripeStore, b: FormObject, idempotencyKey?: string) {
  const amount = int(b.amount, 'amount', { required: true, min: 1 })!;
  const currency = currencyOf(b.currency);
  const customer = str(b.customer);
  if (customer) store.find('customer', customer, 'customer');
  const pmParam = str(b.payment_method);
  const pm = pmParam ? resolvePaymentMethod(store, pmParam) : undefined;
  const captureMethod =
    oneOf(b.capture_method, 'capture_method', ['automatic', 'automatic_async', 'manual'] as const) ??
    'automatic_async';
  const id = newId('pi');
  const pi = store.insert(
    'payment_intent',
    {
      allowed_payment_method_types: null,
      amount,
      amount_capturable: 0,
      amount_received: 0,
      application: null,
      application_fee_amount: null,
      automatic_payment_methods: null,
      canceled_at: null,
      cancellation_reason: null,
      capture_method: captureMethod,
      client_secret: `${id}_secret_${randomBytes(12).toString('hex')}`,
      confirmation_method: 'automatic',
      currency,
      customer: customer ?? null,
      customer_account: null,
      description: str(b.description) ?? null,
      excluded_payment_method_types: null,
      last_payment_error: null,
      latest_charge: null,
      managed_payments: null,
      metadata: metadata(b.metadata),
      next_action: null,
      on_behalf_of: null,
      payment_method: pm?.id ?? null,
      payment_method_configuration_details: null,
      payment_method_options: {
        card: {
          installments: null,
          mandate_options: null,
          network: null,
          request_three_d_secure: 'automatic',
        },
      },
      payment_method_types: ['card'],
      payment_record: null,
      processing: null,
      receipt_email: str(b.receipt_email) ?? null,
      review: null,
      setup_future_usage: str(b.setup_future_usage) ?? null,
      shipping: null,
      source: null,
      statement_descriptor: str(b.statement_descriptor) ?? null,
      statement_descriptor_suffix: null,
      status: pm ? 'requires_confirmation' : 'requires_payment_method',
      transfer_group: null,
    },
    // Versions before 2024-06-20 show a defaulted capture_method as `automatic` (versions/gates/).
    b.capture_method === undefined ? { capture_method_defaulted: true } : undefined,
    id,
  );
  store.event('payment_intent.created', pi, { idempotencyKey });
  if (bool(b.confirm, 'confirm')) return confirmPaymentIntent(store, pi.id, {}, idempotencyKey);
  return pi;
}

export function updatePaymentIntent(store: StripeStore, id: string, b: FormObject) {
  const pi = store.find('payment_intent', id);
  if (['succeeded', 'canceled'].includes(pi.status as string)) {
    throw invalid(
      `This PaymentIntent's status is ${String(pi.status)}, which does not allow updates.`,
      undefined,
      'payment_intent_unexpected_state',
    );
  }
  const changes: Record<string, unknown> = {};
  const amount = int(b.amount, 'amount', { min: 1 });
  if (amount !== undefined) changes.amount = amount;
  if (str(b.description) !== undefined) changes.description = str(b.description);
  if (b.metadata !== undefined) changes.metadata = mergeMetadata(pi.metadata, b.metadata);
  if (str(b.customer)) changes.customer = store.find('customer', str(b.customer)!, 'customer').id;
  if (str(b.payment_method)) {
    changes.payment_method = resolvePaymentMethod(store, str(b.payment_method)!).id;
    changes.status = 'requires_confirmation';
  }
  return store.update(id, changes);
}

export function confirmPaymentIntent(store: StripeStore, id: string, b: FormObject, idempotencyKey?: string) {
  const pi = store.find('payment_intent', id);
  if (!['requires_confirmation', 'requires_payment_method'].includes(pi.status as string)) {
    throw invalid(
      `This PaymentIntent's status is ${String(pi.status)}, which does not allow confirmation.`,
      undefined,
      'payment_intent_unexpected_state',
    );
  }
  const pmId = str(b.payment_method)
    ? resolvePaymentMethod(store, str(b.payment_method)!).id
    : (pi.payment_method as string | null);
  if (!pmId) {
    throw invalid(
      "You cannot confirm this PaymentIntent because it's missing a payment method.",
      undefined,
      'payment_intent_unexpected_state',
    );
  }
  const pmEntry = store.state.objects[pmId]!;
  const outcome = cardOutcome(String(pmEntry.hidden?.number ?? ''))!;
  const decline = outcome.decline;
  const manual = pi.capture_method === 'manual';
  const charge = store.insert('charge', chargeShape(pi, pmEntry.data, decline));
  if (decline) {
    const error = {
      ...cardError(decline),
      charge: charge.id,
      doc_url: declineDocUrl(decline.code),
      payment_method: pmEntry.data,
    };
    const failed = store.update(pi.id, {
      payment_method: null,
      status: 'requires_payment_method',
      latest_charge: charge.id,
      last_payment_error: error,
    });
    store.event('charge.failed', charge, { idempotencyKey });
    store.event('payment_intent.payment_failed', failed, { idempotencyKey });
    throw new StripeError(402, { ...error, payment_intent: failed });
  }
  const done = store.update(pi.id, {
    payment_method: pmId,
    status: manual ? 'requires_capture' : 'succeeded',
    amount_received: manual ? 0 : pi.amount,
    amount_capturable: manual ? pi.amount : 0,
    latest_charge: charge.id,
    last_payment_error: null,
  });
  store.event('charge.succeeded', charge, { idempotencyKey });
  store.event(manual ? 'payment_intent.amount_capturable_updated' : 'payment_intent.succeeded', done, {
    idempotencyKey,
  });
  if (!manual) store.intentSucceeded(done);
  return store.find('payment_intent', pi.id);
}

export function capturePaymentIntent(store: StripeStore, id: string, b: FormObject = {}) {
  const pi = store.find('payment_intent', id);
  if (pi.status !== 'requires_capture') {
    throw invalid(
      `This PaymentIntent could not be captured because it has a status of ${String(pi.status)}.`,
      undefined,
      'payment_intent_unexpected_state',
    );
  }
  const amount = int(b.amount_to_capture, 'amount_to_capture', { min: 1 }) ?? (pi.amount as number);
  if (amount > (pi.amount as number)) {
    throw invalid('The amount to capture cannot exceed the amount capturable.', 'amount_to_capture');
  }
  if (pi.latest_charge) {
    const charge = store.update(pi.latest_charge as string, { captured: true, amount_captured: amount });
    store.event('charge.captured', charge);
  }
  const done = store.update(id, { status: 'succeeded', amount_received: amount, amount_capturable: 0 });
  store.event('payment_intent.succeeded', done);
  return done;
}

export function cancelPaymentIntent(store: StripeStore, id: string, b: FormObject) {
  const pi = store.find('payment_intent', id);
  if (['succeeded', 'canceled'].includes(pi.status as string)) {
    throw invalid(
      `You cannot cancel this PaymentIntent because it has a status of ${String(pi.status)}.`,
      undefined,
      'payment_intent_unexpected_state',
    );
  }
  const done = store.update(id, {
    status: 'canceled',
    canceled_at: now(),
    cancellation_reason:
      oneOf(b.cancellation_reason, 'cancellation_reason', [
        'abandoned',
        'duplicate',
        'fraudulent',
        'requested_by_customer',
      ] as const) ?? null,
  });
  store.event('payment_intent.canceled', done);
  return done;
}

export function listPaymentIntents(store: StripeStore, q: URLSearchParams) {
  return store.list(
    'payment_intent',
    q,
    '/v1/payment_intents',
    (p) => !q.get('customer') || p.customer === q.get('customer'),
  );
}
