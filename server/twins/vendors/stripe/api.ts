/**
 * Our Stripe simulator. We do not use emulate's Stripe service: it ignores Idempotency-Key, has no
 * payment-method creation, never declines, checks no API key and sends events without id/created.
 * State is one plain JSON object, so snapshot/restore/persistence are trivial.
 *
 * This file holds the store (insert, find, update, list, events) and the payments objects: customers,
 * products, prices, payment methods, payment intents, charges and refunds. Billing (billing.ts),
 * Checkout (checkout.ts) and webhook endpoints (webhook-endpoints.ts) build on it.
 */
import { randomBytes } from 'node:crypto';
import { isForbiddenKey, ownValue, setOwn } from '../../runtime/safe-json.ts';
import { cardOutcome, magicCardNumber } from './cards.ts';
import type { FormObject, FormValue } from './form.ts';
import { StripeError } from './errors.ts';
import { parseSearchQuery, matchesSearch } from './search.ts';

export type StripeObject = Record<string, unknown> & { id: string; object: string; created: number };

export interface StripeState {
  seq: number;
  /** Every object by id; `_seq` orders lists (newest first) where `created` seconds would tie. */
  objects: Record<string, { seq: number; data: StripeObject; hidden?: Record<string, unknown> }>;
  idempotency: Record<string, { fingerprint: string; status: number; body: unknown }>;
}

export const emptyStripeState = (): StripeState => ({ seq: 0, objects: {}, idempotency: {} });

/** The API version the twin speaks: stripe-node 23's pinned one (its events and webhooks carry it). */
export const STRIPE_API_VERSION = '2026-10-28.endive';

export { StripeError };

export const invalid = (message: string, param?: string, code?: string) =>
  new StripeError(400, {
    type: 'invalid_request_error',
    message,
    ...(param ? { param } : {}),
    ...(code ? { code } : {}),
  });
export const missing = (type: string, id: string, param?: string) =>
  new StripeError(param ? 400 : 404, {
    type: 'invalid_request_error',
    code: 'resource_missing',
    message: `No such ${type.replace(/^checkout\.session$/, 'checkout session')}: '${id}'`,
    ...(param ? { param } : {}),
  });

const PREFIX: Record<string, string> = {
  customer: 'cus',
  product: 'prod',
  price: 'price',
  payment_method: 'pm',
  payment_intent: 'pi',
  charge: 'ch',
  refund: 're',
  event: 'evt',
  subscription: 'sub',
  subscription_item: 'si',
  invoice: 'in',
  invoiceitem: 'ii',
  line_item: 'il',
  item: 'li',
  'checkout.session': 'cs_test',
  webhook_endpoint: 'we',
};

export function newId(prefix: string, length = 14): string {
  const random = randomBytes(Math.ceil(length * 0.8) + 2)
    .toString('base64url')
    .replace(/[-_]/g, 'x');
  return `${prefix}_${random.slice(0, length)}`;
}

export const now = () => Math.floor(Date.now() / 1000);
export const str = (v: FormValue | undefined): string | undefined => (typeof v === 'string' ? v : undefined);
export const obj = (v: FormValue | undefined): FormObject | undefined =>
  v && typeof v === 'object' && !Array.isArray(v) ? v : undefined;
/** A form array (`items[0][price]=...`), or an object keyed by index when the client sent gaps. */
export const arr = (v: FormValue | undefined): FormValue[] =>
  Array.isArray(v) ? v : v && typeof v === 'object' ? Object.values(v) : [];
/** Metadata as Stripe stores it: string values only, an empty string deletes the key on update. */
export const metadata = (v: FormValue | undefined): Record<string, string> => {
  const out: Record<string, string> = {};
  for (const [k, value] of Object.entries(obj(v) ?? {})) if (typeof value === 'string') setOwn(out, k, value);
  return out;
};
export function mergeMetadata(current: unknown, v: FormValue | undefined): Record<string, string> {
  // `metadata=` (empty) clears all keys, as on Stripe.
  if (v === '') return {};
  const merged: Record<string, string> = { ...((current as Record<string, string> | null) ?? {}) };
  for (const [k, value] of Object.entries(metadata(v))) {
    if (value === '') delete merged[k];
    else setOwn(merged, k, value);
  }
  return merged;
}

export function bool(v: FormValue | undefined, param: string): boolean | undefined {
  if (v === undefined) return undefined;
  if (v === 'true') return true;
  if (v === 'false') return false;
  throw invalid(`Invalid boolean: ${typeof v === 'string' ? v : 'a hash'}`, param);
}

