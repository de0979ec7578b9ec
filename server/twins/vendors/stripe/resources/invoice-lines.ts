/**
 * Invoice line items (`/v1/invoices/{id}/lines`): kept with their invoice (in its hidden part), each from
 * an invoice item or a subscription item; an invoice's totals are recomputed from them.
 */
import { invalid } from '../errors.ts';
import { listLimit } from '../params.ts';
import { newId, type StripeObject, type StripeStore } from '../store.ts';
import { productName } from './products.ts';

export type Line = Record<string, unknown> & { id: string; amount: number };

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

export function storedLines(store: StripeStore, invoiceId: string): Line[] {
  const hidden = store.hidden(invoiceId);
  hidden.lines ??= [];
  return hidden.lines as Line[];
}

/** Recomputes an invoice's lines list and totals from its stored lines. */
export function recomputeInvoice(store: StripeStore, invoiceId: string): StripeObject {
  const invoice = store.find('invoice', invoiceId);
  const lines = storedLines(store, invoiceId);
  const total = lines.reduce((sum, l) => sum + l.amount, 0);
  const paid = invoice.amount_paid as number;
  return store.update(invoiceId, {
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
    amount_remaining: invoice.status === 'void' || invoice.status === 'paid' ? 0 : Math.max(0, total - paid),
  });
}

export function invoiceItemLine(ii: StripeObject, invoiceId: string): Line {
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

/** The line a subscription item bills for a period ($0 in a trial), as on a subscription's invoice. */
export function subscriptionItemLine(
  store: StripeStore,
  invoiceId: string,
  subscription: string,
  item: StripeObject,
  period: { start: number; end: number },
  trial: boolean,
): Line {
  const price = item.price as StripeObject;
  const quantity = item.quantity as number;
  const unit = (price.unit_amount as number | null) ?? 0;
  const amount = trial ? 0 : unit * quantity;
  const recurring = price.recurring as { interval: string };
  return {
    id: newId('il'),
    object: 'line_item',
    amount,
    currency: price.currency,
    description: trial
      ? `Trial period for ${productName(store, price)}`
      : `${quantity} × ${productName(store, price)} (at ${formatAmount(unit, String(price.currency))} / ${recurring.interval})`,
    discount_amounts: [],
    discountable: true,
    discounts: [],
    invoice: invoiceId,
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
  };
}

export function listInvoiceLines(store: StripeStore, id: string, q: URLSearchParams) {
  store.find('invoice', id);
  const lines = storedLines(store, id);
  let start = 0;
  const after = q.get('starting_after');
  if (after) {
    const i = lines.findIndex((l) => l.id === after);
    if (i === -1) throw invalid(`No such line item: '${after}'`, 'starting_after', 'resource_missing');
    start = i + 1;
  }
  // Checked after the cursor, as before: an unknown cursor is the error a client sees first.
  const limit = listLimit(q);
  return {
    object: 'list',
    url: `/v1/invoices/${id}/lines`,
    has_more: start + limit < lines.length,
    data: lines.slice(start, start + limit),
  };
}
