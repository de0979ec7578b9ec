/**
 * Invoices (`/v1/invoices`): drafts, finalized (open) with a payment intent to pay them through, paid,
 * or void. Time does not pass in a twin: nothing is billed, dunned or finalized on a schedule.
 */
import { StripeError, invalid } from '../errors.ts';
import {
  bool,
  currencyOf,
  int,
  mergeMetadata,
  metadata,
  oneOf,
  required,
  str,
  type FormObject,
} from '../params.ts';
import { DAY, now, previousOf, type StripeObject, type StripeStore } from '../store.ts';
import { invoiceItemLine, recomputeInvoice, storedLines } from './invoice-lines.ts';
import { cancelPaymentIntent, confirmPaymentIntent, createPaymentIntent } from './payment-intents.ts';
import { resolvePaymentMethod } from './payment-methods.ts';

/**
 * An open invoice's `confirmation_secret` (sent only when expanded): the client secret of the payment
 * intent it was finalized with, which an app confirms to pay it.
 */
export function confirmationSecret(
  store: StripeStore,
  invoice: Record<string, unknown>,
): { client_secret: string; type: string } | null {
  const intentId = typeof invoice.id === 'string' ? store.hidden(invoice.id).payment_intent : undefined;
  const intent = typeof intentId === 'string' ? store.lookup(intentId) : undefined;
  if (invoice.status !== 'open' || !intent) return null;
  return { client_secret: String(intent.client_secret), type: 'payment_intent' };
}

/** The payment intent an invoice is paid through, made when it is finalized (as Stripe does). */
function invoiceIntent(store: StripeStore, invoice: StripeObject, idempotencyKey?: string): StripeObject {
  const hidden = store.hidden(invoice.id);
  const existing =
    typeof hidden.payment_intent === 'string' ? store.lookup(hidden.payment_intent) : undefined;
  if (existing && ['requires_payment_method', 'requires_confirmation'].includes(String(existing.status))) {
    return existing;
  }
  const intent = createPaymentIntent(
    store,
    {
      amount: String(invoice.amount_remaining),
      currency: String(invoice.currency),
      customer: String(invoice.customer),
      description: invoice.number ? `Invoice ${String(invoice.number)}` : 'Invoice',
    },
    idempotencyKey,
  );
  hidden.payment_intent = intent.id;
  store.hidden(intent.id).invoice = invoice.id;
  return intent;
}

/** An invoice's payment intent may be confirmed by the app itself (its `confirmation_secret`): that pays it. */
export function payInvoiceOfIntent(store: StripeStore, intent: StripeObject): void {
  const invoiceId = store.hidden(intent.id).invoice as string | undefined;
  const invoice = invoiceId ? store.lookup(invoiceId) : undefined;
  if (invoice?.status === 'open') markInvoicePaid(store, invoice.id, intent.amount as number);
}

