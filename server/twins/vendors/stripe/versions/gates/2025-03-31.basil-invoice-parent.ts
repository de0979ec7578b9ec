import { drop, idOf, restore, type Shaped, type VersionGate } from '../gate.ts';
import type { StripeStore } from '../../store.ts';
import { planOf } from '../../resources/subscription-items.ts';

interface Parent {
  type?: string;
  subscription_details?: { subscription?: unknown; metadata?: unknown } | null;
  subscription_item_details?: { subscription?: unknown; subscription_item?: unknown } | null;
  invoice_item_details?: { invoice_item?: unknown; subscription?: unknown } | null;
}

/** The price an item is billed at (`pricing.price_details.price`), whole, as older versions embed it. */
function priceOf(store: StripeStore, pricing: unknown) {
  const id = idOf((pricing as { price_details?: { price?: unknown } } | null)?.price_details?.price);
  return id ? store.lookup(id) : undefined;
}

/**
 * basil gathered what an invoice, its lines and invoice items belong to under `parent`, and what they are
 * billed at under `pricing`. Before it, an invoice names its `subscription` (with `subscription_details`),
 * and a line or an invoice item carries its `price` and legacy `plan` whole, its `subscription`, and
 * (lines) its `type`, `proration` and `subscription_item`.
 */
export const invoiceParent: VersionGate = {
  version: '2025-03-31.basil',
  change:
    'Invoices, invoice line items and invoice items: subscription, price, plan and proration fields moved under parent and pricing',
  objects: {
    invoice: (invoice) => {
      const details = (invoice.parent as Parent | null)?.subscription_details;
      restore(invoice, {
        subscription: details?.subscription ?? null,
        subscription_details: details ? { metadata: details.metadata ?? null } : null,
      });
      drop(invoice, 'parent');
    },
    line_item: (line, { store }) => {
      const parent = line.parent as Parent | null;
      const fromSubscription = parent?.subscription_item_details;
      const price = priceOf(store, line.pricing);
      const unit = (price?.unit_amount as number | null | undefined) ?? null;
      restore(line, {
        type: fromSubscription ? 'subscription' : 'invoiceitem',
        invoice_item: parent?.invoice_item_details?.invoice_item ?? undefined,
        subscription: fromSubscription?.subscription ?? parent?.invoice_item_details?.subscription ?? null,
        subscription_item: fromSubscription?.subscription_item ?? undefined,
        price: price ?? null,
        plan: price?.recurring ? planOf(price) : null,
        proration: false,
        proration_details: { credited_items: null },
        amount_excluding_tax: line.amount,
        unit_amount_excluding_tax: unit === null ? null : String(unit),
        tax_amounts: [],
        tax_rates: [],
      });
      for (const key of ['invoice_item', 'subscription_item']) if (line[key] === undefined) delete line[key];
      drop(line, 'parent', 'pricing', 'taxes', 'subtotal');
    },
    invoiceitem: (item: Shaped, { store }) => {
      const price = priceOf(store, item.pricing);
      const quantity = (item.quantity as number | undefined) || 1;
      const unit =
        (price?.unit_amount as number | null | undefined) ?? Math.round(Number(item.amount) / quantity);
      restore(item, {
        price: price ?? null,
        plan: price?.recurring ? planOf(price) : null,
        subscription: (item.parent as Parent | null)?.subscription_details?.subscription ?? null,
        unit_amount: unit,
        unit_amount_decimal: String(unit),
      });
      drop(item, 'parent', 'pricing', 'net_amount');
    },
  },
};
