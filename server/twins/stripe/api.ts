/**
 * Our Stripe simulator. We do not use emulate's Stripe service: it ignores Idempotency-Key, has no
 * payment-method creation, never declines, checks no API key and sends events without id/created.
 * State is one plain JSON object, so snapshot/restore/persistence are trivial.
 */
import { randomBytes } from 'node:crypto';
import { isForbiddenKey, ownValue, setOwn } from '../safe-json.ts';
import { cardOutcome, magicCardNumber } from './cards.ts';
import type { FormObject, FormValue } from './form.ts';

export type StripeObject = Record<string, unknown> & { id: string; object: string; created: number };

export interface StripeState {
  seq: number;
  /** Every object by id; `_seq` orders lists (newest first) where `created` seconds would tie. */
  objects: Record<string, { seq: number; data: StripeObject; hidden?: Record<string, unknown> }>;
  idempotency: Record<string, { fingerprint: string; status: number; body: unknown }>;
}

export const emptyStripeState = (): StripeState => ({ seq: 0, objects: {}, idempotency: {} });

export class StripeError extends Error {
  constructor(
    readonly status: number,
    readonly body: Record<string, unknown>,
  ) {
    super(String(body.message));
  }
}

const invalid = (message: string, param?: string, code?: string) =>
  new StripeError(400, {
    type: 'invalid_request_error',
    message,
    ...(param ? { param } : {}),
    ...(code ? { code } : {}),
  });
const missing = (type: string, id: string, param?: string) =>
  new StripeError(param ? 400 : 404, {
    type: 'invalid_request_error',
    code: 'resource_missing',
    message: `No such ${type}: '${id}'`,
    ...(param ? { param } : {}),
  });

const PREFIX: Record<string, string> = {
  customer: 'cus',
  product: 'prod',
  price: 'price',
  payment_method: 'pm',
  payment_intent: 'pi',
  charge: 'ch',
  event: 'evt',
};

function newId(prefix: string): string {
  return `${prefix}_${randomBytes(12).toString('base64url').replace(/[-_]/g, 'x').slice(0, 14)}`;
}

const now = () => Math.floor(Date.now() / 1000);
const str = (v: FormValue | undefined): string | undefined => (typeof v === 'string' ? v : undefined);
const obj = (v: FormValue | undefined): FormObject | undefined =>
  v && typeof v === 'object' && !Array.isArray(v) ? v : undefined;
const metadata = (v: FormValue | undefined) => (obj(v) ?? {}) as Record<string, string>;

function int(
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
  if (!Number.isInteger(n) || n < (opts.min ?? 0)) {
    const shown = typeof v === 'string' ? v : Array.isArray(v) ? 'an array' : 'a hash';
    throw invalid(`Invalid integer: ${shown}`, param, 'parameter_invalid_integer');
  }
  return n;
}

function required(v: FormValue | undefined, param: string): string {
  const s = str(v);
  if (!s) throw invalid(`Missing required param: ${param}.`, param, 'parameter_missing');
  return s;
}

/** Emits an event: recorded (GET /v1/events) and handed to the webhook outbox. */
export type EventSink = (event: StripeObject) => void;

export class StripeApi {
  constructor(
    public state: StripeState,
    /** Receives each event; `null` for seeding, which records no events at all (they were not API calls). */
    private readonly emit: EventSink | null,
  ) {}

