import { createHash, createHmac } from 'node:crypto';
import Joi from 'joi';
import {
  TwinInputError,
  type Authorization,
  type Granted,
  type RequestHead,
  type TwinDriver,
  type TwinFactory,
} from '../../contract.ts';
import { BoundedLru } from '../../runtime/bounded-lru.ts';
import { ownValue, setOwn } from '../../runtime/safe-json.ts';
import { isKnownSecret, presentedToken, randomToken } from '../../runtime/secrets.ts';
import { WebhookOutbox, type WebhookSigner, type WebhookTarget } from '../../runtime/webhooks.ts';
import { checkoutPage } from './checkout-page.ts';
import { StripeError } from './errors.ts';
import { expandPaths, expandResponse } from './expand.ts';
import { FormError, parseForm, type FormObject } from './params.ts';
import { lineItemsList } from './resources/checkout-sessions.ts';
import { confirmationSecret, payInvoiceOfIntent } from './resources/invoices.ts';
import { endpointTargets } from './resources/webhook-endpoints.ts';
import { ROUTES, type StripeContext } from './routes.ts';
import { seedStripe } from './seed.ts';
import { stripeDescriptor, type StripeSeed } from './descriptor.ts';
import {
  idempotencyMismatch,
  injectedFault,
  refusedInput,
  refusedParam,
  stripeJson,
  stripeJsonBytes,
  unauthorized,
  unrecognizedUrl,
} from './shape.ts';
import {
  StripeStore,
  accountVersion,
  emptyStripeState,
  type StripeObject,
  type StripeState,
} from './store.ts';
import { isBefore, resolveVersion, type StripeApiVersion } from './versions/catalog.ts';
import { eventIn, renderIn, rendersAsStored } from './versions/render.ts';
import { checkRequestIn } from './versions/requests.ts';

/** What storedJson keeps: at most so many objects' JSON, and so many bytes of it. */
const KEPT_JSON_MAX = 128;
const KEPT_JSON_BYTES = 1024 * 1024;

interface StripeSaved {
  secret_key: string;
  publishable_key: string;
  webhook_secret: string;
  target?: WebhookTarget;
  public_url?: string;
  state: StripeState;
}

/** `Stripe-Signature: t=...,v1=...` exactly as stripe.webhooks.constructEvent verifies it. */
export const stripeSigner: WebhookSigner = ({ body, secret }) => {
  const t = Math.floor(Date.now() / 1000);
  return {
    'user-agent': 'Stripe/1.0 (+https://stripe.com/docs/webhooks)',
    'stripe-signature': `t=${t},v1=${createHmac('sha256', secret).update(`${t}.${body}`).digest('hex')}`,
  };
};

class StripeTwin implements TwinDriver {
  readonly webhooks = new WebhookOutbox(stripeSigner);
  /** One outbox per endpoint made with `POST /v1/webhook_endpoints`, each signing with its own secret. */
  private readonly endpointOutboxes = new Map<string, WebhookOutbox>();
  private readonly store: StripeStore;
  private readonly context: StripeContext;
  /** Stored objects' JSON by id, with the object it was written from (storedJson). */
  private readonly keptJson = new BoundedLru<{ object: object; bytes: Buffer }>(
    KEPT_JSON_MAX,
    KEPT_JSON_BYTES,
  );
  /** Where browsers reach this twin (the hosted checkout page); set through the admin API, see docs/twins.md. */
  publicUrl: string | undefined;

  constructor(
    private readonly host: URL,
    private readonly seed: StripeSeed,
    private readonly keys: { secret_key: string; publishable_key: string; webhook_secret: string },
    state: StripeState,
  ) {
    this.store = new StripeStore(state, {
      emit: (event) => this.deliver(event),
      intentSucceeded: payInvoiceOfIntent,
    });
    this.context = {
      store: this.store,
      pageOrigin: () => (this.publicUrl ?? this.host.origin).replace(/\/$/, ''),
      apiVersion: accountVersion(state),
    };
  }

  /** The account's default API version: requests without `Stripe-Version` are answered in it. */
  private get accountVersion(): StripeApiVersion {
    return accountVersion(this.store.state);
  }

  /**
   * An event goes out in the version its endpoint was pinned to when it was made (`api_version`), as on
   * Stripe; the seed's webhook target, pinned to nothing, gets the account's version of the moment.
   */
  private deliver(event: StripeObject): void {
    const type = event.type as string;
    void this.webhooks.deliver(type, renderIn(event, event.api_version as StripeApiVersion, this.store));
    for (const target of endpointTargets(this.store, type)) {
      let outbox = this.endpointOutboxes.get(target.id);
      if (!outbox) {
        outbox = new WebhookOutbox(stripeSigner);
        this.endpointOutboxes.set(target.id, outbox);
      }
      outbox.target = { url: target.url, secret: target.secret, events: target.events };
      void outbox.deliver(type, eventIn(event, target.apiVersion ?? this.accountVersion, this.store));
    }
  }