export function invoiceShape(customer: StripeObject, opts: Record<string, unknown>): Record<string, unknown> {
  const created = now();
  return {
    account_country: 'US',
    account_name: 'Twinbox test account',
    account_tax_ids: null,
    amount_due: 0,
    amount_overpaid: 0,
    amount_paid: 0,
    amount_remaining: 0,
    amount_shipping: 0,
    application: null,
    attempt_count: 0,
    attempted: false,
    auto_advance: false,
    automatic_tax: { disabled_reason: null, enabled: false, liability: null, provider: null, status: null },
    automatically_finalizes_at: null,
    billing_reason: 'manual',
    collection_method: 'charge_automatically',
    currency: (customer.currency as string | null) ?? 'usd',
    custom_fields: null,
    customer: customer.id,
    customer_account: null,
    customer_address: customer.address ?? null,
    customer_email: customer.email ?? null,
    customer_name: customer.name ?? null,
    customer_phone: customer.phone ?? null,
    customer_shipping: null,
    customer_tax_exempt: 'none',
    customer_tax_ids: [],
    default_payment_method: null,
    default_source: null,
    default_tax_rates: [],
    description: null,
    discounts: [],
    due_date: null,
    effective_at: null,
    ending_balance: null,
    footer: null,
    from_invoice: null,
    hosted_invoice_url: null,
    invoice_pdf: null,
    issuer: { type: 'self' },
    last_finalization_error: null,
    latest_revision: null,
    lines: { object: 'list', data: [], has_more: false, total_count: 0, url: '' },
    metadata: {},
    next_payment_attempt: null,
    number: null,
    on_behalf_of: null,
    parent: null,
    payment_settings: { default_mandate: null, payment_method_options: null, payment_method_types: null },
    period_end: created,
    period_start: created,
    post_payment_credit_notes_amount: 0,
    pre_payment_credit_notes_amount: 0,
    receipt_number: null,
    rendering: null,
    shipping_cost: null,
    shipping_details: null,
    starting_balance: 0,
    statement_descriptor: null,
    status: 'draft',
    status_transitions: {
      finalized_at: null,
      marked_uncollectible_at: null,
      paid_at: null,
      voided_at: null,
    },
    subtotal: 0,
    subtotal_excluding_tax: 0,
    test_clock: null,
    total: 0,
    total_discount_amounts: [],
    total_excluding_tax: 0,
    total_pretax_credit_amounts: [],
    total_taxes: [],
    webhooks_delivered_at: null,
    ...opts,
  };
}

export function createInvoice(store: StripeStore, b: FormObject, idempotencyKey?: string) {
  const customer = store.find('customer', required(b.customer, 'customer'), 'customer');
  const collection =
    oneOf(b.collection_method, 'collection_method', ['charge_automatically', 'send_invoice'] as const) ??
    'charge_automatically';
  const daysUntilDue = int(b.days_until_due, 'days_until_due');
  const dueDate = int(b.due_date, 'due_date');
  if (collection === 'send_invoice' && daysUntilDue === undefined && dueDate === undefined) {
    throw invalid(
      'Invoices with `collection_method=send_invoice` need `days_until_due` or `due_date`.',
      'days_until_due',
    );
  }
  const pmId = str(b.default_payment_method);
  if (pmId) store.find('payment_method', pmId, 'default_payment_method');
  const behavior =
    oneOf(b.pending_invoice_items_behavior, 'pending_invoice_items_behavior', [
      'exclude',
      'include',
    ] as const) ?? 'exclude';
  const currency = str(b.currency) ? currencyOf(b.currency) : undefined;
  const invoice = store.insert(
    'invoice',
    invoiceShape(customer, {
      auto_advance: bool(b.auto_advance, 'auto_advance') ?? false,
      collection_method: collection,
      ...(currency ? { currency } : {}),
      default_payment_method: pmId ?? null,
      description: str(b.description) ?? null,
      footer: str(b.footer) ?? null,
      metadata: metadata(b.metadata),
    }),
    { days_until_due: daysUntilDue ?? null, due_date: dueDate ?? null },
  );
  if (behavior === 'include') {
    for (const entry of Object.values(store.state.objects)) {
      const ii = entry.data;
      if (ii.object === 'invoiceitem' && !ii.deleted && ii.customer === customer.id && ii.invoice === null) {
        store.update(ii.id, { invoice: invoice.id });
        storedLines(store, invoice.id).push(invoiceItemLine(store.find('invoiceitem', ii.id), invoice.id));
      }
    }
  }
  const created = recomputeInvoice(store, invoice.id);
  store.event('invoice.created', created, { idempotencyKey });
  return created;
}

