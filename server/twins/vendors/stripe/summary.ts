import type { TwinSummary } from '../../contract.ts';
import { record, summaryTable, text } from '../../kit/summary.ts';
import { CURRENT_VERSION } from './versions/catalog.ts';

/** A minor-unit amount as people read it: 1000 usd → "10.00 USD" (zero-decimal currencies aside). */
function money(amount: unknown, currency: unknown): string {
  if (typeof amount !== 'number') return '';
  const code = text(currency).toUpperCase();
  const zeroDecimal = new Set(['JPY', 'KRW', 'VND', 'CLP', 'ISK', 'XAF', 'XOF', 'UGX', 'PYG', 'RWF']);
  return `${zeroDecimal.has(code) ? amount : (amount / 100).toFixed(2)} ${code}`.trim();
}

function when(created: unknown): string {
  return typeof created === 'number' ? new Date(created * 1000).toISOString() : '';
}

/**
 * The Stripe twin's snapshot (`{ state: { objects: { id: { seq, data } } } }`) as customers, payment intents,
 * subscriptions and products with their prices, newest first. Keys and card numbers are never shown.
 */
export function summarizeStripe(state: unknown): TwinSummary {
  const objects = record(record(record(state)?.state)?.objects) ?? {};
  const all = Object.values(objects)
    .map((entry) => ({ seq: Number(record(entry)?.seq ?? 0), data: record(record(entry)?.data) }))
    .filter((o): o is { seq: number; data: Record<string, unknown> } => !!o.data)
    .sort((a, b) => b.seq - a.seq)
    .map((o) => o.data);
  const ofType = (type: string) => all.filter((o) => o.object === type);
  const priceText = (price: Record<string, unknown>) => {
    const interval = text(record(price.recurring)?.interval);
    return `${money(price.unit_amount, price.currency)}${interval ? ` / ${interval}` : ''}`;
  };
  const prices = ofType('price');
  // Where Stripe's Dashboard shows it (Developers → API version): the version unpinned requests get.
  const apiVersion = text(record(record(state)?.state)?.api_version) || CURRENT_VERSION;
  const endpoints = ofType('webhook_endpoint').filter((e) => !e.deleted);
  return {
    tables: [
      summaryTable(
        'API versions',
        ['Used by', 'Version'],
        [
          ['Account default', apiVersion],
          ...endpoints.map((e) => [`Webhook endpoint ${text(e.id)}`, text(e.api_version) || apiVersion]),
        ],
      ),
      summaryTable(
        'Customers',
        ['ID', 'E-mail', 'Name', 'Default payment method', 'Created'],
        ofType('customer').map((c) => [
          text(c.id),
          text(c.email),
          text(c.name),
          text(record(c.invoice_settings)?.default_payment_method),
          when(c.created),
        ]),
      ),
      summaryTable(
        'Payment intents',
        ['ID', 'Amount', 'Status', 'Customer', 'Created'],
        ofType('payment_intent').map((p) => [
          text(p.id),
          money(p.amount, p.currency),
          text(p.status),
          text(p.customer),
          when(p.created),
        ]),
      ),
      summaryTable(
        'Subscriptions',
        ['ID', 'Customer', 'Status', 'Items', 'Created'],
        ofType('subscription').map((s) => {
          const items = record(s.items)?.data;
          const priced = Array.isArray(items)
            ? items.map((item) => text(record(record(item)?.price)?.id) || text(record(item)?.price))
            : [];
          return [text(s.id), text(s.customer), text(s.status), priced.join(', '), when(s.created)];
        }),
      ),
      summaryTable(
        'Products',
        ['ID', 'Name', 'Prices', 'Active'],
        ofType('product').map((p) => [
          text(p.id),
          text(p.name),
          prices
            .filter((price) => price.product === p.id)
            .map(priceText)
            .join(', '),
          p.active === false ? 'no' : 'yes',
        ]),
      ),
    ],
  };
}
