/**
 * Stripe Billing on the twin: subscriptions (with trials) and their items, invoices and invoice items.
 *
 * Time does not pass in a twin: a subscription's first invoice is made and paid (or left open) when it is
 * created, and no later period is ever billed (Stripe's test clocks are not simulated). Prorations are not
 * computed: changing a subscription's items changes what the next invoice would bill, and nothing else.
 */
import {
  StripeError,
  arr,
  bool,
  currencyOf,
  int,
  invalid,
  mergeMetadata,
  metadata,
  newId,
  now,
  obj,
  oneOf,
  previousOf,
  required,
  str,
  type StripeApi,
  type StripeObject,
} from './api.ts';
import type { FormObject, FormValue } from './form.ts';

const DAY = 86_400;

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

/** `$20.00`, `€9.50`, `¥500`: an amount in minor units as Stripe writes it in line descriptions. */
export function formatAmount(amount: number, currency: string): string {
  try {
    const format = new Intl.NumberFormat('en-US', { style: 'currency', currency: currency.toUpperCase() });
    const digits = format.resolvedOptions().maximumFractionDigits ?? 2;
    return format.format(amount / 10 ** digits);
  } catch {
    return `${(amount / 100).toFixed(2)} ${currency.toUpperCase()}`;
  }
}

type Line = Record<string, unknown> & { id: string; amount: number };

export class StripeBilling {
  constructor(private readonly api: StripeApi) {
    // An invoice's payment intent may be confirmed by the app itself (its `confirmation_secret`).
    api.onIntentSucceeded = (intent) => {
      const invoiceId = this.api.hidden(intent.id).invoice as string | undefined;
      const invoice = invoiceId ? this.api.lookup(invoiceId) : undefined;
      if (invoice?.status === 'open') this.markPaid(invoice.id, intent.amount as number);
    };
  }

  /**
   * An open invoice's `confirmation_secret` (sent only when expanded): the client secret of the payment
   * intent it was finalized with, which an app confirms to pay it.
   */
  confirmationSecret(invoice: Record<string, unknown>): { client_secret: string; type: string } | null {
    const intentId = typeof invoice.id === 'string' ? this.api.hidden(invoice.id).payment_intent : undefined;
    const intent = typeof intentId === 'string' ? this.api.lookup(intentId) : undefined;
    if (invoice.status !== 'open' || !intent) return null;
    return { client_secret: String(intent.client_secret), type: 'payment_intent' };
  }

  /** The payment intent an invoice is paid through, made when it is finalized (as Stripe does). */
  private intentFor(invoice: StripeObject, idempotencyKey?: string): StripeObject {
    const hidden = this.api.hidden(invoice.id);
    const existing =
      typeof hidden.payment_intent === 'string' ? this.api.lookup(hidden.payment_intent) : undefined;
    if (existing && ['requires_payment_method', 'requires_confirmation'].includes(String(existing.status))) {
      return existing;
    }
    const intent = this.api.createPaymentIntent(
      {
        amount: String(invoice.amount_remaining),
        currency: String(invoice.currency),
        customer: String(invoice.customer),
        description: invoice.number ? `Invoice ${String(invoice.number)}` : 'Invoice',
      },
      idempotencyKey,
    );
    hidden.payment_intent = intent.id;
    this.api.hidden(intent.id).invoice = invoice.id;
    return intent;
  }

  // Plans (the legacy view of a price that subscription items still carry)

  private planOf(price: StripeObject) {
    const recurring = price.recurring as {
      interval: string;
      interval_count: number;
      usage_type: string;
    } | null;
    return {
      id: price.id,
      object: 'plan',
      active: price.active,
      amount: price.unit_amount,
      amount_decimal: price.unit_amount_decimal,
      billing_scheme: price.billing_scheme,
      created: price.created,
      currency: price.currency,
      interval: recurring?.interval ?? 'month',
      interval_count: recurring?.interval_count ?? 1,
      livemode: false,
      metadata: price.metadata,
      meter: null,
      nickname: price.nickname,
      product: price.product,
      tiers_mode: null,
      transform_usage: null,
      trial_period_days: null,
      usage_type: recurring?.usage_type ?? 'licensed',
    };
  }

