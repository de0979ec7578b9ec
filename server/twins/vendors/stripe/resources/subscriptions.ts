/**
 * Subscriptions (`/v1/subscriptions`), with trials.
 *
 * Time does not pass in a twin: a subscription's first invoice is made and paid (or left open) when it is
 * created, and no later period is ever billed (Stripe's test clocks are not simulated). Prorations are not
 * computed: changing a subscription's items changes what the next invoice would bill, and nothing else.
 */
import { StripeError, invalid } from '../errors.ts';
import {
  arr,
  bool,
  int,
  mergeMetadata,
  metadata,
  missingParam,
  obj,
  oneOf,
  required,
  str,
  type FormObject,
} from '../params.ts';
import { DAY, now, previousOf, type StripeObject, type StripeStore } from '../store.ts';
import { recomputeInvoice, storedLines, subscriptionItemLine } from './invoice-lines.ts';
import { chargeInvoice, finalizeInvoice, invoiceShape } from './invoices.ts';
import { assertChargeable } from './payment-methods.ts';
import {
  insertSubscriptionItem,
  itemParams,
  subscriptionItems,
  syncSubscriptionItems,
  updateSubscriptionItems,
} from './subscription-items.ts';

/** `ts` moved on by `count` intervals, months clamped to the month's last day as Stripe does. */
export function addInterval(ts: number, interval: string, count: number): number {
  if (interval === 'day') return ts + count * DAY;
  if (interval === 'week') return ts + count * 7 * DAY;
  const d = new Date(ts * 1000);
  const months = interval === 'year' ? 12 * count : count;
  const target = new Date(
    Date.UTC(
      d.getUTCFullYear(),
      d.getUTCMonth() + months,
      1,
      d.getUTCHours(),
      d.getUTCMinutes(),
      d.getUTCSeconds(),
    ),
  );
  const lastDay = new Date(Date.UTC(target.getUTCFullYear(), target.getUTCMonth() + 1, 0)).getUTCDate();
  target.setUTCDate(Math.min(d.getUTCDate(), lastDay));
  return Math.floor(target.getTime() / 1000);
}

/** When a trial asked for by `trial_end`, `trial_period_days` or `trial_from_plan` ends, or undefined. */
function trialEndOf(b: FormObject, prices: StripeObject[], start: number): number | undefined {
  const end = b.trial_end;
  if (end === 'now') return undefined;
  const at = int(end, 'trial_end');
  if (at !== undefined) {
    if (at <= start) throw invalid('Invalid timestamp: must be in the future.', 'trial_end');
    return at;
  }
  const days = int(b.trial_period_days, 'trial_period_days');
  if (days !== undefined) return days > 0 ? start + days * DAY : undefined;
  if (bool(b.trial_from_plan, 'trial_from_plan')) {
    const planDays = prices
      .map((p) => (p.recurring as { trial_period_days?: number | null }).trial_period_days ?? 0)
      .reduce((a, d) => Math.max(a, d), 0);
    return planDays > 0 ? start + planDays * DAY : undefined;
  }
  return undefined;
}

