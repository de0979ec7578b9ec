import { createHash, createHmac } from 'node:crypto';
import Joi from 'joi';
import {
  TwinInputError,
  type Authorization,
  type RequestHead,
  type TwinDriver,
  type TwinFactory,
} from '../../contract.ts';
import { json } from '../../runtime/http.ts';
import { ownValue, setOwn } from '../../runtime/safe-json.ts';
import { presentedToken, randomToken, secretEquals } from '../../runtime/secrets.ts';
import { WebhookOutbox, type WebhookSigner, type WebhookTarget } from '../../runtime/webhooks.ts';
import { seedValidator } from '../../kit/seed-validator.ts';
import {
  STRIPE_API_VERSION,
  StripeApi,
  StripeError,
  emptyStripeState,
  type StripeObject,
  type StripeState,
} from './api.ts';
import { StripeBilling } from './billing.ts';
import { StripeCheckout } from './checkout.ts';
import { checkoutPage } from './checkout-page.ts';
import { expandPaths, expandResponse } from './expand.ts';
import { ROUTES, type StripeServices } from './routes.ts';
import { StripeWebhookEndpoints } from './webhook-endpoints.ts';
import { cardOutcome, magicCardNumber } from './cards.ts';
import { FormError, parseForm, type FormObject } from './form.ts';
import { summarizeStripe } from './summary.ts';
import { describeStripeChange } from './changes.ts';
import { stripePresets } from './presets.ts';

interface StripeCustomerSeed {
  id?: string;
  email?: string;
  name?: string;
  metadata?: Record<string, string>;
  /**
   * A magic id (`pm_card_visa`, `pm_card_chargeDeclined`, ...; `tok_*` too) or a test card number: a card
   * payment method is created, attached and made `invoice_settings.default_payment_method`.
   */
  payment_method?: string;
  /** Payment intents of this customer, made with its payment method (see applySeedNow). */
  payment_intents?: Array<{
    amount: number;
    currency: string;
    status?: 'succeeded' | 'requires_payment_method';
  }>;
}

interface StripeSeed {
  customers?: StripeCustomerSeed[];
  products?: Array<{
    id?: string;
    name: string;
    description?: string;
    prices?: Array<{ id?: string; unit_amount: number; currency: string; recurring?: { interval: string } }>;
  }>;
  webhook?: { url: string; events?: string[] };
}

interface StripeSaved {
  secret_key: string;
  publishable_key: string;
  webhook_secret: string;
  target?: WebhookTarget;
  public_url?: string;
  state: StripeState;
}

const seedSchema = Joi.object<StripeSeed>({
  customers: Joi.array().items(
    Joi.object({
      id: Joi.string().pattern(/^cus_\w+$/),
      email: Joi.string().email(),
      name: Joi.string(),
      metadata: Joi.object().pattern(Joi.string(), Joi.string()),
      payment_method: Joi.string()
        .custom((value: string, helpers) =>
          magicCardNumber(value) || (/^\d{13,19}$/.test(value) && cardOutcome(value))
            ? value
            : helpers.error('any.invalid'),
        )
        .messages({
          'any.invalid':
            '{{#label}} must be a test card number (e.g. 4000000000000002) or a magic id such as pm_card_visa or pm_card_chargeDeclined',
        }),
      payment_intents: Joi.array().items(
        Joi.object({
          amount: Joi.number().integer().min(1).required(),
          currency: Joi.string().length(3).required(),
          status: Joi.string().valid('succeeded', 'requires_payment_method'),
        }),
      ),
    }),
  ),
  products: Joi.array().items(
    Joi.object({
      id: Joi.string().pattern(/^prod_\w+$/),
      name: Joi.string().required(),
      description: Joi.string(),
      prices: Joi.array().items(
        Joi.object({
          id: Joi.string().pattern(/^price_\w+$/),
          unit_amount: Joi.number().integer().min(0).required(),
          currency: Joi.string().length(3).required(),
          recurring: Joi.object({ interval: Joi.string().valid('day', 'week', 'month', 'year').required() }),
        }),
      ),
    }),
  ),
  webhook: Joi.object({
    url: Joi.string()
      .uri({ scheme: ['http', 'https'] })
      .required(),
    events: Joi.array().items(Joi.string()),
  }),
});