  private insert(
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
      id: id ?? newId(PREFIX[type]!),
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

  private find(type: string, id: string, param?: string): StripeObject {
    // Ids come from URLs and bodies: only the state's own entries, never a prototype property.
    const entry = ownValue(this.state.objects, id);
    if (!entry || entry.data.object !== type || entry.data.deleted) throw missing(type, id, param);
    return entry.data;
  }

  private update(id: string, changes: Record<string, unknown>): StripeObject {
    const entry = this.state.objects[id]!;
    entry.data = { ...entry.data, ...changes };
    return entry.data;
  }

  private event(type: string, object: StripeObject, request?: { idempotencyKey?: string }) {
    if (!this.emit) return;
    const event = this.insert('event', {
      api_version: '2024-06-20',
      type,
      data: { object: structuredClone(object) },
      pending_webhooks: 1,
      request: { id: null, idempotency_key: request?.idempotencyKey ?? null },
    });
    this.emit(event);
  }

  /** Lists objects of a type, newest first, with Stripe's cursor pagination. */
  list(type: string, query: URLSearchParams, url: string, filter: (o: StripeObject) => boolean = () => true) {
    const limitRaw = query.get('limit');
    const limit = limitRaw === null ? 10 : Number(limitRaw);
    if (!Number.isInteger(limit) || limit < 1 || limit > 100) {
      throw invalid('Invalid limit: must be an integer between 1 and 100.', 'limit');
    }
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
      email: str(b.email) ?? null,
      name: str(b.name) ?? null,
      description: str(b.description) ?? null,
      phone: str(b.phone) ?? null,
      metadata: metadata(b.metadata),
      address: null,
      balance: 0,
      currency: null,
      default_source: null,
      delinquent: false,
      invoice_settings: {
        default_payment_method: str(obj(b.invoice_settings)?.default_payment_method) ?? null,
      },
    });
    this.event('customer.created', c, emitOpts);
    return c;
  }

  updateCustomer(id: string, b: FormObject) {
    const c = this.find('customer', id);
    const changes: Record<string, unknown> = {};
    for (const k of ['email', 'name', 'description', 'phone'])
      if (str(b[k]) !== undefined) changes[k] = str(b[k]);
    if (b.metadata) changes.metadata = { ...(c.metadata as object), ...metadata(b.metadata) };
    const dpm = str(obj(b.invoice_settings)?.default_payment_method);
    if (dpm !== undefined) changes.invoice_settings = { default_payment_method: dpm || null };
    const updated = this.update(id, changes);
    this.event('customer.updated', updated);
    return updated;
  }

  deleteCustomer(id: string) {
    this.find('customer', id);
    this.update(id, { deleted: true });
    this.event('customer.deleted', this.state.objects[id]!.data);
    return { id, object: 'customer', deleted: true };
  }

  // Products and prices

  createProduct(b: FormObject) {
    const p = this.insert(
      'product',
      {
        name: required(b.name, 'name'),
        description: str(b.description) ?? null,
        active: str(b.active) !== 'false',
        metadata: metadata(b.metadata),
        images: [],
        default_price: null,
        updated: now(),
      },
      undefined,
      str(b.id),
    );
    this.event('product.created', p);
    return p;
  }

  updateProduct(id: string, b: FormObject) {
    const p = this.find('product', id);
    const changes: Record<string, unknown> = { updated: now() };
    for (const k of ['name', 'description']) if (str(b[k]) !== undefined) changes[k] = str(b[k]);
    if (str(b.active) !== undefined) changes.active = str(b.active) === 'true';
    if (b.metadata) changes.metadata = { ...(p.metadata as object), ...metadata(b.metadata) };
    return this.update(id, changes);
  }

  createPrice(b: FormObject) {
    const currency = required(b.currency, 'currency').toLowerCase();
    const unitAmount = int(b.unit_amount, 'unit_amount', { required: true });
    let product = str(b.product);
    const productData = obj(b.product_data);
    if (product) this.find('product', product, 'product');
    else if (productData) product = this.createProduct(productData).id;
    else throw invalid('Missing required param: product.', 'product', 'parameter_missing');
    const recurring = obj(b.recurring);
    const price = this.insert(
      'price',
      {
        active: str(b.active) !== 'false',
        currency,
        unit_amount: unitAmount,
        unit_amount_decimal: String(unitAmount),
        product,
        nickname: str(b.nickname) ?? null,
        lookup_key: str(b.lookup_key) ?? null,
        type: recurring ? 'recurring' : 'one_time',
        recurring: recurring
          ? {
              interval: required(recurring.interval, 'recurring[interval]'),
              interval_count: int(recurring.interval_count, 'recurring[interval_count]', { min: 1 }) ?? 1,
              usage_type: 'licensed',
            }
          : null,
        billing_scheme: 'per_unit',
        metadata: metadata(b.metadata),
      },
      undefined,
      str(b.id),
    );
    const prod = this.state.objects[product]!.data;
    if (!prod.default_price) this.update(product, { default_price: price.id });
    this.event('price.created', price);
    return price;
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

  private paymentMethodFor(number: string, extra: Record<string, unknown> = {}) {
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
        type: 'card',
        card: {
          brand: outcome.brand,
          last4: number.slice(-4),
          exp_month,
          exp_year,
          funding: outcome.funding,
          country: 'US',
          fingerprint: Buffer.from(number).toString('base64url').slice(0, 16),
          checks: { cvc_check: 'pass', address_line1_check: null, address_postal_code_check: null },
        },
        billing_details: {
          address: null,
          email: null,
          name: null,
          phone: null,
          ...(billing_details as object),
        },
        customer: null,
        metadata: md,
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

  retrievePaymentMethod(id: string) {
    return this.find('payment_method', id);
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
    const currency = required(b.currency, 'currency').toLowerCase();
    const customer = str(b.customer);
    if (customer) this.find('customer', customer, 'customer');
    const pmParam = str(b.payment_method);
    const pm = pmParam ? this.resolvePaymentMethod(pmParam) : undefined;
    const id = newId('pi');
    const pi = this.insert(
      'payment_intent',
      {
        amount,
        amount_capturable: 0,
        amount_received: 0,
        currency,
        customer: customer ?? null,
        description: str(b.description) ?? null,
        metadata: metadata(b.metadata),
        payment_method: pm?.id ?? null,
        payment_method_types: ['card'],
        capture_method: str(b.capture_method) ?? 'automatic',
        confirmation_method: 'automatic',
        client_secret: `${id}_secret_${randomBytes(12).toString('hex')}`,
        status: pm ? 'requires_confirmation' : 'requires_payment_method',
        latest_charge: null,
        last_payment_error: null,
        next_action: null,
        canceled_at: null,
        cancellation_reason: null,
        receipt_email: str(b.receipt_email) ?? null,
      },
      undefined,
      id,
    );
    this.event('payment_intent.created', pi, { idempotencyKey });
    if (str(b.confirm) === 'true') return this.confirmPaymentIntent(pi.id, {}, idempotencyKey);
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
    if (b.metadata) changes.metadata = { ...(pi.metadata as object), ...metadata(b.metadata) };
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
    const charge = this.insert('charge', {
      amount: pi.amount,
      amount_captured: decline ? 0 : pi.amount,
      amount_refunded: 0,
      currency: pi.currency,
      customer: pi.customer,
      description: pi.description,
      metadata: pi.metadata,
      payment_intent: pi.id,
      payment_method: pmId,
      payment_method_details: { type: 'card', card: pmEntry.data.card },
      status: decline ? 'failed' : 'succeeded',
      paid: !decline,
      captured: !decline && pi.capture_method !== 'manual',
      refunded: false,
      failure_code: decline?.code ?? null,
      failure_message: decline?.message ?? null,
      outcome: decline
        ? {
            network_status: 'declined_by_network',
            reason: decline.decline_code ?? decline.code,
            type: 'issuer_declined',
            seller_message: 'The bank did not return any further details with this decline.',
          }
        : {
            network_status: 'approved_by_network',
            reason: null,
            type: 'authorized',
            seller_message: 'Payment complete.',
          },
    });
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
    const manual = pi.capture_method === 'manual';
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
    return done;
  }

  capturePaymentIntent(id: string) {
    const pi = this.find('payment_intent', id);
    if (pi.status !== 'requires_capture') {
      throw invalid(
        `This PaymentIntent could not be captured because it has a status of ${String(pi.status)}.`,
        undefined,
        'payment_intent_unexpected_state',
      );
    }
    if (pi.latest_charge) this.update(pi.latest_charge as string, { captured: true });
    const done = this.update(id, { status: 'succeeded', amount_received: pi.amount, amount_capturable: 0 });
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
      cancellation_reason: str(b.cancellation_reason) ?? null,
    });
    this.event('payment_intent.canceled', done);
    return done;
  }

  get(type: string, id: string) {
    return this.find(type, id);
  }
}