export function int(
  v: FormValue | undefined,
  param: string,
  opts: { required?: boolean; min?: number } = {},
): number | undefined {
  if (v === undefined || v === '') {
    if (opts.required) throw invalid(`Missing required param: ${param}.`, param, 'parameter_missing');
    return undefined;
  }
  // Checked before Number(): a nested value (`amount[x]=1`) is a prototype-less object, not a number.
  const n = typeof v === 'string' ? Number(v) : NaN;
  if (!Number.isSafeInteger(n) || n < (opts.min ?? 0)) {
    const shown = typeof v === 'string' ? v : Array.isArray(v) ? 'an array' : 'a hash';
    throw invalid(`Invalid integer: ${shown}`, param, 'parameter_invalid_integer');
  }
  return n;
}

export function required(v: FormValue | undefined, param: string): string {
  const s = str(v);
  if (!s) throw invalid(`Missing required param: ${param}.`, param, 'parameter_missing');
  return s;
}

export function oneOf<T extends string>(
  v: FormValue | undefined,
  param: string,
  allowed: readonly T[],
): T | undefined {
  if (v === undefined) return undefined;
  if (typeof v === 'string' && (allowed as readonly string[]).includes(v)) return v as T;
  throw invalid(
    `Invalid ${param}: must be one of ${allowed.join(', ')}`,
    param,
    'parameter_invalid_string_empty',
  );
}

export function currencyOf(v: FormValue | undefined, param = 'currency'): string {
  const c = required(v, param).toLowerCase();
  if (!/^[a-z]{3}$/.test(c)) throw invalid(`Invalid currency: ${c}.`, param);
  return c;
}

/** Emits an event: recorded (GET /v1/events) and handed to the webhook outboxes. */
export type EventSink = (event: StripeObject) => void;

const address = () => ({
  city: null,
  country: null,
  line1: null,
  line2: null,
  postal_code: null,
  state: null,
});

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

export class StripeApi {
  /** Told when a payment intent succeeds, however it was confirmed (billing pays the invoice behind it). */
  onIntentSucceeded: ((intent: StripeObject) => void) | undefined;

  constructor(
    public state: StripeState,
    /** Receives each event; `null` for seeding, which records no events at all (they were not API calls). */
    private readonly emit: EventSink | null,
  ) {}

  /** Stores a new object. Used by every part of the simulator; `id` is a caller-chosen one to check. */
  insert(
    type: string,
    data: Record<string, unknown>,
    hidden?: Record<string, unknown>,
    id?: string,
  ): StripeObject {
    if (id !== undefined) {
      // A caller-chosen id (products, prices) is a key of `objects`: it must be new and a plain name.
      if (id === '' || id.length > 255 || isForbiddenKey(id)) throw invalid(`Invalid id: '${id}'`, 'id');
      if (ownValue(this.state.objects, id)) {
        throw invalid(
          `A ${type.replace(/_/g, ' ')} with the id '${id}' already exists.`,
          'id',
          'resource_already_exists',
        );
      }
    }
    const object = {
      id: id ?? newId(PREFIX[type]!, type === 'checkout.session' ? 58 : 14),
      object: type,
      created: now(),
      livemode: false,
      ...data,
    } as StripeObject;
    setOwn(this.state.objects, object.id, {
      seq: ++this.state.seq,
      data: object,
      ...(hidden ? { hidden } : {}),
    });
    return object;
  }

  find(type: string, id: string, param?: string): StripeObject {
    // Ids come from URLs and bodies: only the state's own entries, never a prototype property.
    const entry = ownValue(this.state.objects, id);
    if (!entry || entry.data.object !== type || entry.data.deleted) throw missing(type, id, param);
    return entry.data;
  }

  /** An object by id whatever its type (expansion), or undefined. */
  lookup(id: string): StripeObject | undefined {
    const entry = ownValue(this.state.objects, id);
    return entry && !entry.data.deleted ? entry.data : undefined;
  }

  hidden(id: string): Record<string, unknown> {
    const entry = this.state.objects[id]!;
    entry.hidden ??= {};
    return entry.hidden;
  }

  update(id: string, changes: Record<string, unknown>): StripeObject {
    const entry = this.state.objects[id]!;
    entry.data = { ...entry.data, ...changes };
    return entry.data;
  }

  event(type: string, object: StripeObject, request?: { idempotencyKey?: string }, previous?: object) {
    if (!this.emit) return;
    const event = this.insert('event', {
      api_version: STRIPE_API_VERSION,
      type,
      data: { object: structuredClone(object), ...(previous ? { previous_attributes: previous } : {}) },
      pending_webhooks: 1,
      request: { id: null, idempotency_key: request?.idempotencyKey ?? null },
    });
    this.emit(event);
  }