const validateStripeSeed = seedValidator('stripe', seedSchema);

/** `Stripe-Signature: t=...,v1=...` exactly as stripe.webhooks.constructEvent verifies it. */
export const stripeSigner: WebhookSigner = ({ body, secret }) => {
  const t = Math.floor(Date.now() / 1000);
  return {
    'user-agent': 'Stripe/1.0 (+https://stripe.com/docs/webhooks)',
    'stripe-signature': `t=${t},v1=${createHmac('sha256', secret).update(`${t}.${body}`).digest('hex')}`,
  };
};

function stripeJson(status: number, body: unknown, extra: Record<string, string> = {}): Response {
  return json(status, body, {
    'request-id': `req_${randomToken('', 9)}`,
    'stripe-version': STRIPE_API_VERSION,
    ...extra,
  });
}

class StripeTwin implements TwinDriver {
  readonly webhooks = new WebhookOutbox(stripeSigner);
  /** One outbox per endpoint made with `POST /v1/webhook_endpoints`, each signing with its own secret. */
  private readonly endpointOutboxes = new Map<string, WebhookOutbox>();
  private api: StripeApi;
  private readonly services: StripeServices;
  /** Where browsers reach this twin (the hosted checkout page); set through the admin API, see docs/twins.md. */
  publicUrl: string | undefined;

  constructor(
    private readonly host: URL,
    private readonly seed: StripeSeed,
    private readonly keys: { secret_key: string; publishable_key: string; webhook_secret: string },
    state: StripeState,
  ) {
    this.api = new StripeApi(state, (event) => this.deliver(event));
    const billing = new StripeBilling(this.api);
    this.services = {
      api: this.api,
      billing,
      checkout: new StripeCheckout(this.api, billing, () =>
        (this.publicUrl ?? this.host.origin).replace(/\/$/, ''),
      ),
      endpoints: new StripeWebhookEndpoints(this.api),
    };
  }