export function updateInvoice(store: StripeStore, id: string, b: FormObject) {
  const invoice = store.find('invoice', id);
  const changes: Record<string, unknown> = {};
  if (b.metadata !== undefined) changes.metadata = mergeMetadata(invoice.metadata, b.metadata);
  if (str(b.description) !== undefined) changes.description = str(b.description) || null;
  const draftOnly = ['collection_method', 'days_until_due', 'due_date', 'default_payment_method', 'footer'];
  const asked = draftOnly.filter((k) => b[k] !== undefined);
  if (asked.length && invoice.status !== 'draft') {
    throw invalid(
      `Finalized invoices can't be updated in this way (${asked.join(', ')}).`,
      asked[0],
      'invoice_not_editable',
    );
  }
  if (b.collection_method !== undefined) {
    changes.collection_method = oneOf(b.collection_method, 'collection_method', [
      'charge_automatically',
      'send_invoice',
    ] as const);
  }
  if (str(b.footer) !== undefined) changes.footer = str(b.footer) || null;
  if (str(b.default_payment_method) !== undefined) {
    const pm = str(b.default_payment_method)!;
    if (pm) store.find('payment_method', pm, 'default_payment_method');
    changes.default_payment_method = pm || null;
  }
  const days = int(b.days_until_due, 'days_until_due');
  if (days !== undefined) store.hidden(id).days_until_due = days;
  const auto = bool(b.auto_advance, 'auto_advance');
  if (auto !== undefined) changes.auto_advance = auto;
  const updated = store.update(id, changes);
  store.event('invoice.updated', updated, undefined, previousOf(invoice, changes));
  return updated;
}

export function finalizeInvoice(store: StripeStore, id: string, idempotencyKey?: string) {
  const invoice = store.find('invoice', id);
  if (invoice.status !== 'draft') {
    throw invalid(
      "This invoice is already finalized, you can't re-finalize a non-draft invoice.",
      undefined,
      'invoice_not_editable',
    );
  }
  const customer = store.lookup(String(invoice.customer));
  const sequence = (customer?.next_invoice_sequence as number | undefined) ?? 1;
  if (customer) store.update(customer.id, { next_invoice_sequence: sequence + 1 });
  const at = now();
  const hidden = store.hidden(id);
  const dueDate =
    invoice.collection_method === 'send_invoice'
      ? ((hidden.due_date as number | null) ?? at + ((hidden.days_until_due as number | null) ?? 30) * DAY)
      : null;
  store.update(id, {
    number: `${String(customer?.invoice_prefix ?? 'TWIN')}-${String(sequence).padStart(4, '0')}`,
    status: 'open',
    due_date: dueDate,
    effective_at: at,
    ending_balance: 0,
    status_transitions: { ...(invoice.status_transitions as object), finalized_at: at },
    webhooks_delivered_at: at,
  });
  const finalized = recomputeInvoice(store, id);
  store.event('invoice.finalized', finalized, { idempotencyKey });
  if ((finalized.amount_due as number) === 0) return markInvoicePaid(store, id, 0, idempotencyKey);
  if (finalized.collection_method === 'charge_automatically') invoiceIntent(store, finalized, idempotencyKey);
  return finalized;
}

function markInvoicePaid(
  store: StripeStore,
  id: string,
  amount: number,
  idempotencyKey?: string,
): StripeObject {
  const invoice = store.find('invoice', id);
  const at = now();
  const paid = store.update(id, {
    status: 'paid',
    amount_paid: amount,
    amount_remaining: 0,
    attempted: amount > 0 || invoice.attempted === true,
    status_transitions: { ...(invoice.status_transitions as object), paid_at: at },
  });
  store.event('invoice.paid', paid, { idempotencyKey });
  store.event('invoice.payment_succeeded', paid, { idempotencyKey });
  const subscription = subscriptionOf(store, paid);
  const activated =
    subscription && ['incomplete', 'past_due', 'unpaid'].includes(String(subscription.status));
  // A subscription whose first invoice is paid while it is created gets its status from createSubscription.
  if (subscription && activated && !store.hidden(subscription.id).creating) {
    const active = store.update(subscription.id, { status: 'active' });
    store.event('customer.subscription.updated', active, { idempotencyKey }, { status: subscription.status });
  }
  return paid;
}

function subscriptionOf(store: StripeStore, invoice: StripeObject): StripeObject | undefined {
  const parent = invoice.parent as { subscription_details?: { subscription?: string } } | null;
  const id = parent?.subscription_details?.subscription;
  return id ? store.lookup(id) : undefined;
}

