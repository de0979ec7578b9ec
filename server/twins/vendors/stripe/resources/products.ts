/**
 * Products and prices (`/v1/products`, `/v1/prices`): one family, as in Stripe's API reference, since
 * each can make the other inline (`default_price_data`, `product_data`).
 */
import { invalid } from '../errors.ts';
import {
  arr,
  bool,
  currencyOf,
  int,
  mergeMetadata,
  metadata,
  missingParam,
  obj,
  oneOf,
  required,
  str,
  type FormObject,
  type FormValue,
} from '../params.ts';
import { now, previousOf, type StripeObject, type StripeStore } from '../store.ts';

const INTERVALS = ['day', 'week', 'month', 'year'] as const;

export function createProduct(store: StripeStore, b: FormObject) {
  const p = store.insert(
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
  store.event('product.created', p);
  const defaultPrice = obj(b.default_price_data);
  if (defaultPrice) createPrice(store, { ...defaultPrice, product: p.id });
  return store.find('product', p.id);
}

export function updateProduct(store: StripeStore, id: string, b: FormObject) {
  const p = store.find('product', id);
  const changes: Record<string, unknown> = { updated: now() };
  for (const k of ['name', 'description']) if (str(b[k]) !== undefined) changes[k] = str(b[k]);
  const active = bool(b.active, 'active');
  if (active !== undefined) changes.active = active;
  if (b.metadata !== undefined) changes.metadata = mergeMetadata(p.metadata, b.metadata);
  const defaultPrice = str(b.default_price);
  if (defaultPrice) {
    const price = store.find('price', defaultPrice, 'default_price');
    if (price.product !== id) throw invalid('The price must belong to this product.', 'default_price');
    changes.default_price = defaultPrice;
  }
  const updated = store.update(id, changes);
  store.event('product.updated', updated, undefined, previousOf(p, changes));
  return updated;
}

export function listProducts(store: StripeStore, q: URLSearchParams) {
  const active = bool(q.get('active') ?? undefined, 'active');
  return store.list('product', q, '/v1/products', (p) => active === undefined || p.active === active);
}

/** The name a line shows for a price: its product's, or the product id when that is gone. */
export function productName(store: StripeStore, price: StripeObject): string {
  const product = store.lookup(String(price.product));
  return typeof product?.name === 'string' ? product.name : String(price.product);
}

export function createPrice(store: StripeStore, b: FormObject) {
  const currency = currencyOf(b.currency);
  const unitAmount = int(b.unit_amount, 'unit_amount');
  const decimal = str(b.unit_amount_decimal);
  if (unitAmount === undefined && decimal === undefined && str(b.custom_unit_amount) === undefined) {
    missingParam('unit_amount');
  }
  if (decimal !== undefined && !/^\d+(\.\d{1,12})?$/.test(decimal)) {
    throw invalid(`Invalid decimal: ${decimal}`, 'unit_amount_decimal');
  }
  let product = str(b.product);
  const productData = obj(b.product_data);
  if (product) store.find('product', product, 'product');
  else if (productData) product = createProduct(store, productData).id;
  else missingParam('product');
  const recurring = obj(b.recurring);
  const amount = unitAmount ?? (decimal !== undefined ? Math.round(Number(decimal)) : null);
  const price = store.insert(
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
  const prod = store.state.objects[product]!.data;
  if (!prod.default_price) store.update(product, { default_price: price.id });
  store.event('price.created', price);
  return price;
}

export function updatePrice(store: StripeStore, id: string, b: FormObject) {
  const p = store.find('price', id);
  const changes: Record<string, unknown> = {};
  const active = bool(b.active, 'active');
  if (active !== undefined) changes.active = active;
  for (const k of ['nickname', 'lookup_key']) if (str(b[k]) !== undefined) changes[k] = str(b[k]) || null;
  if (b.metadata !== undefined) changes.metadata = mergeMetadata(p.metadata, b.metadata);
  const updated = store.update(id, changes);
  store.event('price.updated', updated, undefined, previousOf(p, changes));
  return updated;
}

export function listPrices(store: StripeStore, q: URLSearchParams) {
  const product = q.get('product');
  const active = bool(q.get('active') ?? undefined, 'active');
  const type = q.get('type');
  const lookupKeys = [...q.entries()].filter(([k]) => /^lookup_keys\[\d*\]$/.test(k)).map(([, v]) => v);
  return store.list(
    'price',
    q,
    '/v1/prices',
    (p) =>
      (!product || p.product === product) &&
      (active === undefined || p.active === active) &&
      (!type || p.type === type) &&
      (!lookupKeys.length || lookupKeys.includes(String(p.lookup_key))),
  );
}

/**
 * A price from `price` (an id) or `price_data` (a new price, as Stripe makes for line items): the
 * price object either way.
 */
export function resolvePrice(
  store: StripeStore,
  price: FormValue | undefined,
  priceData: FormValue | undefined,
  param: string,
): StripeObject {
  const id = str(price);
  if (id) return store.find('price', id, `${param}[price]`);
  const data = obj(priceData);
  if (!data) {
    throw invalid(
      `You must specify either \`price\` or \`price_data\` in ${param}.`,
      param,
      'parameter_missing',
    );
  }
  return createPrice(store, data);
}