  private deliver(event: StripeObject): void {
    const type = event.type as string;
    void this.webhooks.deliver(type, event);
    for (const target of this.services.endpoints.targetsFor(type)) {
      let outbox = this.endpointOutboxes.get(target.id);
      if (!outbox) {
        outbox = new WebhookOutbox(stripeSigner);
        this.endpointOutboxes.set(target.id, outbox);
      }
      outbox.target = { url: target.url, secret: target.secret, events: target.events };
      void outbox.deliver(type, event);
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
    if (key && secretEquals(key, this.keys.secret_key)) return true;
    const shown = key ? `${key.slice(0, 8)}${'*'.repeat(Math.max(0, key.length - 12))}${key.slice(-4)}` : '';
    return stripeJson(401, {
      error: {
        type: 'invalid_request_error',
        message: key
          ? `Invalid API Key provided: ${shown}`
          : "You did not provide an API key. You need to provide your API key in the Authorization header, using Bearer auth (e.g. 'Authorization: Bearer YOUR_SECRET_KEY'). See https://stripe.com/docs/api#authentication for details, or we can help at https://support.stripe.com/.",
      },
    });
  }

  async handle(request: Request): Promise<Response> {
    const url = new URL(request.url);
    const verdict = this.authorize({ method: request.method, url, headers: request.headers });
    if (verdict instanceof Response) return verdict;
    if (verdict === 'public') {
      const page = await checkoutPage(request, this.services.checkout);
      if (page) return page;
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
      return stripeJson(400, {
        error: { type: 'invalid_request_error', message: error.message, param: error.param },
      });
    }
    const idempotencyKey = request.headers.get('idempotency-key') ?? undefined;
    const state = this.api.state;
    // Stripe replays the first response for a repeated key, and refuses the key with other parameters.
    if (idempotencyKey && request.method === 'POST') {
      const fingerprint = createHash('sha256').update(`${url.pathname}\n${text}`).digest('hex');
      // The key is the caller's: only this state's own entries count, never a prototype property.
      const seen = ownValue(state.idempotency, idempotencyKey);
      if (seen) {
        if (seen.fingerprint !== fingerprint) {
          return stripeJson(400, {
            error: {
              type: 'idempotency_error',
              message: `Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '${idempotencyKey}' if you meant to execute a different request.`,
            },
          });
        }
        return stripeJson(seen.status, seen.body, {
          'idempotent-replayed': 'true',
          'idempotency-key': idempotencyKey,
        });
      }
      const result = this.dispatch(request.method, url, form, idempotencyKey);
      setOwn(state.idempotency, idempotencyKey, { fingerprint, status: result.status, body: result.body });
      return stripeJson(result.status, result.body, { 'idempotency-key': idempotencyKey });
    }
    const result = this.dispatch(request.method, url, form);
    return stripeJson(result.status, result.body);
  }

  /** Stripe's error shape for input refused before `handle` (bad keys, too large) or a thrown TwinInputError. */
  errorResponse(status: number, message: string, code?: string): Response {
    if (status >= 500) return stripeJson(status, { error: { type: 'api_error', message } });
    const text =
      code === 'too_large'
        ? `${message.charAt(0).toUpperCase()}${message.slice(1)}.`
        : code === 'forbidden_key'
          ? `Received unknown parameter: ${message.replace(/^"(.*)" is not an allowed key$/, '$1')}`
          : message;
    return stripeJson(status, { error: { type: 'invalid_request_error', message: text } });
  }

  /** Synchronous on purpose: a request's read-modify-write cannot interleave with another's. */
  private dispatch(
    method: string,
    url: URL,
    form: FormObject,
    key?: string,
  ): { status: number; body: unknown } {
    const query = new URLSearchParams(url.search);
    for (const [m, pattern, handler] of ROUTES) {
      if (m !== method) continue;
      const match = pattern.exec(url.pathname);
      if (!match) continue;
      try {
        const paths = expandPaths(query, form);
        for (const [k] of [...query]) if (/^expand\[/.test(k)) query.delete(k);
        const body = handler(this.services, match, form, query, key);
        return { status: 200, body: expandResponse(body, paths, (id) => this.api.lookup(id), this.computed) };
      } catch (error) {
        if (error instanceof StripeError) return { status: error.status, body: { error: error.body } };
        throw error;
      }
    }
    return {
      status: 404,
      body: {
        error: {
          type: 'invalid_request_error',
          message: `Unrecognized request URL (${method}: ${url.pathname}).`,
        },
      },
    };
  }

  /** Fields Stripe sends only when expanded: a session's `line_items`, an invoice's `confirmation_secret`. */
  private readonly computed = (object: Record<string, unknown>, field: string): unknown => {
    if (object.object === 'checkout.session' && field === 'line_items' && typeof object.id === 'string') {
      return this.services.checkout.lineItemsList(object.id);
    }
    if (object.object === 'invoice' && field === 'confirmation_secret') {
      return this.services.billing.confirmationSecret(object);
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
      state: this.api.state,
    };
  }

  async reset(): Promise<void> {
    this.api.state = emptyStripeState();
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
    const quiet = new StripeApi(this.api.state, null);
    try {
      for (const c of seed.customers ?? []) {
        const created = quiet.createCustomer({
          ...(c.email ? { email: c.email } : {}),
          ...(c.name ? { name: c.name } : {}),
          metadata: c.metadata ?? {},
        });
        const id = c.id ?? created.id;
        if (c.id) this.rename(created, c.id);
        let pm: StripeObject | undefined;
        if (c.payment_method) {
          const number = magicCardNumber(c.payment_method);
          pm = number
            ? quiet.resolvePaymentMethod(c.payment_method)
            : quiet.createPaymentMethod({ type: 'card', card: { number: c.payment_method } });
          quiet.attachPaymentMethod(pm.id, { customer: id });
          quiet.updateCustomer(id, { invoice_settings: { default_payment_method: pm.id } });
        }
        for (const p of c.payment_intents ?? []) this.seedPaymentIntent(quiet, id, pm, p);
      }
      for (const p of seed.products ?? []) {
        const product = quiet.createProduct({
          name: p.name,
          ...(p.id ? { id: p.id } : {}),
          ...(p.description ? { description: p.description } : {}),
        });
        for (const price of p.prices ?? []) {
          quiet.createPrice({
            product: product.id,
            unit_amount: String(price.unit_amount),
            currency: price.currency,
            ...(price.id ? { id: price.id } : {}),
            ...(price.recurring ? { recurring: { interval: price.recurring.interval } } : {}),
          });
        }
      }
    } catch (error) {
      if (error instanceof StripeError) throw new TwinInputError(400, `stripe seed: ${error.message}`);
      throw error;
    }
    if (setTarget && seed.webhook) this.configureTarget(seed.webhook);
  }

  /**
   * `succeeded`: confirmed with the customer's payment method, or with a fresh `pm_card_visa` when it has
   * none or it declines. `requires_payment_method` (default): when the customer's card declines, the intent
   * records that failed attempt (`last_payment_error`, a failed charge); otherwise it has no payment method.
   */
  private seedPaymentIntent(
    api: StripeApi,
    customer: string,
    pm: StripeObject | undefined,
    p: NonNullable<StripeCustomerSeed['payment_intents']>[number],
  ): void {
    const declines = pm
      ? Boolean(cardOutcome(String(this.api.state.objects[pm.id]?.hidden?.number))?.decline)
      : false;
    const pi = api.createPaymentIntent({ amount: String(p.amount), currency: p.currency, customer });
    if (p.status === 'succeeded') {
      api.confirmPaymentIntent(pi.id, { payment_method: pm && !declines ? pm.id : 'pm_card_visa' });
    } else if (pm && declines) {
      try {
        api.confirmPaymentIntent(pi.id, { payment_method: pm.id });
      } catch (error) {
        if (!(error instanceof StripeError)) throw error;
      }
    }
  }

  private rename(object: StripeObject, id: string): void {
    const state = this.api.state;
    const entry = state.objects[object.id]!;
    delete state.objects[object.id];
    entry.data = { ...entry.data, id };
    setOwn(state.objects, id, entry);
  }

  configureTarget(w: NonNullable<StripeSeed['webhook']>): void {
    this.webhooks.target = { url: w.url, secret: this.keys.webhook_secret, events: w.events ?? ['*'] };
  }

  faultResponse(kind: 'status' | 'rate_limit', status: number): Response {
    if (kind === 'rate_limit') {
      return stripeJson(429, {
        error: {
          type: 'invalid_request_error',
          code: 'rate_limit',
          message:
            'Too many requests hit the API too quickly. We recommend an exponential backoff of your requests.',
        },
      });
    }
    return stripeJson(status, {
      error: {
        type: status >= 500 ? 'api_error' : 'invalid_request_error',
        message: `Injected fault (${status})`,
      },
    });
  }

  async close(): Promise<void> {
    // Retries not yet due are cancelled, not waited for (up to half a minute).
    await Promise.all([this.webhooks.close(), ...[...this.endpointOutboxes.values()].map((o) => o.close())]);
  }
}

export const stripeTwin: TwinFactory = {
  name: 'stripe',
  description:
    'Stripe API 2026-10-28.endive: customers (and search), products, prices, payment methods, payment intents and charges with test cards, refunds, subscriptions with trials, invoices and invoice items, Checkout Sessions with a hosted test-card page, webhook endpoints, events, Idempotency-Key, expand[], signed webhooks',
  envVarNames: [
    'STRIPE_SECRET_KEY',
    'STRIPE_PUBLISHABLE_KEY',
    'STRIPE_WEBHOOK_SECRET',
    'STRIPE_API_BASE',
    'STRIPE_API_HOST',
    'STRIPE_API_PORT',
    'STRIPE_API_PROTOCOL',
  ],
  // Stripe's SDKs have no default path; ours is the same pattern as every twin without one.
  webhook: { path: '/webhooks/stripe', secretVar: 'STRIPE_WEBHOOK_SECRET' },
  summarize: summarizeStripe,
  validateSeed: validateStripeSeed,
  presets: stripePresets,
  describeChange: describeStripeChange,
  async create({ baseUrl, publicUrl, seed: rawSeed, saved: rawSaved }) {
    const seed = validateStripeSeed(rawSeed);
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