  /** Lists objects of a type, newest first, with Stripe's cursor pagination. */
  list(type: string, query: URLSearchParams, url: string, filter: (o: StripeObject) => boolean = () => true) {
    const limit = listLimit(query);
    let items = Object.values(this.state.objects)
      .filter((e) => e.data.object === type && !e.data.deleted && filter(e.data))
      .sort((a, b) => b.seq - a.seq)
      .map((e) => e.data);
    const after = query.get('starting_after');
    const before = query.get('ending_before');
    if (after) {
      const i = items.findIndex((o) => o.id === after);
      if (i === -1) throw missing(type, after, 'starting_after');
      items = items.slice(i + 1);
    } else if (before) {
      const i = items.findIndex((o) => o.id === before);
      if (i === -1) throw missing(type, before, 'ending_before');
      items = items.slice(Math.max(0, i - limit), i);
      return { object: 'list', url, has_more: i - limit > 0, data: items };
    }
    return { object: 'list', url, has_more: items.length > limit, data: items.slice(0, limit) };
  }

  // Customers

  createCustomer(b: FormObject, emitOpts?: { idempotencyKey?: string }) {
    const c = this.insert('customer', {
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
    this.event('customer.created', c, emitOpts);
    return c;
  }

  updateCustomer(id: string, b: FormObject) {
    const c = this.find('customer', id);
    const changes: Record<string, unknown> = {};
    for (const k of ['email', 'name', 'description', 'phone'])
      if (str(b[k]) !== undefined) changes[k] = str(b[k]) || null;
    if (b.metadata !== undefined) changes.metadata = mergeMetadata(c.metadata, b.metadata);
    if (obj(b.address)) changes.address = { ...address(), ...metadata(b.address) };
    const dpm = str(obj(b.invoice_settings)?.default_payment_method);
    if (dpm !== undefined) {
      if (dpm) this.find('payment_method', dpm, 'invoice_settings[default_payment_method]');
      changes.invoice_settings = {
        ...(c.invoice_settings as object),
        default_payment_method: dpm || null,
      };
    }
    const updated = this.update(id, changes);
    this.event('customer.updated', updated, undefined, previousOf(c, changes));
    return updated;
  }

  deleteCustomer(id: string) {
    this.find('customer', id);
    this.update(id, { deleted: true });
    this.event('customer.deleted', this.state.objects[id]!.data);
    return { id, object: 'customer', deleted: true };
  }

  listCustomers(q: URLSearchParams) {
    const email = q.get('email');
    return this.list('customer', q, '/v1/customers', (c) => !email || c.email === email);
  }

  /**
   * `GET /v1/customers/search`: Stripe's search query language over email, name, phone, metadata and
   * created (search.ts). Pages with `page` (the `next_page` of the previous result).
   */
  searchCustomers(q: URLSearchParams) {
    const query = q.get('query');
    if (query === null) throw invalid('Missing required param: query.', 'query', 'parameter_missing');
    const search = parseSearchQuery(query, ['email', 'name', 'phone', 'metadata', 'created']);
    const limit = listLimit(q);
    const page = q.get('page');
    const offset = page ? Number(/^p(\d{1,9})$/.exec(page)?.[1] ?? NaN) : 0;
    if (!Number.isInteger(offset)) throw invalid(`Invalid page: ${page}`, 'page');
    const all = Object.values(this.state.objects)
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

  // Products and prices

  createProduct(b: FormObject) {
    const p = this.insert(
      'product',
      {
        active: bool(b.active, 'active') ?? true,
        default_price: null,
        description: str(b.description) ?? null,
        images: arr(b.images).filter((i): i is string => typeof i === 'string'),
        marketing_features: [],
        metadata: metadata(b.metadata),
        name: required(b.name, 'name'),
        package_dimensions: null,
        shippable: null,
        statement_descriptor: str(b.statement_descriptor) ?? null,
        tax_code: null,
        tax_details: null,
        type: 'service',
        unit_label: str(b.unit_label) ?? null,
        updated: now(),
        url: str(b.url) ?? null,
      },
      undefined,
      str(b.id),
    );
    this.event('product.created', p);
    const defaultPrice = obj(b.default_price_data);
    if (defaultPrice) this.createPrice({ ...defaultPrice, product: p.id });
    return this.find('product', p.id);
  }

  updateProduct(id: string, b: FormObject) {
    const p = this.find('product', id);
    const changes: Record<string, unknown> = { updated: now() };
    for (const k of ['name', 'description']) if (str(b[k]) !== undefined) changes[k] = str(b[k]);
    const active = bool(b.active, 'active');
    if (active !== undefined) changes.active = active;
    if (b.metadata !== undefined) changes.metadata = mergeMetadata(p.metadata, b.metadata);
    const defaultPrice = str(b.default_price);
    if (defaultPrice) {
      const price = this.find('price', defaultPrice, 'default_price');
      if (price.product !== id) throw invalid('The price must belong to this product.', 'default_price');
      changes.default_price = defaultPrice;
    }
    const updated = this.update(id, changes);
    this.event('product.updated', updated, undefined, previousOf(p, changes));
    return updated;
  }

  createPrice(b: FormObject) {
    const currency = currencyOf(b.currency);
    const unitAmount = int(b.unit_amount, 'unit_amount');
    const decimal = str(b.unit_amount_decimal);
    if (unitAmount === undefined && decimal === undefined && str(b.custom_unit_amount) === undefined) {
      throw invalid('Missing required param: unit_amount.', 'unit_amount', 'parameter_missing');
    }
    if (decimal !== undefined && !/^\d+(\.\d{1,12})?$/.test(decimal)) {
      throw invalid(`Invalid decimal: ${decimal}`, 'unit_amount_decimal');
    }
    let product = str(b.product);
    const productData = obj(b.product_data);
    if (product) this.find('product', product, 'product');
    else if (productData) product = this.createProduct(productData).id;
    else throw invalid('Missing required param: product.', 'product', 'parameter_missing');
    const recurring = obj(b.recurring);
    const amount = unitAmount ?? (decimal !== undefined ? Math.round(Number(decimal)) : null);
    const price = this.insert(
      'price',
      {
        active: bool(b.active, 'active') ?? true,
        billing_scheme: 'per_unit',
        currency,
        custom_unit_amount: null,
        lookup_key: str(b.lookup_key) ?? null,
        metadata: metadata(b.metadata),
        nickname: str(b.nickname) ?? null,
        product,
        recurring: recurring
          ? {
              interval:
                oneOf(recurring.interval, 'recurring[interval]', INTERVALS) ??
                missingParam('recurring[interval]'),
              interval_count: int(recurring.interval_count, 'recurring[interval_count]', { min: 1 }) ?? 1,
              meter: null,
              trial_period_days: int(recurring.trial_period_days, 'recurring[trial_period_days]') ?? null,
              usage_type: 'licensed',
            }
          : null,
        tax_behavior: 'unspecified',
        tiers_mode: null,
        transform_quantity: null,
        type: recurring ? 'recurring' : 'one_time',
        unit_amount: amount,
        unit_amount_decimal: decimal ?? (amount === null ? null : String(amount)),
      },
      undefined,
      str(b.id),
    );
    const prod = this.state.objects[product]!.data;
    if (!prod.default_price) this.update(product, { default_price: price.id });
    this.event('price.created', price);
    return price;
  }

  updatePrice(id: string, b: FormObject) {
    const p = this.find('price', id);
    const changes: Record<string, unknown> = {};
    const active = bool(b.active, 'active');
    if (active !== undefined) changes.active = active;
    for (const k of ['nickname', 'lookup_key']) if (str(b[k]) !== undefined) changes[k] = str(b[k]) || null;
    if (b.metadata !== undefined) changes.metadata = mergeMetadata(p.metadata, b.metadata);
    const updated = this.update(id, changes);
    this.event('price.updated', updated, undefined, previousOf(p, changes));
    return updated;
  }

  listPrices(q: URLSearchParams) {
    const product = q.get('product');
    const active = q.get('active');
    const type = q.get('type');
    const lookupKeys = [...q.entries()].filter(([k]) => /^lookup_keys\[\d*\]$/.test(k)).map(([, v]) => v);
    return this.list(
      'price',
      q,
      '/v1/prices',
      (p) =>
        (!product || p.product === product) &&
        (!active || String(p.active) === active) &&
        (!type || p.type === type) &&
        (!lookupKeys.length || lookupKeys.includes(String(p.lookup_key))),
    );
  }

  /**
   * A price from `price` (an id) or `price_data` (a new price, as Stripe makes for line items): the
   * price object either way.
   */
  resolvePrice(price: FormValue | undefined, priceData: FormValue | undefined, param: string): StripeObject {
    const id = str(price);
    if (id) return this.find('price', id, `${param}[price]`);
    const data = obj(priceData);
    if (!data) {
      throw invalid(
        `You must specify either \`price\` or \`price_data\` in ${param}.`,
        param,
        'parameter_missing',
      );
    }
    return this.createPrice(data);
  }

  // Payment methods

  /** A payment method from card details, a test token, or a magic `pm_card_*` id (which makes a new one). */
  createPaymentMethod(b: FormObject) {
    const type = str(b.type) ?? 'card';
    if (type !== 'card') throw invalid(`Invalid type: only 'card' is supported by this twin.`, 'type');
    const card = obj(b.card) ?? {};
    const token = str(card.token);
    const number = token ? magicCardNumber(token) : str(card.number)?.replace(/\s/g, '');
    if (token && !number) throw missing('token', token, 'card[token]');
    if (!number) throw invalid('Missing required param: card[number].', 'card[number]', 'parameter_missing');
    return this.paymentMethodFor(number, {
      exp_month: int(card.exp_month, 'card[exp_month]', { min: 1 }) ?? 12,
      exp_year: int(card.exp_year, 'card[exp_year]') ?? new Date().getFullYear() + 3,
      billing_details: obj(b.billing_details) ?? {},
      metadata: metadata(b.metadata),
    });
  }

  paymentMethodFor(number: string, extra: Record<string, unknown> = {}) {
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
    return this.insert(
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
  resolvePaymentMethod(id: string, param = 'payment_method'): StripeObject {
    const magic = magicCardNumber(id);
    if (magic) return this.paymentMethodFor(magic);
    return this.find('payment_method', id, param);
  }

  /** Throws the card error a charge on this payment method would get, and creates nothing. */
  assertChargeable(pmId: string): void {
    const number = String(ownValue(this.state.objects, pmId)?.hidden?.number ?? '');
    const decline = cardOutcome(number)?.decline;
    if (decline) {
      throw new StripeError(402, {
        type: 'card_error',
        code: decline.code,
        ...(decline.decline_code ? { decline_code: decline.decline_code } : {}),
        message: decline.message,
        doc_url: `https://docs.stripe.com/error-codes/${decline.code.replace(/_/g, '-')}`,
      });
    }
  }

  attachPaymentMethod(id: string, b: FormObject) {
    const customer = required(b.customer, 'customer');
    this.find('customer', customer, 'customer');
    const pm = this.resolvePaymentMethod(id, 'payment_method');
    if (pm.customer && pm.customer !== customer) {
      throw invalid(
        'This PaymentMethod is already attached to a different customer.',
        undefined,
        'payment_method_unexpected_state',
      );
    }
    const attached = this.update(pm.id, { customer });
    this.event('payment_method.attached', attached);
    return attached;
  }

  detachPaymentMethod(id: string) {
    const pm = this.find('payment_method', id);
    if (!pm.customer)
      throw invalid(
        'The payment method you provided is not attached to a customer.',
        undefined,
        'payment_method_unexpected_state',
      );
    const detached = this.update(id, { customer: null });
    this.event('payment_method.detached', detached);
    return detached;
  }

  // Payment intents

  createPaymentIntent(b: FormObject, idempotencyKey?: string) {
    const amount = int(b.amount, 'amount', { required: true, min: 1 })!;
    const currency = currencyOf(b.currency);
    const customer = str(b.customer);
    if (customer) this.find('customer', customer, 'customer');
    const pmParam = str(b.payment_method);
    const pm = pmParam ? this.resolvePaymentMethod(pmParam) : undefined;
    const captureMethod =
      oneOf(b.capture_method, 'capture_method', ['automatic', 'automatic_async', 'manual'] as const) ??
      'automatic_async';
    const id = newId('pi');
    const pi = this.insert(
      'payment_intent',
      {
        allowed_payment_method_types: null,
        amount,
        amount_capturable: 0,
        amount_received: 0,
        application: null,
        application_fee_amount: null,
        automatic_payment_methods: null,
        canceled_at: null,
        cancellation_reason: null,
        capture_method: captureMethod,
        client_secret: `${id}_secret_${randomBytes(12).toString('hex')}`,
        confirmation_method: 'automatic',
        currency,
        customer: customer ?? null,
        customer_account: null,
        description: str(b.description) ?? null,
        excluded_payment_method_types: null,
        last_payment_error: null,
        latest_charge: null,
        managed_payments: null,
        metadata: metadata(b.metadata),
        next_action: null,
        on_behalf_of: null,
        payment_method: pm?.id ?? null,
        payment_method_configuration_details: null,
        payment_method_options: {
          card: {
            installments: null,
            mandate_options: null,
            network: null,
            request_three_d_secure: 'automatic',
          },
        },
        payment_method_types: ['card'],
        payment_record: null,
        processing: null,
        receipt_email: str(b.receipt_email) ?? null,
        review: null,
        setup_future_usage: str(b.setup_future_usage) ?? null,
        shipping: null,
        source: null,
        statement_descriptor: str(b.statement_descriptor) ?? null,
        statement_descriptor_suffix: null,
        status: pm ? 'requires_confirmation' : 'requires_payment_method',
        transfer_group: null,
      },
      undefined,
      id,
    );
    this.event('payment_intent.created', pi, { idempotencyKey });
    if (bool(b.confirm, 'confirm')) return this.confirmPaymentIntent(pi.id, {}, idempotencyKey);
    return pi;
  }

  updatePaymentIntent(id: string, b: FormObject) {
    const pi = this.find('payment_intent', id);
    if (['succeeded', 'canceled'].includes(pi.status as string)) {
      throw invalid(
        `This PaymentIntent's status is ${String(pi.status)}, which does not allow updates.`,
        undefined,
        'payment_intent_unexpected_state',
      );
    }
    const changes: Record<string, unknown> = {};
    const amount = int(b.amount, 'amount', { min: 1 });
    if (amount !== undefined) changes.amount = amount;
    if (str(b.description) !== undefined) changes.description = str(b.description);
    if (b.metadata !== undefined) changes.metadata = mergeMetadata(pi.metadata, b.metadata);
    if (str(b.customer)) changes.customer = this.find('customer', str(b.customer)!, 'customer').id;
    if (str(b.payment_method)) {
      changes.payment_method = this.resolvePaymentMethod(str(b.payment_method)!).id;
      changes.status = 'requires_confirmation';
    }
    return this.update(id, changes);
  }

  confirmPaymentIntent(id: string, b: FormObject, idempotencyKey?: string) {
    const pi = this.find('payment_intent', id);
    if (!['requires_confirmation', 'requires_payment_method'].includes(pi.status as string)) {
      throw invalid(
        `This PaymentIntent's status is ${String(pi.status)}, which does not allow confirmation.`,
        undefined,
        'payment_intent_unexpected_state',
      );
    }
    const pmId = str(b.payment_method)
      ? this.resolvePaymentMethod(str(b.payment_method)!).id
      : (pi.payment_method as string | null);
    if (!pmId) {
      throw invalid(
        "You cannot confirm this PaymentIntent because it's missing a payment method.",
        undefined,
        'payment_intent_unexpected_state',
      );
    }
    const pmEntry = this.state.objects[pmId]!;
    const outcome = cardOutcome(String(pmEntry.hidden?.number ?? ''))!;
    const decline = outcome.decline;
    const manual = pi.capture_method === 'manual';
    const charge = this.insert('charge', chargeShape(pi, pmEntry.data, decline));
    if (decline) {
      const error = {
        type: 'card_error',
        code: decline.code,
        ...(decline.decline_code ? { decline_code: decline.decline_code } : {}),
        message: decline.message,
        charge: charge.id,
        doc_url: `https://docs.stripe.com/error-codes/${decline.code.replace(/_/g, '-')}`,
        payment_method: pmEntry.data,
      };
      const failed = this.update(pi.id, {
        payment_method: null,
        status: 'requires_payment_method',
        latest_charge: charge.id,
        last_payment_error: error,
      });
      this.event('charge.failed', charge, { idempotencyKey });
      this.event('payment_intent.payment_failed', failed, { idempotencyKey });
      throw new StripeError(402, { ...error, payment_intent: failed });
    }
    const done = this.update(pi.id, {
      payment_method: pmId,
      status: manual ? 'requires_capture' : 'succeeded',
      amount_received: manual ? 0 : pi.amount,
      amount_capturable: manual ? pi.amount : 0,
      latest_charge: charge.id,
      last_payment_error: null,
    });
    this.event('charge.succeeded', charge, { idempotencyKey });
    this.event(manual ? 'payment_intent.amount_capturable_updated' : 'payment_intent.succeeded', done, {
      idempotencyKey,
    });
    if (!manual) this.onIntentSucceeded?.(done);
    return this.find('payment_intent', pi.id);
  }

  capturePaymentIntent(id: string, b: FormObject = {}) {
    const pi = this.find('payment_intent', id);
    if (pi.status !== 'requires_capture') {
      throw invalid(
        `This PaymentIntent could not be captured because it has a status of ${String(pi.status)}.`,
        undefined,
        'payment_intent_unexpected_state',
      );
    }
    const amount = int(b.amount_to_capture, 'amount_to_capture', { min: 1 }) ?? (pi.amount as number);
    if (amount > (pi.amount as number)) {
      throw invalid('The amount to capture cannot exceed the amount capturable.', 'amount_to_capture');
    }
    if (pi.latest_charge) {
      const charge = this.update(pi.latest_charge as string, { captured: true, amount_captured: amount });
      this.event('charge.captured', charge);
    }
    const done = this.update(id, { status: 'succeeded', amount_received: amount, amount_capturable: 0 });
    this.event('payment_intent.succeeded', done);
    return done;
  }

  cancelPaymentIntent(id: string, b: FormObject) {
    const pi = this.find('payment_intent', id);
    if (['succeeded', 'canceled'].includes(pi.status as string)) {
      throw invalid(
        `You cannot cancel this PaymentIntent because it has a status of ${String(pi.status)}.`,
        undefined,
        'payment_intent_unexpected_state',
      );
    }
    const done = this.update(id, {
      status: 'canceled',
      canceled_at: now(),
      cancellation_reason:
        oneOf(b.cancellation_reason, 'cancellation_reason', [
          'abandoned',
          'duplicate',
          'fraudulent',
          'requested_by_customer',
        ] as const) ?? null,
    });
    this.event('payment_intent.canceled', done);
    return done;
  }

  // Charges and refunds

  listCharges(q: URLSearchParams) {
    return this.list(
      'charge',
      q,
      '/v1/charges',
      (c) =>
        (!q.get('customer') || c.customer === q.get('customer')) &&
        (!q.get('payment_intent') || c.payment_intent === q.get('payment_intent')),
    );
  }

  /**
   * `POST /v1/refunds`: of a charge or of a payment intent's latest charge, all of what is left unless
   * `amount` says less. Test-mode refunds succeed at once, as Stripe's do.
   */
  createRefund(b: FormObject, idempotencyKey?: string) {
    const chargeParam = str(b.charge);
    const piParam = str(b.payment_intent);
    if (!chargeParam && !piParam) {
      throw invalid(
        'One of the following params should be provided for this request: payment_intent or charge.',
      );
    }
    let charge: StripeObject;
    if (chargeParam) charge = this.find('charge', chargeParam, 'charge');
    else {
      const pi = this.find('payment_intent', piParam!, 'payment_intent');
      const latest = pi.latest_charge ? this.lookup(pi.latest_charge as string) : undefined;
      if (pi.status !== 'succeeded' || !latest || latest.status !== 'succeeded') {
        throw invalid(
          `This PaymentIntent (${pi.id}) does not have a successful charge to refund.`,
          'payment_intent',
          'charge_not_refundable',
        );
      }
      charge = latest;
    }
    if (piParam && charge.payment_intent !== piParam) {
      throw invalid(`Charge ${charge.id} does not belong to PaymentIntent ${piParam}.`, 'charge');
    }
    if (charge.status !== 'succeeded' || !charge.captured) {
      throw invalid(`Charge ${charge.id} has not been captured and cannot be refunded.`, 'charge');
    }
    const left = (charge.amount_captured as number) - (charge.amount_refunded as number);
    if (left <= 0) {
      throw invalid(`Charge ${charge.id} has already been refunded.`, 'charge', 'charge_already_refunded');
    }
    const amount = int(b.amount, 'amount', { min: 1 }) ?? left;
    if (amount > left) {
      const shown = (n: number) => `$${(n / 100).toFixed(2)}`;
      throw invalid(
        `Refund amount (${shown(amount)}) is greater than unrefunded amount on charge (${shown(left)})`,
        'amount',
        'amount_too_large',
      );
    }
    const refund = this.insert('refund', {
      amount,
      balance_transaction: null,
      charge: charge.id,
      currency: charge.currency,
      customer: charge.customer ?? null,
      customer_account: null,
      destination_details: {
        card: { reference_status: 'pending', reference_type: 'acquirer_reference_number', type: 'refund' },
        type: 'card',
      },
      metadata: metadata(b.metadata),
      payment_intent: charge.payment_intent ?? null,
      payment_method: charge.payment_method ?? null,
      reason:
        oneOf(b.reason, 'reason', ['duplicate', 'fraudulent', 'requested_by_customer'] as const) ?? null,
      receipt_number: null,
      source_transfer_reversal: null,
      status: 'succeeded',
      transfer_reversal: null,
    });
    const refunded = (charge.amount_refunded as number) + amount;
    const updatedCharge = this.update(charge.id, {
      amount_refunded: refunded,
      refunded: refunded >= (charge.amount_captured as number),
    });
    this.event('refund.created', refund, { idempotencyKey });
    this.event('charge.refunded', updatedCharge, { idempotencyKey });
    return refund;
  }

  updateRefund(id: string, b: FormObject) {
    const refund = this.find('refund', id);
    const changes: Record<string, unknown> = {};
    if (b.metadata !== undefined) changes.metadata = mergeMetadata(refund.metadata, b.metadata);
    const updated = this.update(id, changes);
    this.event('refund.updated', updated, undefined, previousOf(refund, changes));
    return updated;
  }

  listRefunds(q: URLSearchParams) {
    return this.list(
      'refund',
      q,
      '/v1/refunds',
      (r) =>
        (!q.get('charge') || r.charge === q.get('charge')) &&
        (!q.get('payment_intent') || r.payment_intent === q.get('payment_intent')),
    );
  }

  get(type: string, id: string) {
    return this.find(type, id);
  }
}

const INTERVALS = ['day', 'week', 'month', 'year'] as const;

function missingParam(param: string): never {
  throw invalid(`Missing required param: ${param}.`, param, 'parameter_missing');
}

export function listLimit(query: URLSearchParams): number {
  const limitRaw = query.get('limit');
  const limit = limitRaw === null ? 10 : Number(limitRaw);
  if (!Number.isInteger(limit) || limit < 1 || limit > 100) {
    throw invalid('Invalid limit: must be an integer between 1 and 100.', 'limit');
  }
  return limit;
}

/** An event's `data.previous_attributes`: the old values of the fields a change touched. */
export function previousOf(before: StripeObject, changes: Record<string, unknown>): Record<string, unknown> {
  const previous: Record<string, unknown> = {};
  for (const key of Object.keys(changes)) {
    if (key !== 'updated' && JSON.stringify(before[key]) !== JSON.stringify(changes[key])) {
      previous[key] = before[key] ?? null;
    }
  }
  return previous;
}

/** A charge of a confirmation attempt with its payment method, as Stripe records it (failed or not). */
function chargeShape(
  pi: StripeObject,
  pm: StripeObject,
  decline: { code: string; decline_code?: string; message: string } | undefined,
) {
  const card = pm.card as Record<string, unknown>;
  const manual = pi.capture_method === 'manual';
  return {
    amount: pi.amount,
    amount_captured: decline || manual ? 0 : pi.amount,
    amount_refunded: 0,
    application: null,
    application_fee: null,
    application_fee_amount: null,
    balance_transaction: null,
    billing_details: pm.billing_details,
    calculated_statement_descriptor: 'TWINBOX',
    captured: !decline && !manual,
    currency: pi.currency,
    customer: pi.customer,
    description: pi.description,
    disputed: false,
    failure_balance_transaction: null,
    failure_code: decline?.code ?? null,
    failure_message: decline?.message ?? null,
    fraud_details: {},
    metadata: pi.metadata,
    on_behalf_of: null,
    outcome: {
      advice_code: null,
      network_advice_code: null,
      network_decline_code: null,
      network_status: decline ? 'declined_by_network' : 'approved_by_network',
      reason: decline ? (decline.decline_code ?? decline.code) : null,
      risk_level: 'normal',
      seller_message: decline
        ? 'The bank did not return any further details with this decline.'
        : 'Payment complete.',
      type: decline ? 'issuer_declined' : 'authorized',
    },
    paid: !decline,
    payment_intent: pi.id,
    payment_method: pm.id,
    payment_method_details: {
      card: {
        amount_authorized: decline ? null : pi.amount,
        authorization_code: null,
        brand: card.brand,
        checks: card.checks,
        country: card.country,
        electronic_commerce_indicator: null,
        exp_month: card.exp_month,
        exp_year: card.exp_year,
        fingerprint: card.fingerprint,
        funding: card.funding,
        installments: null,
        last4: card.last4,
        mandate: null,
        network: card.brand,
        network_transaction_id: null,
        regulated_status: 'unregulated',
        three_d_secure: null,
        transaction_link_id: null,
        wallet: null,
      },
      type: 'card',
    },
    receipt_email: pi.receipt_email ?? null,
    receipt_number: null,
    receipt_url: null,
    refunded: false,
    review: null,
    shipping: null,
    source: null,
    source_transfer: null,
    statement_descriptor: null,
    statement_descriptor_suffix: null,
    status: decline ? 'failed' : 'succeeded',
    transfer_data: null,
    transfer_group: null,
  };
}