  private productName(price: StripeObject): string {
    const product = this.api.lookup(String(price.product));
    return typeof product?.name === 'string' ? product.name : String(price.product);
  }

  // Invoices

  private invoiceShape(customer: StripeObject, opts: Record<string, unknown>): Record<string, unknown> {
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

  private lines(invoiceId: string): Line[] {
    const hidden = this.api.hidden(invoiceId);
    hidden.lines ??= [];
    return hidden.lines as Line[];
  }

  /** Recomputes an invoice's lines list and totals from its stored lines. */
  private recompute(invoiceId: string): StripeObject {
    const invoice = this.api.find('invoice', invoiceId);
    const lines = this.lines(invoiceId);
    const total = lines.reduce((sum, l) => sum + l.amount, 0);
    const paid = invoice.amount_paid as number;
    return this.api.update(invoiceId, {
      currency: (lines[0]?.currency as string | undefined) ?? invoice.currency,
      lines: {
        object: 'list',
        data: structuredClone(lines.slice(0, 10)),
        has_more: lines.length > 10,
        total_count: lines.length,
        url: `/v1/invoices/${invoiceId}/lines`,
      },
      subtotal: total,
      subtotal_excluding_tax: total,
      total,
      total_excluding_tax: total,
      amount_due: invoice.status === 'void' ? invoice.amount_due : total,
      amount_remaining:
        invoice.status === 'void' || invoice.status === 'paid' ? 0 : Math.max(0, total - paid),
    });
  }

  private invoiceItemLine(ii: StripeObject, invoiceId: string): Line {
    const pricing = ii.pricing as { price_details?: { price: string; product: string } } | null;
    return {
      id: newId('il'),
      object: 'line_item',
      amount: ii.amount as number,
      currency: ii.currency,
      description: ii.description,
      discount_amounts: [],
      discountable: true,
      discounts: [],
      invoice: invoiceId,
      livemode: false,
      metadata: (ii.metadata as Record<string, string> | null) ?? {},
      parent: {
        invoice_item_details: {
          invoice_item: ii.id,
          proration: false,
          proration_details: { credited_items: null },
          subscription: null,
        },
        subscription_item_details: null,
        type: 'invoice_item_details',
      },
      period: ii.period,
      pretax_credit_amounts: [],
      pricing: {
        ...(pricing?.price_details ? { price_details: pricing.price_details } : {}),
        type: 'price_details',
        unit_amount_decimal:
          (ii.pricing as { unit_amount_decimal: string } | null)?.unit_amount_decimal ?? null,
      },
      quantity: ii.quantity,
      quantity_decimal: String(ii.quantity),
      subscription: null,
      subtotal: ii.amount as number,
      taxes: [],
    };
  }

  createInvoice(b: FormObject, idempotencyKey?: string) {
    const customer = this.api.find('customer', required(b.customer, 'customer'), 'customer');
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
    if (pmId) this.api.find('payment_method', pmId, 'default_payment_method');
    const behavior =
      oneOf(b.pending_invoice_items_behavior, 'pending_invoice_items_behavior', [
        'exclude',
        'include',
      ] as const) ?? 'exclude';
    const currency = str(b.currency) ? currencyOf(b.currency) : undefined;
    const invoice = this.api.insert(
      'invoice',
      this.invoiceShape(customer, {
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
      for (const entry of Object.values(this.api.state.objects)) {
        const ii = entry.data;
        if (
          ii.object === 'invoiceitem' &&
          !ii.deleted &&
          ii.customer === customer.id &&
          ii.invoice === null
        ) {
          this.api.update(ii.id, { invoice: invoice.id });
          this.lines(invoice.id).push(this.invoiceItemLine(this.api.find('invoiceitem', ii.id), invoice.id));
        }
      }
    }
    const created = this.recompute(invoice.id);
    this.api.event('invoice.created', created, { idempotencyKey });
    return created;
  }

  updateInvoice(id: string, b: FormObject) {
    const invoice = this.api.find('invoice', id);
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
      if (pm) this.api.find('payment_method', pm, 'default_payment_method');
      changes.default_payment_method = pm || null;
    }
    const days = int(b.days_until_due, 'days_until_due');
    if (days !== undefined) this.api.hidden(id).days_until_due = days;
    const auto = bool(b.auto_advance, 'auto_advance');
    if (auto !== undefined) changes.auto_advance = auto;
    const updated = this.api.update(id, changes);
    this.api.event('invoice.updated', updated, undefined, previousOf(invoice, changes));
    return updated;
  }

  finalizeInvoice(id: string, idempotencyKey?: string) {
    const invoice = this.api.find('invoice', id);
    if (invoice.status !== 'draft') {
      throw invalid(
        "This invoice is already finalized, you can't re-finalize a non-draft invoice.",
        undefined,
        'invoice_not_editable',
      );
    }
    const customer = this.api.lookup(String(invoice.customer));
    const sequence = (customer?.next_invoice_sequence as number | undefined) ?? 1;
    if (customer) this.api.update(customer.id, { next_invoice_sequence: sequence + 1 });
    const at = now();
    const hidden = this.api.hidden(id);
    const dueDate =
      invoice.collection_method === 'send_invoice'
        ? ((hidden.due_date as number | null) ?? at + ((hidden.days_until_due as number | null) ?? 30) * DAY)
        : null;
    this.api.update(id, {
      number: `${String(customer?.invoice_prefix ?? 'TWIN')}-${String(sequence).padStart(4, '0')}`,
      status: 'open',
      due_date: dueDate,
      effective_at: at,
      ending_balance: 0,
      status_transitions: { ...(invoice.status_transitions as object), finalized_at: at },
      webhooks_delivered_at: at,
    });
    const finalized = this.recompute(id);
    this.api.event('invoice.finalized', finalized, { idempotencyKey });
    if ((finalized.amount_due as number) === 0) return this.markPaid(id, 0, idempotencyKey);
    if (finalized.collection_method === 'charge_automatically') this.intentFor(finalized, idempotencyKey);
    return finalized;
  }

  private markPaid(id: string, amount: number, idempotencyKey?: string): StripeObject {
    const invoice = this.api.find('invoice', id);
    const at = now();
    const paid = this.api.update(id, {
      status: 'paid',
      amount_paid: amount,
      amount_remaining: 0,
      attempted: amount > 0 || invoice.attempted === true,
      status_transitions: { ...(invoice.status_transitions as object), paid_at: at },
    });
    this.api.event('invoice.paid', paid, { idempotencyKey });
    this.api.event('invoice.payment_succeeded', paid, { idempotencyKey });
    const subscription = this.subscriptionOf(paid);
    const activated =
      subscription && ['incomplete', 'past_due', 'unpaid'].includes(String(subscription.status));
    // A subscription whose first invoice is paid while it is created gets its status from createSubscription.
    if (subscription && activated && !this.api.hidden(subscription.id).creating) {
      const active = this.api.update(subscription.id, { status: 'active' });
      this.api.event(
        'customer.subscription.updated',
        active,
        { idempotencyKey },
        { status: subscription.status },
      );
    }
    return paid;
  }

  private subscriptionOf(invoice: StripeObject): StripeObject | undefined {
    const parent = invoice.parent as { subscription_details?: { subscription?: string } } | null;
    const id = parent?.subscription_details?.subscription;
    return id ? this.api.lookup(id) : undefined;
  }

  /** The payment method a charge for this invoice uses: given, the invoice's, the subscription's or the customer's. */
  private paymentMethodFor(invoice: StripeObject, given?: string): string | undefined {
    if (given) return this.api.resolvePaymentMethod(given).id;
    const subscription = this.subscriptionOf(invoice);
    const customer = this.api.lookup(String(invoice.customer));
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
  payInvoice(id: string, b: FormObject, idempotencyKey?: string) {
    let invoice = this.api.find('invoice', id);
    if (invoice.status === 'draft') invoice = this.finalizeInvoice(id, idempotencyKey);
    if (invoice.status === 'paid')
      throw invalid('Invoice is already paid', undefined, 'invoice_already_paid');
    if (invoice.status !== 'open') {
      throw invalid(
        `You cannot pay an invoice with status ${String(invoice.status)}.`,
        undefined,
        'invoice_not_editable',
      );
    }
    if (bool(b.paid_out_of_band, 'paid_out_of_band')) return this.markPaid(id, 0, idempotencyKey);
    const pm = this.paymentMethodFor(invoice, str(b.payment_method));
    if (!pm) {
      throw invalid(
        'This customer has no attached payment source or default payment method. Please consider adding a default payment method.',
        undefined,
        'invoice_payment_intent_requires_action',
      );
    }
    return this.charge(invoice, pm, idempotencyKey);
  }

  private charge(invoice: StripeObject, pm: string, idempotencyKey?: string): StripeObject {
    const intent = this.intentFor(invoice, idempotencyKey);
    this.api.update(invoice.id, { attempted: true, attempt_count: (invoice.attempt_count as number) + 1 });
    try {
      // On success onIntentSucceeded marks the invoice paid.
      this.api.confirmPaymentIntent(intent.id, { payment_method: pm }, idempotencyKey);
    } catch (error) {
      if (error instanceof StripeError) {
        const failed = this.api.find('invoice', invoice.id);
        this.api.event('invoice.payment_failed', failed, { idempotencyKey });
      }
      throw error;
    }
    return this.api.find('invoice', invoice.id);
  }

  voidInvoice(id: string) {
    const invoice = this.api.find('invoice', id);
    if (invoice.status !== 'open' && invoice.status !== 'uncollectible') {
      throw invalid(
        `You can only void invoices with status open or uncollectible; this one is ${String(invoice.status)}.`,
        undefined,
        'invoice_not_editable',
      );
    }
    const intentId = this.api.hidden(id).payment_intent;
    const intent = typeof intentId === 'string' ? this.api.lookup(intentId) : undefined;
    if (intent && ['requires_payment_method', 'requires_confirmation'].includes(String(intent.status))) {
      this.api.cancelPaymentIntent(intent.id, {});
    }
    const voided = this.api.update(id, {
      status: 'void',
      amount_remaining: 0,
      status_transitions: { ...(invoice.status_transitions as object), voided_at: now() },
    });
    this.api.event('invoice.voided', voided);
    return voided;
  }

  listInvoices(q: URLSearchParams) {
    const customer = q.get('customer');
    const subscription = q.get('subscription');
    const status = q.get('status');
    const collection = q.get('collection_method');
    return this.api.list(
      'invoice',
      q,
      '/v1/invoices',
      (i) =>
        (!customer || i.customer === customer) &&
        (!subscription || this.subscriptionOf(i)?.id === subscription) &&
        (!status || i.status === status) &&
        (!collection || i.collection_method === collection),
    );
  }

  invoiceLines(id: string, q: URLSearchParams) {
    this.api.find('invoice', id);
    const lines = this.lines(id);
    const limit = Number(q.get('limit') ?? 10);
    let start = 0;
    const after = q.get('starting_after');
    if (after) {
      const i = lines.findIndex((l) => l.id === after);
      if (i === -1) throw invalid(`No such line item: '${after}'`, 'starting_after', 'resource_missing');
      start = i + 1;
    }
    if (!Number.isInteger(limit) || limit < 1 || limit > 100) {
      throw invalid('Invalid limit: must be an integer between 1 and 100.', 'limit');
    }
    return {
      object: 'list',
      url: `/v1/invoices/${id}/lines`,
      has_more: start + limit < lines.length,
      data: lines.slice(start, start + limit),
    };
  }

  // Invoice items

  createInvoiceItem(b: FormObject, idempotencyKey?: string) {
    const customer = this.api.find('customer', required(b.customer, 'customer'), 'customer');
    const invoiceId = str(b.invoice);
    if (invoiceId) {
      const invoice = this.api.find('invoice', invoiceId, 'invoice');
      if (invoice.status !== 'draft') {
        throw invalid('You can only add invoice items to draft invoices.', 'invoice', 'invoice_not_editable');
      }
      if (invoice.customer !== customer.id) {
        throw invalid('The invoice belongs to another customer.', 'invoice');
      }
    }
    const quantity = int(b.quantity, 'quantity', { min: 1 }) ?? 1;
    const priceId = str(obj(b.pricing)?.price) ?? str(b.price);
    let amount: number;
    let currency: string;
    let pricing: Record<string, unknown>;
    let description = str(b.description);
    if (priceId || obj(b.price_data)) {
      const price = this.api.resolvePrice(priceId, b.price_data, 'pricing');
      amount = ((price.unit_amount as number | null) ?? 0) * quantity;
      currency = price.currency as string;
      pricing = {
        price_details: { price: price.id, product: price.product },
        type: 'price_details',
        unit_amount_decimal: price.unit_amount_decimal,
      };
      description ??= this.productName(price);
    } else {
      const total = int(b.amount, 'amount');
      const unit = int(b.unit_amount_decimal, 'unit_amount_decimal');
      if (total === undefined && unit === undefined) {
        throw invalid('Missing required param: amount.', 'amount', 'parameter_missing');
      }
      amount = total ?? unit! * quantity;
      currency = currencyOf(b.currency);
      pricing = { type: 'price_details', unit_amount_decimal: String(unit ?? amount / quantity) };
    }
    const period = obj(b.period);
    const at = now();
    const ii = this.api.insert('invoiceitem', {
      amount,
      currency,
      customer: customer.id,
      customer_account: null,
      date: at,
      description: description ?? null,
      discountable: bool(b.discountable, 'discountable') ?? true,
      discounts: [],
      invoice: invoiceId ?? null,
      metadata: metadata(b.metadata),
      net_amount: amount,
      parent: null,
      period: {
        end: int(period?.end, 'period[end]') ?? at,
        start: int(period?.start, 'period[start]') ?? at,
      },
      pricing,
      proration: false,
      quantity,
      quantity_decimal: String(quantity),
      tax_rates: [],
      test_clock: null,
    });
    this.api.event('invoiceitem.created', ii, { idempotencyKey });
    if (invoiceId) {
      this.lines(invoiceId).push(this.invoiceItemLine(ii, invoiceId));
      this.recompute(invoiceId);
    }
    return ii;
  }

  updateInvoiceItem(id: string, b: FormObject) {
    const ii = this.api.find('invoiceitem', id);
    this.editableItem(ii);
    const changes: Record<string, unknown> = {};
    if (b.metadata !== undefined) changes.metadata = mergeMetadata(ii.metadata, b.metadata);
    if (str(b.description) !== undefined) changes.description = str(b.description) || null;
    const amount = int(b.amount, 'amount');
    if (amount !== undefined) changes.amount = changes.net_amount = amount;
    const updated = this.api.update(id, changes);
    this.resyncLine(updated);
    return updated;
  }

  deleteInvoiceItem(id: string) {
    const ii = this.api.find('invoiceitem', id);
    this.editableItem(ii);
    this.api.update(id, { deleted: true });
    if (ii.invoice) {
      const lines = this.lines(String(ii.invoice));
      const at = lines.findIndex(
        (l) =>
          (l.parent as { invoice_item_details?: { invoice_item?: string } })?.invoice_item_details
            ?.invoice_item === id,
      );
      if (at !== -1) lines.splice(at, 1);
      this.recompute(String(ii.invoice));
    }
    this.api.event('invoiceitem.deleted', this.api.state.objects[id]!.data);
    return { id, object: 'invoiceitem', deleted: true };
  }

  private editableItem(ii: StripeObject): void {
    const invoice = ii.invoice ? this.api.lookup(String(ii.invoice)) : undefined;
    if (invoice && invoice.status !== 'draft') {
      throw invalid(
        `This invoice item is on invoice ${invoice.id}, which is no longer a draft.`,
        undefined,
        'invoice_not_editable',
      );
    }
  }

  private resyncLine(ii: StripeObject): void {
    if (!ii.invoice) return;
    const lines = this.lines(String(ii.invoice));
    const at = lines.findIndex(
      (l) =>
        (l.parent as { invoice_item_details?: { invoice_item?: string } })?.invoice_item_details
          ?.invoice_item === ii.id,
    );
    if (at !== -1) lines[at] = { ...this.invoiceItemLine(ii, String(ii.invoice)), id: lines[at]!.id };
    this.recompute(String(ii.invoice));
  }

  listInvoiceItems(q: URLSearchParams) {
    const customer = q.get('customer');
    const invoice = q.get('invoice');
    const pending = q.get('pending');
    return this.api.list(
      'invoiceitem',
      q,
      '/v1/invoiceitems',
      (ii) =>
        (!customer || ii.customer === customer) &&
        (!invoice || ii.invoice === invoice) &&
        (pending === null || (pending === 'true') === (ii.invoice === null)),
    );
  }

  // Subscriptions

  /** The subscription items a create or update asks for, as [price, quantity, metadata] checked. */
  private itemParams(items: FormValue[], currency?: string) {
    return items.map((raw, index) => {
      const item = obj(raw) ?? {};
      const param = `items[${index}]`;
      const price = this.api.resolvePrice(item.price ?? item.plan, item.price_data, param);
      if (price.type !== 'recurring') {
        throw invalid(
          'The price specified is set to `type=one_time` but this field only accepts prices with `type=recurring`.',
          `${param}[price]`,
        );
      }
      if (currency && price.currency !== currency) {
        throw invalid(
          `All prices on a subscription must have the same currency (${currency}); ${price.id} is ${String(price.currency)}.`,
          `${param}[price]`,
        );
      }
      currency ??= price.currency as string;
      return {
        item,
        price,
        quantity: int(item.quantity, `${param}[quantity]`, { min: 0 }) ?? 1,
        metadata: metadata(item.metadata),
      };
    });
  }

  private insertItem(
    subscription: string,
    price: StripeObject,
    quantity: number,
    md: Record<string, string>,
    period: { start: number; end: number },
  ) {
    return this.api.insert('subscription_item', {
      billing_thresholds: null,
      current_period_end: period.end,
      current_period_start: period.start,
      current_trial: null,
      discounts: [],
      metadata: md,
      plan: this.planOf(price),
      price: structuredClone(price),
      quantity,
      subscription,
      tax_rates: [],
    });
  }

  private items(subscription: string): StripeObject[] {
    return Object.values(this.api.state.objects)
      .filter(
        (e) =>
          e.data.object === 'subscription_item' && !e.data.deleted && e.data.subscription === subscription,
      )
      .sort((a, b) => a.seq - b.seq)
      .map((e) => e.data);
  }

  /** Writes the subscription's embedded `items` list from its items. */
  private syncItems(id: string): StripeObject {
    const items = this.items(id);
    return this.api.update(id, {
      items: {
        object: 'list',
        data: structuredClone(items),
        has_more: false,
        total_count: items.length,
        url: `/v1/subscription_items?subscription=${id}`,
      },
    });
  }

  /** When a trial asked for by `trial_end`, `trial_period_days` or `trial_from_plan` ends, or undefined. */
  private trialEnd(b: FormObject, prices: StripeObject[], start: number): number | undefined {
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

  createSubscription(b: FormObject, idempotencyKey?: string) {
    const customer = this.api.find('customer', required(b.customer, 'customer'), 'customer');
    const rawItems = arr(b.items);
    if (!rawItems.length) throw invalid('Missing required param: items.', 'items', 'parameter_missing');
    const items = this.itemParams(rawItems);
    const currency = items[0]!.price.currency as string;
    const collection =
      oneOf(b.collection_method, 'collection_method', ['charge_automatically', 'send_invoice'] as const) ??
      'charge_automatically';
    const daysUntilDue = int(b.days_until_due, 'days_until_due');
    if (collection === 'send_invoice' && daysUntilDue === undefined) {
      throw invalid('Missing required param: days_until_due.', 'days_until_due', 'parameter_missing');
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
      const pm = this.api.find('payment_method', pmParam, 'default_payment_method');
      if (pm.customer !== customer.id) {
        throw invalid(
          `The customer does not have a payment method with the ID ${pmParam}. The payment method must be attached to the customer.`,
          'default_payment_method',
          'resource_missing',
        );
      }
    }
    const start = now();
    const trialEnd = this.trialEnd(
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
      this.api.assertChargeable(pm);
    }
    const cancelAtPeriodEnd = bool(b.cancel_at_period_end, 'cancel_at_period_end') ?? false;
    const cancelAt = int(b.cancel_at, 'cancel_at');
    const sub = this.api.insert('subscription', {
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
    this.api.hidden(sub.id).creating = true;
    for (const { price, quantity, metadata: md } of items) {
      this.insertItem(sub.id, price, quantity, md, { start, end: periodEnd });
    }
    this.syncItems(sub.id);
    const invoice = this.firstInvoice(
      sub.id,
      customer,
      { start, end: periodEnd },
      !!trialEnd,
      idempotencyKey,
    );
    this.api.update(sub.id, { latest_invoice: invoice.id });
    // Paid before the subscription is announced, so customer.subscription.created carries the outcome.
    if (chargeNow && invoice.status === 'open' && behavior !== 'default_incomplete' && pm) {
      try {
        this.charge(invoice, pm, idempotencyKey);
      } catch (error) {
        // allow_incomplete: the subscription stays `incomplete` with its open invoice, as on Stripe.
        if (!(error instanceof StripeError)) throw error;
      }
    }
    const paid = this.api.find('invoice', invoice.id).status === 'paid';
    const status = trialEnd ? 'trialing' : collection === 'send_invoice' || paid ? 'active' : 'incomplete';
    const created = this.api.update(sub.id, { status });
    delete this.api.hidden(sub.id).creating;
    this.api.event('customer.subscription.created', created, { idempotencyKey });
    return created;
  }

  /** The subscription's first invoice: its items for the first period ($0 in a trial), finalized. */
  private firstInvoice(
    subscription: string,
    customer: StripeObject,
    period: { start: number; end: number },
    trial: boolean,
    idempotencyKey?: string,
  ): StripeObject {
    const sub = this.api.find('subscription', subscription);
    const invoice = this.api.insert(
      'invoice',
      this.invoiceShape(customer, {
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
    const lines = this.lines(invoice.id);
    for (const item of this.items(subscription)) {
      const price = item.price as StripeObject;
      const quantity = item.quantity as number;
      const unit = (price.unit_amount as number | null) ?? 0;
      const amount = trial ? 0 : unit * quantity;
      const recurring = price.recurring as { interval: string };
      lines.push({
        id: newId('il'),
        object: 'line_item',
        amount,
        currency: price.currency,
        description: trial
          ? `Trial period for ${this.productName(price)}`
          : `${quantity} × ${this.productName(price)} (at ${formatAmount(unit, String(price.currency))} / ${recurring.interval})`,
        discount_amounts: [],
        discountable: true,
        discounts: [],
        invoice: invoice.id,
        livemode: false,
        metadata: {},
        parent: {
          invoice_item_details: null,
          subscription_item_details: {
            invoice_item: null,
            proration: false,
            proration_details: { credited_items: null },
            subscription,
            subscription_item: item.id,
          },
          type: 'subscription_item_details',
        },
        period,
        pretax_credit_amounts: [],
        pricing: {
          price_details: { price: price.id, product: price.product },
          type: 'price_details',
          unit_amount_decimal: price.unit_amount_decimal,
        },
        quantity,
        quantity_decimal: String(quantity),
        subscription,
        subtotal: amount,
        taxes: [],
      });
    }
    const created = this.recompute(invoice.id);
    this.api.event('invoice.created', created, { idempotencyKey });
    return this.finalizeInvoice(invoice.id, idempotencyKey);
  }

  updateSubscription(id: string, b: FormObject, idempotencyKey?: string) {
    const sub = this.api.find('subscription', id);
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
    const periodEnd = this.items(id)[0]?.current_period_end as number | undefined;
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
      if (pm && this.api.find('payment_method', pm, 'default_payment_method').customer !== sub.customer) {
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
      for (const item of this.items(id)) this.api.update(item.id, { current_period_end: at });
    }
    const rawItems = arr(b.items);
    if (rawItems.length) this.updateItems(id, rawItems, sub.currency as string);
    const updated = this.api.update(id, changes);
    const synced = rawItems.length ? this.syncItems(id) : updated;
    const previous = previousOf(sub, { ...changes, ...(rawItems.length ? { items: synced.items } : {}) });
    this.api.event('customer.subscription.updated', synced, { idempotencyKey }, previous);
    return synced;
  }

  /** `items[n][id]` changes (price, quantity, metadata) or deletes (`deleted`) an item; without `id`, adds one. */
  private updateItems(subscription: string, rawItems: FormValue[], currency: string): void {
    const current = this.items(subscription);
    const period = {
      start: (current[0]?.current_period_start as number | undefined) ?? now(),
      end: (current[0]?.current_period_end as number | undefined) ?? now(),
    };
    rawItems.forEach((raw, index) => {
      const item = obj(raw) ?? {};
      const param = `items[${index}]`;
      const itemId = str(item.id);
      if (itemId) {
        const existing = this.api.find('subscription_item', itemId, `${param}[id]`);
        if (existing.subscription !== subscription) {
          throw invalid(`The subscription item ${itemId} belongs to another subscription.`, `${param}[id]`);
        }
        if (bool(item.deleted, `${param}[deleted]`)) {
          this.api.update(itemId, { deleted: true });
          return;
        }
        const changes: Record<string, unknown> = {};
        if (item.price !== undefined || item.price_data !== undefined) {
          const wanted: FormObject = {};
          if (item.price !== undefined) wanted.price = item.price;
          if (item.price_data !== undefined) wanted.price_data = item.price_data;
          const price = this.itemParams([wanted], currency)[0]!.price;
          changes.price = structuredClone(price);
          changes.plan = this.planOf(price);
        }
        const quantity = int(item.quantity, `${param}[quantity]`, { min: 0 });
        if (quantity !== undefined) changes.quantity = quantity;
        if (item.metadata !== undefined) changes.metadata = mergeMetadata(existing.metadata, item.metadata);
        this.api.update(itemId, changes);
      } else {
        const [added] = this.itemParams([item], currency);
        this.insertItem(subscription, added!.price, added!.quantity, added!.metadata, period);
      }
    });
    if (!this.items(subscription).length) {
      throw invalid('A subscription needs at least one item; cancel it instead.', 'items');
    }
  }

  cancelSubscription(id: string, b: FormObject, idempotencyKey?: string) {
    const sub = this.api.find('subscription', id);
    if (sub.status === 'canceled') {
      throw invalid(`No such subscription: '${id}'`, undefined, 'resource_missing');
    }
    const details = obj(b.cancellation_details);
    const at = now();
    const canceled = this.api.update(id, {
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
    this.api.event('customer.subscription.deleted', canceled, { idempotencyKey });
    return canceled;
  }

  listSubscriptions(q: URLSearchParams) {
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
    return this.api.list(
      'subscription',
      q,
      '/v1/subscriptions',
      (s) =>
        (!customer || s.customer === customer) &&
        (!collection || s.collection_method === collection) &&
        (!price || this.items(s.id).some((i) => (i.price as StripeObject).id === price)) &&
        (status === 'all'
          ? true
          : status === 'ended'
            ? s.status === 'canceled' || s.status === 'incomplete_expired'
            : status
              ? s.status === status
              : s.status !== 'canceled' && s.status !== 'incomplete_expired'),
    );
  }

  listSubscriptionItems(q: URLSearchParams) {
    const subscription = q.get('subscription');
    if (!subscription)
      throw invalid('Missing required param: subscription.', 'subscription', 'parameter_missing');
    this.api.find('subscription', subscription, 'subscription');
    return this.api.list(
      'subscription_item',
      q,
      '/v1/subscription_items',
      (i) => i.subscription === subscription,
    );
  }
}
