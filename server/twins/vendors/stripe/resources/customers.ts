/** Customers: `/v1/customers`, and their search (search.ts). */
import { randomBytes } from 'node:crypto';
import { invalid } from '../errors.ts';
import {
  int,
  listLimit,
  mergeMetadata,
  metadata,
  missingParam,
  obj,
  str,
  type FormObject,
} from '../params.ts';
import { matchesSearch, parseSearchQuery } from '../search.ts';
import { previousOf, type StripeStore } from '../store.ts';

/** An address as Stripe returns it: every field present, null when not given. */
export const address = () => ({
  city: null,
  country: null,
  line1: null,
  line2: null,
  postal_code: null,
  state: null,
});

export function createCustomer(store: StripeStore, b: FormObject, emitOpts?: { idempotencyKey?: string }) {
  const c = store.insert('customer', {
    address: obj(b.address) ? { ...address(), ...metadata(b.address) } : null,
    balance: int(b.balance, 'balance') ?? 0,
    currency: null,
    default_source: null,
    delinquent: false,
    description: str(b.description) ?? null,
    discount: null,
    email: str(b.email) ?? null,
    invoice_prefix: randomBytes(4).toString('hex').toUpperCase(),
    invoice_settings: {
      custom_fields: null,
      default_payment_method: str(obj(b.invoice_settings)?.default_payment_method) ?? null,
      footer: null,
      rendering_options: null,
    },
    metadata: metadata(b.metadata),
    name: str(b.name) ?? null,
    next_invoice_sequence: 1,
    phone: str(b.phone) ?? null,
    preferred_locales: [],
    shipping: null,
    tax_exempt: 'none',
    test_clock: null,
  });
  store.event('customer.created', c, emitOpts);
  return c;
}

export function updateCustomer(store: StripeStore, id: string, b: FormObject) {
  const c = store.find('customer', id);
  const changes: Record<string, unknown> = {};
  for (const k of ['email', 'name', 'description', 'phone'])
    if (str(b[k]) !== undefined) changes[k] = str(b[k]) || null;
  if (b.metadata !== undefined) changes.metadata = mergeMetadata(c.metadata, b.metadata);
  if (obj(b.address)) changes.address = { ...address(), ...metadata(b.address) };
  const dpm = str(obj(b.invoice_settings)?.default_payment_method);
  if (dpm !== undefined) {
    if (dpm) store.find('payment_method', dpm, 'invoice_settings[default_payment_method]');
    changes.invoice_settings = {
      ...(c.invoice_settings as object),
      default_payment_method: dpm || null,
    };
  }
  const updated = store.update(id, changes);
  store.event('customer.updated', updated, undefined, previousOf(c, changes));
  return updated;
}

export function deleteCustomer(store: StripeStore, id: string) {
  store.find('customer', id);
  store.update(id, { deleted: true });
  store.event('customer.deleted', store.state.objects[id]!.data);
  return { id, object: 'customer', deleted: true };
}

export function listCustomers(store: StripeStore, q: URLSearchParams) {
  const email = q.get('email');
  return store.list('customer', q, '/v1/customers', (c) => !email || c.email === email);
}

/**
 * `GET /v1/customers/search`: Stripe's search query language over email, name, phone, metadata and
 * created (search.ts). Pages with `page` (the `next_page` of the previous result).
 */
export function searchCustomers(store: StripeStore, q: URLSearchParams) {
  const query = q.get('query');
  if (query === null) missingParam('query');
  const search = parseSearchQuery(query, ['email', 'name', 'phone', 'metadata', 'created']);
  const limit = listLimit(q);
  const page = q.get('page');
  const offset = page ? Number(/^p(\d{1,9})$/.exec(page)?.[1] ?? NaN) : 0;
  if (!Number.isInteger(offset)) throw invalid(`Invalid page: ${page}`, 'page');
  const all = Object.values(store.state.objects)
    .filter((e) => e.data.object === 'customer' && !e.data.deleted && matchesSearch(search, e.data))
    .sort((a, b) => b.seq - a.seq)
    .map((e) => e.data);
  const data = all.slice(offset, offset + limit);
  const more = offset + limit < all.length;
  return {
    object: 'search_result',
    url: '/v1/customers/search',
    has_more: more,
    data,
    next_page: more ? `p${offset + limit}` : null,
    ...(q.getAll('expand[]').includes('total_count') || q.get('expand[0]') === 'total_count'
      ? { total_count: all.length }
      : {}),
  };
}
