/**
 * Our Stripe simulator's store. We do not use emulate's Stripe service: it ignores Idempotency-Key, has no
 * payment-method creation, never declines, checks no API key and sends events without id/created.
 * State is one plain JSON object (`StripeState`, what `snapshot()` saves), so snapshot/restore/persistence
 * are trivial.
 *
 * The store inserts, finds, updates and lists objects and records events; the resource families
 * (resources/*.ts) are plain functions over it. Objects are kept in the shape of the current API version
 * (STRIPE_API_VERSION): the internal model, which answers leave through versions/render.ts in the version
 * asked for.
 */
import { randomBytes } from 'node:crypto';
import { isForbiddenKey, ownValue, setOwn } from '../../runtime/safe-json.ts';
import { invalid, missing } from './errors.ts';
import { listLimit } from './params.ts';
import { CURRENT_VERSION, type StripeApiVersion } from './versions/catalog.ts';

export type StripeObject = Record<string, unknown> & { id: string; object: string; created: number };

export interface StripeState {
  seq: number;
  /** Every object by id; `_seq` orders lists (newest first) where `created` seconds would tie. */
  objects: Record<string, { seq: number; data: StripeObject; hidden?: Record<string, unknown> }>;
  idempotency: Record<
    string,
    { fingerprint: string; status: number; body: unknown; version?: StripeApiVersion }
  >;
  /** The account's default API version (the seed's `api_version`); the current one when unset. */
  api_version?: StripeApiVersion;
}

export const emptyStripeState = (): StripeState => ({ seq: 0, objects: {}, idempotency: {} });

/** The version objects are kept in (stripe-node 23's pinned one); answers are rendered from it (versions/). */
export const STRIPE_API_VERSION = CURRENT_VERSION;

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
export const DAY = 86_400;

/** Emits an event: recorded (GET /v1/events) and handed to the webhook outboxes. */
export type EventSink = (event: StripeObject) => void;

export interface StoreHooks {
  /** Receives each event; absent for seeding, which records no events at all (they were not API calls). */
  emit?: EventSink;
  /**
   * Told when a payment intent succeeds, however it was confirmed: an invoice's intent pays the invoice
   * (resources/invoices.ts), which payment intents do not know of.
   */
  intentSucceeded?: (store: StripeStore, intent: StripeObject) => void;
}

/** The account's default version: what events are rendered in when they happen. */
export function accountVersion(state: StripeState): StripeApiVersion {
  return state.api_version ?? CURRENT_VERSION;
}

export class StripeStore {
  constructor(
    public state: StripeState,
    private readonly hooks: StoreHooks = {},
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

  /** Every live object of a type, in the order they were made. */
  all(type: string): StripeObject[] {
    return Object.values(this.state.objects)
      .filter((e) => e.data.object === type && !e.data.deleted)
      .map((e) => e.data);
  }

  hidden(id: string): Record<string, unknown> {
    const entry = this.state.objects[id]!;
    entry.hidden ??= {};
    return entry.hidden;
  }

  /** An object's hidden part, read only (rendering an answer must not write the state); empty if none. */
  peekHidden(id: string): Readonly<Record<string, unknown>> {
    return ownValue(this.state.objects, id)?.hidden ?? {};
  }

  update(id: string, changes: Record<string, unknown>): StripeObject {
    const entry = this.state.objects[id]!;
    entry.data = { ...entry.data, ...changes };
    return entry.data;
  }

  event(type: string, object: StripeObject, request?: { idempotencyKey?: string }, previous?: object) {
    if (!this.hooks.emit) return;
    const event = this.insert('event', {
      api_version: accountVersion(this.state),
      type,
      data: { object: structuredClone(object), ...(previous ? { previous_attributes: previous } : {}) },
      pending_webhooks: 1,
      request: { id: null, idempotency_key: request?.idempotencyKey ?? null },
    });
    this.hooks.emit(event);
  }

  intentSucceeded(intent: StripeObject): void {
    this.hooks.intentSucceeded?.(this, intent);
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
