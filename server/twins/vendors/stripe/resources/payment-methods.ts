/** Payment methods (`/v1/payment_methods`): cards only, from a number, a test token or a magic id (cards.ts). */
import { ownValue } from '../../../runtime/safe-json.ts';
import { cardOutcome, magicCardNumber } from '../cards.ts';
import { StripeError, invalid, missing } from '../errors.ts';
import { int, metadata, missingParam, obj, required, str, type FormObject } from '../params.ts';
import type { StripeObject, StripeStore } from '../store.ts';
import { address } from './customers.ts';

/** A `billing_details` as Stripe returns it: every field present, null when not collected. */
export function billingDetails(given: FormObject | Record<string, unknown> = {}) {
  const a = (given.address ?? null) as Record<string, unknown> | null;
  return {
    address: a && typeof a === 'object' ? { ...address(), ...a } : null,
    email: typeof given.email === 'string' ? given.email : null,
    name: typeof given.name === 'string' ? given.name : null,
    phone: typeof given.phone === 'string' ? given.phone : null,
    tax_id: null,
  };
}

/** A payment method from card details, a test token, or a magic `pm_card_*` id (which makes a new one). */
export function createPaymentMethod(store: StripeStore, b: FormObject) {
  const type = str(b.type) ?? 'card';
  if (type !== 'card') throw invalid(`Invalid type: only 'card' is supported by this twin.`, 'type');
  const card = obj(b.card) ?? {};
  const token = str(card.token);
  const number = token ? magicCardNumber(token) : str(card.number)?.replace(/\s/g, '');
  if (token && !number) throw missing('token', token, 'card[token]');
  if (!number) missingParam('card[number]');
  return paymentMethodFor(store, number, {
    exp_month: int(card.exp_month, 'card[exp_month]', { min: 1 }) ?? 12,
    exp_year: int(card.exp_year, 'card[exp_year]') ?? new Date().getFullYear() + 3,
    billing_details: obj(b.billing_details) ?? {},
    metadata: metadata(b.metadata),
  });
}

export function paymentMethodFor(store: StripeStore, number: string, extra: Record<string, unknown> = {}) {
  const outcome = cardOutcome(number);
  if (!outcome) {
    throw new StripeError(402, {
      type: 'card_error',
      code: 'incorrect_number',
      message: 'Your card number is incorrect.',
      param: 'card[number]',
    });
  }
  const {
    exp_month = 12,
    exp_year = new Date().getFullYear() + 3,
    billing_details = {},
    metadata: md = {},
  } = extra;
  return store.insert(
    'payment_method',
    {
      allow_redisplay: 'unspecified',
      billing_details: billingDetails(billing_details as FormObject),
      card: {
        brand: outcome.brand,
        checks: { address_line1_check: null, address_postal_code_check: null, cvc_check: 'pass' },
        country: 'US',
        display_brand: outcome.brand.replace('amex', 'american_express'),
        exp_month,
        exp_year,
        fingerprint: Buffer.from(number).toString('base64url').slice(0, 16),
        funding: outcome.funding,
        generated_from: null,
        last4: number.slice(-4),
        networks: { available: [outcome.brand], preferred: null },
        regulated_status: 'unregulated',
        three_d_secure_usage: { supported: true },
        wallet: null,
      },
      customer: null,
      customer_account: null,
      metadata: md,
      type: 'card',
    },
    { number },
  );
}

/** Resolves a payment method param: an existing pm_..., or a magic id / token turned into a new one. */
export function resolvePaymentMethod(store: StripeStore, id: string, param = 'payment_method'): StripeObject {
  const magic = magicCardNumber(id);
  if (magic) return paymentMethodFor(store, magic);
  return store.find('payment_method', id, param);
}

/** The fields of the card error a declined charge gets that come from the decline itself. */
export function cardError(decline: { code: string; decline_code?: string; message: string }) {
  return {
    type: 'card_error',
    code: decline.code,
    ...(decline.decline_code ? { decline_code: decline.decline_code } : {}),
    message: decline.message,
  };
}

export const declineDocUrl = (code: string) =>
  `https://docs.stripe.com/error-codes/${code.replace(/_/g, '-')}`;

/** Throws the card error a charge on this payment method would get, and creates nothing. */
export function assertChargeable(store: StripeStore, pmId: string): void {
  const number = String(ownValue(store.state.objects, pmId)?.hidden?.number ?? '');
  const decline = cardOutcome(number)?.decline;
  if (decline) {
    throw new StripeError(402, {
      ...cardError(decline),
      doc_url: declineDocUrl(decline.code),
    });
  }
}

export function attachPaymentMethod(store: StripeStore, id: string, b: FormObject) {
  const customer = required(b.customer, 'customer');
  store.find('customer', customer, 'customer');
  const pm = resolvePaymentMethod(store, id, 'payment_method');
  if (pm.customer && pm.customer !== customer) {
    throw invalid(
      'This PaymentMethod is already attached to a different customer.',
      undefined,
      'payment_method_unexpected_state',
    );
  }
  const attached = store.update(pm.id, { customer });
  store.event('payment_method.attached', attached);
  return attached;
}

export function detachPaymentMethod(store: StripeStore, id: string) {
  const pm = store.find('payment_method', id);
  if (!pm.customer)
    throw invalid(
      'The payment method you provided is not attached to a customer.',
      undefined,
      'payment_method_unexpected_state',
    );
  const detached = store.update(id, { customer: null });
  store.event('payment_method.detached', detached);
  return detached;
}

export function listPaymentMethods(store: StripeStore, q: URLSearchParams) {
  const customer = q.get('customer');
  if (customer) store.find('customer', customer);
  return store.list('payment_method', q, '/v1/payment_methods', (p) => !customer || p.customer === customer);
}

/** `GET /v1/customers/{id}/payment_methods`. */
export function listCustomerPaymentMethods(store: StripeStore, id: string, q: URLSearchParams) {
  store.find('customer', id);
  return store.list('payment_method', q, `/v1/customers/${id}/payment_methods`, (p) => p.customer === id);
}
