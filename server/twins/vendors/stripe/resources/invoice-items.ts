/** Invoice items (`/v1/invoiceitems`): pending for a customer, or on a draft invoice as one of its lines. */
import { invalid } from '../errors.ts';
import {
  bool,
  currencyOf,
  int,
  mergeMetadata,
  metadata,
  missingParam,
  obj,
  required,
  str,
  type FormObject,
} from '../params.ts';
import { now, type StripeObject, type StripeStore } from '../store.ts';
import { invoiceItemLine, recomputeInvoice, storedLines } from './invoice-lines.ts';
import { productName, resolvePrice } from './products.ts';

export function createInvoiceItem(store: StripeStore, b: FormObject, idempotencyKey?: string) {
  const customer = store.find('customer', required(b.customer, 'customer'), 'customer');
  const invoiceId = str(b.invoice);
  if (invoiceId) {
    const invoice = store.find('invoice', invoiceId, 'invoice');
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
    const price = resolvePrice(store, priceId, b.price_data, 'pricing');
    amount = ((price.unit_amount as number | null) ?? 0) * quantity;
    currency = price.currency as string;
    pricing = {
      price_details: { price: price.id, product: price.product },
      type: 'price_details',
      unit_amount_decimal: price.unit_amount_decimal,
    };
    description ??= productName(store, price);
  } else {
    const total = int(b.amount, 'amount');
    const unit = int(b.unit_amount_decimal, 'unit_amount_decimal');
    if (total === undefined && unit === undefined) {
      missingParam('amount');
    }
    amount = total ?? unit! * quantity;
    currency = currencyOf(b.currency);
    pricing = { type: 'price_details', unit_amount_decimal: String(unit ?? amount / quantity) };
  }
  const period = obj(b.period);
  const at = now();
  const ii = store.insert('invoiceitem', {
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
  store.event('invoiceitem.created', ii, { idempotencyKey });
  if (invoiceId) {
    storedLines(store, invoiceId).push(invoiceItemLine(ii, invoiceId));
    recomputeInvoice(store, invoiceId);
  }
  return ii;
}

export function updateInvoiceItem(store: StripeStore, id: string, b: FormObject) {
  const ii = store.find('invoiceitem', id);
  editableItem(store, ii);
  const changes: Record<string, unknown> = {};
  if (b.metadata !== undefined) changes.metadata = mergeMetadata(ii.metadata, b.metadata);
  if (str(b.description) !== undefined) changes.description = str(b.description) || null;
  const amount = int(b.amount, 'amount');
  if (amount !== undefined) changes.amount = changes.net_amount = amount;
  const updated = store.update(id, changes);
  resyncLine(store, updated);
  return updated;
}

export function deleteInvoiceItem(store: StripeStore, id: string) {
  const ii = store.find('invoiceitem', id);
  editableItem(store, ii);
  store.update(id, { deleted: true });
  if (ii.invoice) {
    const lines = storedLines(store, String(ii.invoice));
    const at = lines.findIndex(
      (l) =>
        (l.parent as { invoice_item_details?: { invoice_item?: string } })?.invoice_item_details
          ?.invoice_item === id,
    );
    if (at !== -1) lines.splice(at, 1);
    recomputeInvoice(store, String(ii.invoice));
  }
  store.event('invoiceitem.deleted', store.state.objects[id]!.data);
  return { id, object: 'invoiceitem', deleted: true };
}

function editableItem(store: StripeStore, ii: StripeObject): void {
  const invoice = ii.invoice ? store.lookup(String(ii.invoice)) : undefined;
  if (invoice && invoice.status !== 'draft') {
    throw invalid(
      `This invoice item is on invoice ${invoice.id}, which is no longer a draft.`,
      undefined,
      'invoice_not_editable',
    );
  }
}

function resyncLine(store: StripeStore, ii: StripeObject): void {
  if (!ii.invoice) return;
  const lines = storedLines(store, String(ii.invoice));
  const at = lines.findIndex(
    (l) =>
      (l.parent as { invoice_item_details?: { invoice_item?: string } })?.invoice_item_details
        ?.invoice_item === ii.id,
  );
  if (at !== -1) lines[at] = { ...invoiceItemLine(ii, String(ii.invoice)), id: lines[at]!.id };
  recomputeInvoice(store, String(ii.invoice));
}

export function listInvoiceItems(store: StripeStore, q: URLSearchParams) {
  const customer = q.get('customer');
  const invoice = q.get('invoice');
  const pending = bool(q.get('pending') ?? undefined, 'pending');
  return store.list(
    'invoiceitem',
    q,
    '/v1/invoiceitems',
    (ii) =>
      (!customer || ii.customer === customer) &&
      (!invoice || ii.invoice === invoice) &&
      (pending === undefined || pending === (ii.invoice === null)),
  );
}
