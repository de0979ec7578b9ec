/**
 * Checkout Sessions on the twin: created through the API, paid on the twin's own hosted page
 * (checkout-page.ts) with a test card, which completes them as Stripe's page does: a payment intent in
 * `payment` mode, a customer, subscription and paid first invoice in `subscription` mode, and the
 * `checkout.session.completed` event.
 */
import { cardOutcome } from '../cards.ts';
import { invalid } from '../errors.ts';
import {
  arr,
  bool,
  int,
  listLimit,
  metadata,
  missingParam,
  obj,
  oneOf,
  str,
  type FormObject,
} from '../params.ts';
import { newId, now, type StripeObject, type StripeStore } from '../store.ts';
import { createCustomer } from './customers.ts';
import { confirmPaymentIntent, createPaymentIntent } from './payment-intents.ts';
import { assertChargeable, attachPaymentMethod, paymentMethodFor } from './payment-methods.ts';
import { resolvePrice } from './products.ts';
import { createSubscription } from './subscriptions.ts';

const HOUR = 3600;

/** What a person typed on the checkout page. */
export interface CardEntry {
  number: string;
  exp_month: number;
  exp_year: number;
  email?: string;
  name?: string;
}

function checkedUrl(value: unknown, param: string): string | null {
  const s = str(value as string | undefined);
  if (s === undefined) return null;
  let url: URL;
  try {
    url = new URL(s.replace(/\{CHECKOUT_SESSION_ID\}/g, 'x'));
  } catch {
    throw invalid('Not a valid URL', param, 'url_invalid');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw invalid('Not a valid URL', param, 'url_invalid');
  return s;
}

/**
 * `POST /v1/checkout/sessions`. `pageOrigin` is the origin the hosted page is reached on, as a browser
 * outside the sandbox sees it.
 */
export function createCheckoutSession(store: StripeStore, b: FormObject, pageOrigin: () => string) {
  const mode = oneOf(b.mode, 'mode', ['payment', 'setup', 'subscription'] as const);
  if (!mode) missingParam('mode');
  if (mode === 'setup')
    throw invalid('This twin supports Checkout in payment and subscription mode only.', 'mode');
  // 2026-10-28.endive names the hosted page `hosted_page`; older API versions said `hosted`.
  const uiMode =
    oneOf(b.ui_mode, 'ui_mode', ['elements', 'embedded_page', 'form', 'hosted', 'hosted_page'] as const) ??
    'hosted_page';
  if (uiMode !== 'hosted_page' && uiMode !== 'hosted') {
    throw invalid('This twin serves the hosted Checkout page only (ui_mode=hosted_page).', 'ui_mode');
  }
  const customerId = str(b.customer);
  const customerEmail = str(b.customer_email);
  if (customerId && customerEmail) {
    throw invalid(
      'You may only specify one of these parameters: customer, customer_email.',
      'customer_email',
    );
  }
  const customer = customerId ? store.find('customer', customerId, 'customer') : undefined;
  const successUrl = checkedUrl(b.success_url, 'success_url');
  const cancelUrl = checkedUrl(b.cancel_url, 'cancel_url');
  const rawItems = arr(b.line_items);
  if (!rawItems.length) missingParam('line_items');
  const created = now();
  const expiresAt = int(b.expires_at, 'expires_at') ?? created + 24 * HOUR;
  if (expiresAt < created + HOUR / 2 || expiresAt > created + 24 * HOUR) {
    throw invalid(
      'The `expires_at` timestamp must be between 30 minutes and 24 hours from now.',
      'expires_at',
    );
  }
  let currency: string | undefined;
  const items = rawItems.map((raw, index) => {
    const item = obj(raw) ?? {};
    const param = `line_items[${index}]`;
    const quantity = int(item.quantity, `${param}[quantity]`, { required: true, min: 1 })!;
    const price = resolvePrice(store, item.price, item.price_data, param);
    if (mode === 'payment' && price.type === 'recurring') {
      throw invalid(
        'You specified `payment` mode but passed a recurring price. Either switch to `subscription` mode or use only one-time prices.',
        param,
      );
    }
    if (currency && price.currency !== currency) {
      throw invalid('All line items must use the same currency.', `${param}[price]`);
    }
    currency = price.currency as string;
    const amount = ((price.unit_amount as number | null) ?? 0) * quantity;
    const product = store.lookup(String(price.product));
    return {
      id: newId('li'),
      object: 'item',
      adjustable_quantity: null,
      amount_discount: 0,
      amount_subtotal: amount,
      amount_tax: 0,
      amount_total: amount,
      currency: price.currency,
      description: (product?.name as string | undefined) ?? null,
      metadata: {},
      price: structuredClone(price),
      quantity,
    };
  });
  if (mode === 'subscription' && !items.some((i) => i.price.type === 'recurring')) {
    throw invalid(
      'You must provide at least one recurring price in `subscription` mode when using prices.',
      'line_items',
    );
  }
  const total = items.reduce((sum, i) => sum + i.amount_total, 0);
  const intentData = obj(b.payment_intent_data) ?? {};
  const subscriptionData = obj(b.subscription_data) ?? {};
  const trialDays = int(subscriptionData.trial_period_days, 'subscription_data[trial_period_days]', {
    min: 1,
  });
  const session = store.insert(
    'checkout.session',
    {
      adaptive_pricing: null,
      after_expiration: null,
      allow_promotion_codes: bool(b.allow_promotion_codes, 'allow_promotion_codes') ?? null,
      allowed_payment_method_types: null,
      amount_subtotal: total,
      amount_total: total,
      automatic_tax: { enabled: false, liability: null, provider: null, status: null },
      billing_address_collection: str(b.billing_address_collection) ?? null,
      cancel_url: cancelUrl,
      client_reference_id: str(b.client_reference_id) ?? null,
      client_secret: null,
      collected_information: null,
      consent: null,
      consent_collection: null,
      currency: currency ?? null,
      currency_conversion: null,
      custom_fields: [],
      custom_text: {
        after_submit: null,
        shipping_address: null,
        submit: null,
        terms_of_service_acceptance: null,
      },
      customer: customer?.id ?? null,
      customer_account: null,
      customer_creation: customer ? null : mode === 'payment' ? 'if_required' : 'always',
      customer_details: null,
      customer_email: customerEmail ?? null,
      discounts: [],
      expires_at: expiresAt,
      integration_identifier: null,
      invoice: null,
      invoice_creation:
        mode === 'payment'
          ? {
              enabled: false,
              invoice_data: {
                account_tax_ids: null,
                custom_fields: null,
                description: null,
                footer: null,
                issuer: null,
                metadata: {},
                rendering_options: null,
              },
            }
          : null,
      locale: str(b.locale) ?? null,
      managed_payments: null,
      metadata: metadata(b.metadata),
      mode,
      origin_context: null,
      payment_intent: null,
      payment_link: null,
      payment_method_collection: 'if_required',
      payment_method_configuration_details: null,
      payment_method_options: {},
      payment_method_types: ['card'],
      payment_status: total === 0 && mode === 'payment' ? 'no_payment_required' : 'unpaid',
      permissions: null,
      phone_number_collection: { enabled: false },
      recovered_from: null,
      saved_payment_method_options: null,
      setup_intent: null,
      shipping_address_collection: null,
      shipping_cost: null,
      shipping_options: [],
      status: 'open',
      submit_type: str(b.submit_type) ?? null,
      subscription: null,
      success_url: successUrl,
      total_details: { amount_discount: 0, amount_shipping: 0, amount_tax: 0 },
      ui_mode: 'hosted_page',
      url: null,
      wallet_options: null,
    },
    {
      line_items: items,
      payment_intent_data: {
        metadata: metadata(intentData.metadata),
        description: str(intentData.description),
      },
      subscription_data: {
        metadata: metadata(subscriptionData.metadata),
        description: str(subscriptionData.description),
        trial_period_days: trialDays,
      },
    },
  );
  // The page's address is known once the id is: the session's own path on the twin.
  const withUrl = store.update(session.id, { url: `${pageOrigin()}/c/pay/${session.id}` });
  return withUrl;
}

/** A session, expired first when its `expires_at` has passed (the twin has no clock of its own). */
export function retrieveCheckoutSession(store: StripeStore, id: string): StripeObject {
  const session = store.find('checkout.session', id);
  if (session.status === 'open' && (session.expires_at as number) <= now()) return expireNow(store, id);
  return session;
}

/** The trial a subscription-mode session starts (`subscription_data[trial_period_days]`), if any. */
export function checkoutTrialDays(store: StripeStore, id: string): number | undefined {
  return (store.hidden(id).subscription_data as { trial_period_days?: number } | undefined)
    ?.trial_period_days;
}

export function lineItemsList(store: StripeStore, id: string) {
  const items = (store.hidden(id).line_items ?? []) as StripeObject[];
  return {
    object: 'list',
    data: items.slice(0, 10),
    has_more: items.length > 10,
    url: `/v1/checkout/sessions/${id}/line_items`,
  };
}

export function listLineItems(store: StripeStore, id: string, q: URLSearchParams) {
  retrieveCheckoutSession(store, id);
  const items = (store.hidden(id).line_items ?? []) as StripeObject[];
  const limit = listLimit(q);
  let start = 0;
  const after = q.get('starting_after');
  if (after) {
    start = items.findIndex((i) => i.id === after) + 1;
    if (start === 0) throw invalid(`No such line item: '${after}'`, 'starting_after', 'resource_missing');
  }
  return {
    object: 'list',
    data: items.slice(start, start + limit),
    has_more: start + limit < items.length,
    url: `/v1/checkout/sessions/${id}/line_items`,
  };
}

export function listCheckoutSessions(store: StripeStore, q: URLSearchParams) {
  const filters = ['payment_intent', 'subscription', 'customer', 'status', 'payment_link'] as const;
  return store.list('checkout.session', q, '/v1/checkout/sessions', (s) =>
    filters.every((f) => q.get(f) === null || s[f] === q.get(f)),
  );
}

export function expireCheckoutSession(store: StripeStore, id: string) {
  const session = retrieveCheckoutSession(store, id);
  if (session.status !== 'open') {
    throw invalid(
      `Only Checkout Sessions with a status in ["open"] can be expired. This Checkout Session has a status of "${String(session.status)}".`,
      undefined,
      'checkout_session_unexpected_state',
    );
  }
  return expireNow(store, id);
}

function expireNow(store: StripeStore, id: string): StripeObject {
  const expired = store.update(id, { status: 'expired', url: null });
  store.event('checkout.session.expired', expired);
  return expired;
}

/**
 * Pays an open session with a card typed on the hosted page. A declining card throws Stripe's 402 card
 * error and leaves the session open (payment mode keeps its payment intent, with the failed attempt,
 * for the next try); success completes it and emits `checkout.session.completed`.
 */
export function completeCheckoutSession(store: StripeStore, id: string, card: CardEntry): StripeObject {
  const session = retrieveCheckoutSession(store, id);
  if (session.status !== 'open') {
    throw invalid(
      'This Checkout Session is no longer active.',
      undefined,
      'checkout_session_unexpected_state',
    );
  }
  const hidden = store.hidden(id);
  const existing = session.customer ? store.find('customer', String(session.customer)) : undefined;
  const email =
    (session.customer_email as string | null) ?? (existing?.email as string | null) ?? card.email ?? null;
  const name = card.name || null;
  const pm = paymentMethodFor(store, card.number, {
    exp_month: card.exp_month,
    exp_year: card.exp_year,
    billing_details: { email, name },
  });
  const changes: Record<string, unknown> = {
    customer_details: {
      address: null,
      business_name: null,
      email,
      individual_name: null,
      name,
      phone: null,
      tax_exempt: 'none',
      tax_ids: [],
    },
    status: 'complete',
    url: null,
  };
  if (session.mode === 'payment') {
    if ((session.amount_total as number) > 0) {
      let intentId = session.payment_intent as string | null;
      if (!intentId) {
        const data = hidden.payment_intent_data as {
          metadata: Record<string, string>;
          description?: string;
        };
        const pi = createPaymentIntent(store, {
          amount: String(session.amount_total),
          currency: String(session.currency),
          ...(existing ? { customer: existing.id } : {}),
          ...(data.description ? { description: data.description } : {}),
          metadata: data.metadata,
        });
        intentId = pi.id;
        store.update(id, { payment_intent: intentId });
      }
      // A decline throws here: the session stays open with its intent, as on Stripe's page.
      confirmPaymentIntent(store, intentId, { payment_method: pm.id });
      changes.payment_status = 'paid';
    }
  } else {
    // Stripe checks the card before it creates anything for a subscription.
    if (cardOutcome(card.number)?.decline) assertChargeable(store, pm.id);
    const customer =
      existing ?? createCustomer(store, { ...(email ? { email } : {}), ...(name ? { name } : {}) });
    attachPaymentMethod(store, pm.id, { customer: customer.id });
    const data = hidden.subscription_data as {
      metadata: Record<string, string>;
      description?: string;
      trial_period_days?: number;
    };
    const items = (hidden.line_items as Array<{ price: StripeObject; quantity: number }>).filter(
      (i) => i.price.type === 'recurring',
    );
    const subscription = createSubscription(store, {
      customer: customer.id,
      default_payment_method: pm.id,
      items: items.map((i) => ({ price: i.price.id, quantity: String(i.quantity) })),
      metadata: data.metadata,
      payment_behavior: 'error_if_incomplete',
      ...(data.description ? { description: data.description } : {}),
      ...(data.trial_period_days ? { trial_period_days: String(data.trial_period_days) } : {}),
    });
    changes.customer = customer.id;
    changes.subscription = subscription.id;
    changes.invoice = subscription.latest_invoice;
    changes.payment_status = subscription.status === 'trialing' ? 'no_payment_required' : 'paid';
  }
  const completed = store.update(id, changes);
  store.event('checkout.session.completed', completed);
  return completed;
}