export function createSubscription(store: StripeStore, b: FormObject, idempotencyKey?: string) {
  const customer = store.find('customer', required(b.customer, 'customer'), 'customer');
  const rawItems = arr(b.items);
  if (!rawItems.length) missingParam('items');
  const items = itemParams(store, rawItems);
  const currency = items[0]!.price.currency as string;
  const collection =
    oneOf(b.collection_method, 'collection_method', ['charge_automatically', 'send_invoice'] as const) ??
    'charge_automatically';
  const daysUntilDue = int(b.days_until_due, 'days_until_due');
  if (collection === 'send_invoice' && daysUntilDue === undefined) {
    missingParam('days_until_due');
  }
  const behavior =
    oneOf(b.payment_behavior, 'payment_behavior', [
      'allow_incomplete',
      'default_incomplete',
      'error_if_incomplete',
      'pending_if_incomplete',
    ] as const) ?? 'allow_incomplete';
  const pmParam = str(b.default_payment_method);
  if (pmParam) {
    const pm = store.find('payment_method', pmParam, 'default_payment_method');
    if (pm.customer !== customer.id) {
      throw invalid(
        `The customer does not have a payment method with the ID ${pmParam}. The payment method must be attached to the customer.`,
        'default_payment_method',
        'resource_missing',
      );
    }
  }
  const start = now();
  const trialEnd = trialEndOf(
    b,
    items.map((i) => i.price),
    start,
  );
  const first = items[0]!.price.recurring as { interval: string; interval_count: number };
  const periodEnd = trialEnd ?? addInterval(start, first.interval, first.interval_count);
  const chargeNow = !trialEnd && collection === 'charge_automatically';
  const pm =
    pmParam ??
    (customer.invoice_settings as { default_payment_method?: string | null }).default_payment_method ??
    undefined;
  // `error_if_incomplete`: Stripe refuses the subscription, and creates nothing, when it cannot be paid now.
  if (chargeNow && behavior === 'error_if_incomplete') {
    if (!pm) {
      throw invalid(
        'This customer has no attached payment source or default payment method. Please consider adding a default payment method.',
        undefined,
        'resource_missing',
      );
    }
    assertChargeable(store, pm);
  }
  const cancelAtPeriodEnd = bool(b.cancel_at_period_end, 'cancel_at_period_end') ?? false;
  const cancelAt = int(b.cancel_at, 'cancel_at');
  const sub = store.insert('subscription', {
    application: null,
    application_fee_percent: null,
    automatic_tax: { disabled_reason: null, enabled: false, liability: null },
    billing_cycle_anchor: periodEnd === trialEnd ? trialEnd : start,
    billing_cycle_anchor_config: null,
    billing_mode: { flexible: null, type: 'classic' },
    billing_schedules: [],
    billing_thresholds: null,
    cancel_at: cancelAt ?? (cancelAtPeriodEnd ? periodEnd : null),
    cancel_at_period_end: cancelAtPeriodEnd,
    canceled_at: null,
    cancellation_details: { comment: null, feedback: null, feedback_option: null, reason: null },
    collection_method: collection,
    currency,
    customer: customer.id,
    customer_account: null,
    days_until_due: daysUntilDue ?? null,
    default_payment_method: pmParam ?? null,
    default_source: null,
    default_tax_rates: [],
    description: str(b.description) ?? null,
    discounts: [],
    ended_at: null,
    invoice_settings: {
      account_tax_ids: null,
      custom_fields: null,
      description: null,
      footer: null,
      issuer: { type: 'self' },
    },
    items: { object: 'list', data: [], has_more: false, total_count: 0, url: '' },
    latest_invoice: null,
    managed_payments: null,
    metadata: metadata(b.metadata),
    next_pending_invoice_item_invoice: null,
    on_behalf_of: null,
    pause_collection: null,
    payment_settings: {
      payment_method_options: null,
      payment_method_types: null,
      save_default_payment_method: 'off',
    },
    pending_invoice_item_interval: null,
    pending_setup_intent: null,
    pending_update: null,
    schedule: null,
    start_date: start,
    status: 'incomplete',
    test_clock: null,
    transfer_data: null,
    trial_end: trialEnd ?? null,
    trial_settings: {
      end_behavior: { billing_cycle_anchor: null, missing_payment_method: 'create_invoice' },
    },
    trial_start: trialEnd ? start : null,
  });
  store.hidden(sub.id).creating = true;
  for (const { price, quantity, metadata: md } of items) {
    insertSubscriptionItem(store, sub.id, price, quantity, md, { start, end: periodEnd });
  }
  syncSubscriptionItems(store, sub.id);
  const invoice = firstInvoice(
    store,
    sub.id,
    customer,
    { start, end: periodEnd },
    !!trialEnd,
    idempotencyKey,
  );
  store.update(sub.id, { latest_invoice: invoice.id });
  // Paid before the subscription is announced, so customer.subscription.created carries the outcome.
  if (chargeNow && invoice.status === 'open' && behavior !== 'default_incomplete' && pm) {
    try {
      chargeInvoice(store, invoice, pm, idempotencyKey);
    } catch (error) {
      // allow_incomplete: the subscription stays `incomplete` with its open invoice, as on Stripe.
      if (!(error instanceof StripeError)) throw error;
    }
  }
  const paid = store.find('invoice', invoice.id).status === 'paid';
  const status = trialEnd ? 'trialing' : collection === 'send_invoice' || paid ? 'active' : 'incomplete';
  const created = store.update(sub.id, { status });
  delete store.hidden(sub.id).creating;
  store.event('customer.subscription.created', created, { idempotencyKey });
  return created;
}

/** The subscription's first invoice: its items for the first period ($0 in a trial), finalized. */
function firstInvoice(
  store: StripeStore,
  subscription: string,
  customer: StripeObject,
  period: { start: number; end: number },
  trial: boolean,
  idempotencyKey?: string,
): StripeObject {
  const sub = store.find('subscription', subscription);
  const invoice = store.insert(
    'invoice',
    invoiceShape(customer, {
      auto_advance: true,
      billing_reason: 'subscription_create',
      collection_method: sub.collection_method,
      currency: sub.currency,
      parent: {
        quote_details: null,
        subscription_details: { metadata: structuredClone(sub.metadata), subscription },
        type: 'subscription_details',
      },
      period_end: period.start,
      period_start: period.start,
    }),
    { days_until_due: sub.days_until_due },
  );
  const lines = storedLines(store, invoice.id);
  for (const item of subscriptionItems(store, subscription)) {
    lines.push(subscriptionItemLine(store, invoice.id, subscription, item, period, trial));
  }
  const created = recomputeInvoice(store, invoice.id);
  store.event('invoice.created', created, { idempotencyKey });
  return finalizeInvoice(store, invoice.id, idempotencyKey);
}