  /**
   * Stripe's secret key as `Authorization: Bearer sk_...` (stripe-node) or Basic `sk_...:`, compared in
   * constant time. The hosted checkout page (`/c/...`) is public, as Stripe's is: its session id is the key.
   */
  authorize(head: RequestHead): Authorization {
    if (head.url.pathname.startsWith('/c/')) return 'public';
    const presented = presentedToken(head.headers.get('authorization'));
    const key = presented && ['bearer', 'basic'].includes(presented.scheme) ? presented.token : '';
    // The key's digest is kept (isKnownSecret): one hash a request, not two.
    if (key && isKnownSecret(key, [this.keys.secret_key])) return true;
    return unauthorized(key, this.accountVersion);
  }

  async handle(request: Request, granted: Granted): Promise<Response> {
    const url = new URL(request.url);
    if (granted === 'public') {
      const page = await checkoutPage(request, this.store);
      if (page) return page;
    }
    let version: StripeApiVersion;
    try {
      version = resolveVersion(request.headers.get('stripe-version'), this.accountVersion);
    } catch (error) {
      if (!(error instanceof StripeError)) throw error;
      return stripeJson(error.status, { error: error.body }, {}, this.accountVersion);
    }
    // stripe-node sends the parameters of a DELETE (`cancellation_details[...]`) in the query string.
    const text =
      request.method === 'GET'
        ? ''
        : request.method === 'DELETE'
          ? url.search.slice(1)
          : await request.text();
    let form: FormObject;
    try {
      form = parseForm(text);
    } catch (error) {
      if (!(error instanceof FormError)) throw error;
      return refusedParam(error.message, error.param, version);
    }
    const idempotencyKey = request.headers.get('idempotency-key') ?? undefined;
    const state = this.store.state;
    // Stripe replays the first response for a repeated key, and refuses the key with other parameters.
    if (idempotencyKey && request.method === 'POST') {
      const fingerprint = createHash('sha256').update(`${url.pathname}\n${text}`).digest('hex');
      // The key is the caller's: only this state's own entries count, never a prototype property.
      const seen = ownValue(state.idempotency, idempotencyKey);
      if (seen) {
        if (seen.fingerprint !== fingerprint) return idempotencyMismatch(idempotencyKey, version);
        // The first answer is replayed as it was, in the version it was rendered in.
        return stripeJson(
          seen.status,
          seen.body,
          { 'idempotent-replayed': 'true', 'idempotency-key': idempotencyKey },
          seen.version ?? version,
        );
      }
      const result = this.dispatch(request.method, url, form, version, idempotencyKey);
      setOwn(state.idempotency, idempotencyKey, {
        fingerprint,
        status: result.status,
        body: result.body,
        version,
      });
      return stripeJson(result.status, result.body, { 'idempotency-key': idempotencyKey }, version);
    }
    const result = this.dispatch(request.method, url, form, version);
    if (result.bytes) return stripeJsonBytes(result.status, result.bytes, version);
    return stripeJson(result.status, result.body, {}, version);
  }

  /** Stripe's error shape for input refused before `handle` (bad keys, too large) or a thrown TwinInputError. */
  errorResponse(status: number, message: string, code?: string): Response {
    return refusedInput(status, message, code, this.accountVersion);
  }

