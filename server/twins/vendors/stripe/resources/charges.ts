/** Charges (`/v1/charges`): made by payment intents' confirmation attempts, read here. */
import type { StripeObject, StripeStore } from '../store.ts';

export function listCharges(store: StripeStore, q: URLSearchParams) {
  return store.list(
    'charge',
    q,
    '/v1/charges',
    (c) =>
      (!q.get('customer') || c.customer === q.get('customer')) &&
      (!q.get('payment_intent') || c.payment_intent === q.get('payment_intent')),
  );
}

/** A charge of a confirmation attempt with its payment method, as Stripe records it (failed or not). */
export function chargeShape(
  pi: StripeObject,
  pm: StripeObject,
  decline: { code: string; decline_code?: string; message: string } | undefined,
) {
  const card = pm.card as Record<string, unknown>;
  const manual = pi.capture_method === 'manual';
  return {
    amount: pi.amount,
    amount_captured: decline || manual ? 0 : pi.amount,
    amount_refunded: 0,
    application: null,
    application_fee: null,
    application_fee_amount: null,
    balance_transaction: null,
    billing_details: pm.billing_details,
    calculated_statement_descriptor: 'TWINBOX',
    captured: !decline && !manual,
    currency: pi.currency,
    customer: pi.customer,
    description: pi.description,
    disputed: false,
    failure_balance_transaction: null,
    failure_code: decline?.code ?? null,
    failure_message: decline?.message ?? null,
    fraud_details: {},
    metadata: pi.metadata,
    on_behalf_of: null,
    outcome: {
      advice_code: null,
      network_advice_code: null,
      network_decline_code: null,
      network_status: decline ? 'declined_by_network' : 'approved_by_network',
      reason: decline ? (decline.decline_code ?? decline.code) : null,
      risk_level: 'normal',
      seller_message: decline
        ? 'The bank did not return any further details with this decline.'
        : 'Payment complete.',
      type: decline ? 'issuer_declined' : 'authorized',
    },
    paid: !decline,
    payment_intent: pi.id,
    payment_method: pm.id,
    payment_method_details: {
      card: {
        amount_authorized: decline ? null : pi.amount,
        authorization_code: null,
        brand: card.brand,
        checks: card.checks,
        country: card.country,
        electronic_commerce_indicator: null,
        exp_month: card.exp_month,
        exp_year: card.exp_year,
        fingerprint: card.fingerprint,
        funding: card.funding,
        installments: null,
        last4: card.last4,
        mandate: null,
        network: card.brand,
        network_transaction_id: null,
        regulated_status: 'unregulated',
        three_d_secure: null,
        transaction_link_id: null,
        wallet: null,
      },
      type: 'card',
    },
    receipt_email: pi.receipt_email ?? null,
    receipt_number: null,
    receipt_url: null,
    refunded: false,
    review: null,
    shipping: null,
    source: null,
    source_transfer: null,
    statement_descriptor: null,
    statement_descriptor_suffix: null,
    status: decline ? 'failed' : 'succeeded',
    transfer_data: null,
    transfer_group: null,
  };
}