export function updateSubscription(store: StripeStore, id: string, b: FormObject, idempotencyKey?: string) {
  const sub = store.find('subscription', id);
  if (sub.status === 'canceled') {
    const allowed = ['metadata', 'cancellation_details', 'expand'];
    const other = Object.keys(b).find((k) => !allowed.includes(k));
    if (other) {
      throw invalid(
        'A canceled subscription can only update its cancellation_details and metadata.',
        other,
        'resource_missing',
      );
    }
  }
  const changes: Record<string, unknown> = {};
  if (b.metadata !== undefined) changes.metadata = mergeMetadata(sub.metadata, b.metadata);
  if (str(b.description) !== undefined) changes.description = str(b.description) || null;
  const periodEnd = subscriptionItems(store, id)[0]?.current_period_end as number | undefined;
  const cancelAtPeriodEnd = bool(b.cancel_at_period_end, 'cancel_at_period_end');
  if (cancelAtPeriodEnd !== undefined) {
    changes.cancel_at_period_end = cancelAtPeriodEnd;
    changes.cancel_at = cancelAtPeriodEnd ? (periodEnd ?? null) : null;
    changes.canceled_at = cancelAtPeriodEnd ? now() : null;
    changes.cancellation_details = {
      ...(sub.cancellation_details as object),
      reason: cancelAtPeriodEnd ? 'cancellation_requested' : null,
    };
  }
  if (b.cancel_at !== undefined) {
    const at = b.cancel_at === '' ? null : int(b.cancel_at, 'cancel_at')!;
    changes.cancel_at = at;
    changes.cancel_at_period_end = false;
  }
  const details = obj(b.cancellation_details);
  if (details) {
    changes.cancellation_details = {
      ...((changes.cancellation_details ?? sub.cancellation_details) as object),
      ...(str(details.comment) !== undefined ? { comment: str(details.comment) || null } : {}),
      ...(str(details.feedback) !== undefined ? { feedback: str(details.feedback) || null } : {}),
    };
  }
  if (str(b.default_payment_method) !== undefined) {
    const pm = str(b.default_payment_method)!;
    if (pm && store.find('payment_method', pm, 'default_payment_method').customer !== sub.customer) {
      throw invalid(
        `The customer does not have a payment method with the ID ${pm}. The payment method must be attached to the customer.`,
        'default_payment_method',
        'resource_missing',
      );
    }
    changes.default_payment_method = pm || null;
  }
  if (b.trial_end === 'now' && sub.status === 'trialing') {
    changes.trial_end = now();
    changes.status = 'active';
  } else if (b.trial_end !== undefined && b.trial_end !== 'now') {
    const at = int(b.trial_end, 'trial_end')!;
    if (at <= now()) throw invalid('Invalid timestamp: must be in the future.', 'trial_end');
    changes.trial_end = at;
    if (sub.status === 'active' || sub.status === 'trialing') changes.status = 'trialing';
    for (const item of subscriptionItems(store, id)) store.update(item.id, { current_period_end: at });
  }
  const rawItems = arr(b.items);
  if (rawItems.length) updateSubscriptionItems(store, id, rawItems, sub.currency as string);
  const updated = store.update(id, changes);
  const synced = rawItems.length ? syncSubscriptionItems(store, id) : updated;
  const previous = previousOf(sub, { ...changes, ...(rawItems.length ? { items: synced.items } : {}) });
  store.event('customer.subscription.updated', synced, { idempotencyKey }, previous);
  return synced;
}

export function cancelSubscription(store: StripeStore, id: string, b: FormObject, idempotencyKey?: string) {
  const sub = store.find('subscription', id);
  if (sub.status === 'canceled') {
    throw invalid(`No such subscription: '${id}'`, undefined, 'resource_missing');
  }
  const details = obj(b.cancellation_details);
  const at = now();
  const canceled = store.update(id, {
    status: 'canceled',
    canceled_at: at,
    ended_at: at,
    cancel_at: null,
    cancel_at_period_end: false,
    cancellation_details: {
      comment: str(details?.comment) ?? null,
      feedback: str(details?.feedback) ?? null,
      feedback_option: null,
      reason: 'cancellation_requested',
    },
  });
  store.event('customer.subscription.deleted', canceled, { idempotencyKey });
  return canceled;
}

export function listSubscriptions(store: StripeStore, q: URLSearchParams) {
  const customer = q.get('customer');
  const price = q.get('price');
  const status = q.get('status');
  const collection = q.get('collection_method');
  const statuses = [
    'active',
    'all',
    'canceled',
    'ended',
    'incomplete',
    'incomplete_expired',
    'past_due',
    'paused',
    'trialing',
    'unpaid',
  ];
  if (status && !statuses.includes(status))
    throw invalid(`Invalid status: must be one of ${statuses.join(', ')}`, 'status');
  return store.list(
    'subscription',
    q,
    '/v1/subscriptions',
    (s) =>
      (!customer || s.customer === customer) &&
      (!collection || s.collection_method === collection) &&
      (!price || subscriptionItems(store, s.id).some((i) => (i.price as StripeObject).id === price)) &&
      (status === 'all'
        ? true
        : status === 'ended'
          ? s.status === 'canceled' || s.status === 'incomplete_expired'
          : status
            ? s.status === status
            : s.status !== 'canceled' && s.status !== 'incomplete_expired'),
  );
}