/** The payment method a charge for this invoice uses: given, the invoice's, the subscription's or the customer's. */
function invoicePaymentMethod(store: StripeStore, invoice: StripeObject, given?: string): string | undefined {
  if (given) return resolvePaymentMethod(store, given).id;
  const subscription = subscriptionOf(store, invoice);
  const customer = store.lookup(String(invoice.customer));
  return (
    (invoice.default_payment_method as string | null) ??
    (subscription?.default_payment_method as string | null) ??
    ((customer?.invoice_settings as { default_payment_method?: string | null } | undefined)
      ?.default_payment_method as string | null) ??
    undefined
  );
}

/**
 * `POST /v1/invoices/{id}/pay`: a draft is finalized first; the amount due is charged through a payment
 * intent on the payment method (a decline is Stripe's 402 card error, and the invoice stays open), or
 * the invoice is marked paid without a charge with `paid_out_of_band`.
 */
export function payInvoice(store: StripeStore, id: string, b: FormObject, idempotencyKey?: string) {
  let invoice = store.find('invoice', id);
  if (invoice.status === 'draft') invoice = finalizeInvoice(store, id, idempotencyKey);
  if (invoice.status === 'paid') throw invalid('Invoice is already paid', undefined, 'invoice_already_paid');
  if (invoice.status !== 'open') {
    throw invalid(
      `You cannot pay an invoice with status ${String(invoice.status)}.`,
      undefined,
      'invoice_not_editable',
    );
  }
  if (bool(b.paid_out_of_band, 'paid_out_of_band')) {
    // Versions before basil show it (`paid_out_of_band: true`).
    store.hidden(id).paid_out_of_band = true;
    return markInvoicePaid(store, id, 0, idempotencyKey);
  }
  const pm = invoicePaymentMethod(store, invoice, str(b.payment_method));
  if (!pm) {
    throw invalid(
      'This customer has no attached payment source or default payment method. Please consider adding a default payment method.',
      undefined,
      'invoice_payment_intent_requires_action',
    );
  }
  return chargeInvoice(store, invoice, pm, idempotencyKey);
}

export function chargeInvoice(
  store: StripeStore,
  invoice: StripeObject,
  pm: string,
  idempotencyKey?: string,
): StripeObject {
  const intent = invoiceIntent(store, invoice, idempotencyKey);
  store.update(invoice.id, { attempted: true, attempt_count: (invoice.attempt_count as number) + 1 });
  try {
    // On success the store tells payInvoiceOfIntent, which marks the invoice paid.
    confirmPaymentIntent(store, intent.id, { payment_method: pm }, idempotencyKey);
  } catch (error) {
    if (error instanceof StripeError) {
      const failed = store.find('invoice', invoice.id);
      store.event('invoice.payment_failed', failed, { idempotencyKey });
    }
    throw error;
  }
  return store.find('invoice', invoice.id);
}

export function voidInvoice(store: StripeStore, id: string) {
  const invoice = store.find('invoice', id);
  if (invoice.status !== 'open' && invoice.status !== 'uncollectible') {
    throw invalid(
      `You can only void invoices with status open or uncollectible; this one is ${String(invoice.status)}.`,
      undefined,
      'invoice_not_editable',
    );
  }
  const intentId = store.hidden(id).payment_intent;
  const intent = typeof intentId === 'string' ? store.lookup(intentId) : undefined;
  if (intent && ['requires_payment_method', 'requires_confirmation'].includes(String(intent.status))) {
    cancelPaymentIntent(store, intent.id, {});
  }
  const voided = store.update(id, {
    status: 'void',
    amount_remaining: 0,
    status_transitions: { ...(invoice.status_transitions as object), voided_at: now() },
  });
  store.event('invoice.voided', voided);
  return voided;
}

export function listInvoices(store: StripeStore, q: URLSearchParams) {
  const customer = q.get('customer');
  const subscription = q.get('subscription');
  const status = q.get('status');
  const collection = q.get('collection_method');
  return store.list(
    'invoice',
    q,
    '/v1/invoices',
    (i) =>
      (!customer || i.customer === customer) &&
      (!subscription || subscriptionOf(store, i)?.id === subscription) &&
      (!status || i.status === status) &&
      (!collection || i.collection_method === collection),
  );
}