  /** Synchronous on purpose: a request's read-modify-write cannot interleave with another's. */
  private dispatch(
    method: string,
    url: URL,
    form: FormObject,
    version: StripeApiVersion,
    key?: string,
  ): { status: number; body: unknown; bytes?: Buffer } {
    const query = new URLSearchParams(url.search);
    for (const [m, pattern, handler] of ROUTES) {
      if (m !== method) continue;
      const match = pattern.exec(url.pathname);
      if (!match) continue;
      try {
        const paths = expandPaths(query, form);
        for (const [k] of [...query]) if (/^expand\[/.test(k)) query.delete(k);
        checkRequestIn(version, method, url.pathname, form);
        const body = handler({ ...this.context, apiVersion: version }, match, form, query, key);
        if (method === 'GET' && !paths.length && rendersAsStored(version)) {
          const bytes = this.storedJson(body);
          if (bytes) return { status: 200, body, bytes };
        }
        // Expansion works on the rendered objects: a field a version lacks cannot be expanded in it.
        const lookup = (id: string) => {
          const found = this.store.lookup(id);
          return found && (renderIn(found, version, this.store) as Record<string, unknown>);
        };
        return {
          status: 200,
          body: expandResponse(renderIn(body, version, this.store), paths, lookup, this.computed(version)),
        };
      } catch (error) {
        if (error instanceof StripeError) {
          return { status: error.status, body: renderIn({ error: error.body }, version, this.store) };
        }
        throw error;
      }
    }
    return { status: 404, body: unrecognizedUrl(method, url.pathname) };
  }

  /**
   * The JSON of a stored object (not an event) answered as the store keeps it (`rendersAsStored`), kept
   * while that object is the store's: the store never changes an object in place (`update` puts a new one
   * in its entry), so the same object gives the same text. Reading one customer, product or price over
   * and over no longer copies, walks and serialises it each time. Undefined for anything else (a list, a
   * search, an event, an object the store no longer holds). Most recently used last; bounded.
   */
  private storedJson(body: unknown): Buffer | undefined {
    if (!body || typeof body !== 'object') return undefined;
    const { id, object } = body as Partial<StripeObject>;
    if (typeof id !== 'string' || object === 'event' || this.store.lookup(id) !== body) return undefined;
    const kept = this.keptJson.get(id);
    if (kept?.object === body) return kept.bytes;
    const bytes = Buffer.from(JSON.stringify(body));
    this.keptJson.set(id, { object: body, bytes }, bytes.length);
    return bytes;
  }

  /**
   * Fields Stripe sends only when expanded: a session's `line_items`, an invoice's `confirmation_secret`
   * (from basil on; before it the invoice names its `payment_intent`).
   */
  private readonly computed =
    (version: StripeApiVersion) =>
    (object: Record<string, unknown>, field: string): unknown => {
      if (object.object === 'checkout.session' && field === 'line_items' && typeof object.id === 'string') {
        return renderIn(lineItemsList(this.store, object.id), version, this.store);
      }
      if (
        object.object === 'invoice' &&
        field === 'confirmation_secret' &&
        !isBefore(version, '2025-03-31.basil')
      ) {
        return confirmationSecret(this.store, object);
      }
      return undefined;
    };

  /** `PUT /_twinbox/public_url {url}`: the base URL browsers reach this twin on (checkout pages). */
  readonly adminRoutes = async (method: string, subpath: string, body: unknown) => {
    if (subpath !== '/public_url') return undefined;
    if (method === 'GET') return { status: 200, body: { url: this.publicUrl ?? this.host.origin } };
    if (method !== 'PUT') return undefined;
    const { error, value } = Joi.object({
      url: Joi.string()
        .uri({ scheme: ['http', 'https'] })
        .required(),
    }).validate(body ?? {});
    if (error) throw new TwinInputError(400, error.message);
    this.publicUrl = new URL((value as { url: string }).url).origin;
    return { status: 200, body: { url: this.publicUrl } };
  };

  envVars(): Record<string, string> {
    return {
      STRIPE_SECRET_KEY: this.keys.secret_key,
      STRIPE_PUBLISHABLE_KEY: this.keys.publishable_key,
      STRIPE_WEBHOOK_SECRET: this.keys.webhook_secret,
      STRIPE_API_BASE: this.host.origin,
      STRIPE_API_HOST: this.host.hostname.replace(/^\[|\]$/g, ''),
      STRIPE_API_PORT: this.host.port,
      STRIPE_API_PROTOCOL: this.host.protocol.replace(':', ''),
    };
  }

  secrets(): string[] {
    return [this.keys.secret_key, this.keys.webhook_secret];
  }

  snapshot(): StripeSaved {
    return {
      ...this.keys,
      target: this.webhooks.target,
      ...(this.publicUrl ? { public_url: this.publicUrl } : {}),
      state: this.store.state,
    };
  }

  async reset(): Promise<void> {
    this.store.state = emptyStripeState();
    this.webhooks.clear();
    for (const outbox of this.endpointOutboxes.values()) void outbox.close();
    this.endpointOutboxes.clear();
    this.applySeedNow(this.seed, false);
  }

  async applySeed(seed: unknown): Promise<void> {
    this.applySeedNow(seed as StripeSeed, true);
  }

  /** Seeding writes objects directly: it records and sends no events (they were not API calls). */
  applySeedNow(seed: StripeSeed, setTarget: boolean): void {
    seedStripe(this.store.state, seed);
    if (setTarget && seed.webhook) this.configureTarget(seed.webhook);
  }

  configureTarget(w: NonNullable<StripeSeed['webhook']>): void {
    this.webhooks.target = { url: w.url, secret: this.keys.webhook_secret, events: w.events ?? ['*'] };
  }

  faultResponse(kind: 'status' | 'rate_limit', status: number): Response {
    return injectedFault(kind, status, this.accountVersion);
  }

  async close(): Promise<void> {
    // Retries not yet due are cancelled, not waited for (up to half a minute).
    await Promise.all([this.webhooks.close(), ...[...this.endpointOutboxes.values()].map((o) => o.close())]);
  }
}

export const stripeTwin: TwinFactory = {
  ...stripeDescriptor,
  async create({ baseUrl, publicUrl, seed: rawSeed, saved: rawSaved }) {
    const seed = stripeDescriptor.validateSeed(rawSeed);
    const saved = rawSaved as StripeSaved | undefined;
    const keys = {
      secret_key: saved?.secret_key ?? randomToken('sk_test_'),
      publishable_key: saved?.publishable_key ?? randomToken('pk_test_'),
      webhook_secret: saved?.webhook_secret ?? randomToken('whsec_'),
    };
    const twin = new StripeTwin(new URL(baseUrl), seed, keys, saved?.state ?? emptyStripeState());
    // In a sandbox the app reaches the twin inside it, a browser through the router: checkout links use that.
    if (publicUrl && publicUrl !== baseUrl) twin.publicUrl = new URL(publicUrl).origin;
    if (saved) {
      twin.webhooks.target = saved.target;
      twin.publicUrl = saved.public_url ?? twin.publicUrl;
    } else twin.applySeedNow(seed, true);
    return twin;
  },
};
