import { randomUUID } from 'node:crypto';
import { type Authorization, type RequestHead } from '../../contract.ts';
import { type Engine } from '../../engine/emulate.ts';
import { EngineTwin } from '../../engine/engine-twin.ts';
import { standardWebhookSecret, standardWebhookSigner } from '../../engine/standard-webhooks.ts';
import { engineTwinFactory } from '../../engine/factory.ts';
import { json } from '../../runtime/http.ts';
import { isKnownSecret, presentedToken, randomToken } from '../../runtime/secrets.ts';
import { resendDescriptor, type ResendSeed } from './descriptor.ts';
import { toResendResponse } from './shape.ts';

/** Resend's error body: `{ statusCode, name, message }` (https://resend.com/docs/api-reference/errors). */
const resendError = (statusCode: number, name: string, message: string, headers?: Record<string, string>) =>
  json(statusCode, { statusCode, name, message }, headers);

/** Resend's shared test domain: any project may send from it without adding it. */
const TEST_DOMAIN = 'resend.dev';

/** The domain of a `from` ("Acme <hi@acme.dev>" or "hi@acme.dev"), lower-cased. */
function senderDomain(from: unknown): string | undefined {
  if (typeof from !== 'string') return undefined;
  const address = /<([^>]+)>\s*$/.exec(from)?.[1] ?? from;
  const at = address.lastIndexOf('@');
  return at === -1
    ? undefined
    : address
        .slice(at + 1)
        .trim()
        .toLowerCase();
}

class ResendTwin extends EngineTwin {
  constructor(
    engine: Engine,
    baseUrl: string,
    credentials: Record<string, string>,
    private readonly seed: ResendSeed,
  ) {
    super(engine, baseUrl, credentials, standardWebhookSigner);
  }

  private get apiKey(): string {
    return this.credentials.RESEND_API_KEY!;
  }

  /** The keys `POST /api-keys` made and that were not deleted since. */
  private createdKeys(): string[] {
    return this.engine.store
      .collection('resend.api_keys', ['uuid'])
      .all()
      .map((k) => String(k.token));
  }

  /** The instance's key and the ones made through the API; anything else is Resend's 403. */
  authorize(head: RequestHead): Authorization {
    const presented = presentedToken(head.headers.get('authorization'));
    if (!presented || presented.scheme !== 'bearer') {
      return resendError(
        401,
        'missing_api_key',
        'Missing API key in the authorization header. Include the following header in the request: Authorization: Bearer YOUR_API_KEY',
      );
    }
    return isKnownSecret(presented.token, [this.apiKey, ...this.createdKeys()])
      ? true
      : resendError(403, 'invalid_api_key', 'API key is invalid');
  }

  /**
   * Resend refuses to send from a domain the account has not verified (the engine sends from any); the
   * shared `resend.dev` test domain is always allowed.
   */
  override async handle(request: Request): Promise<Response> {
    const { pathname } = new URL(request.url);
    if (request.method === 'POST' && (pathname === '/emails' || pathname === '/emails/batch')) {
      let body: unknown;
      try {
        body = await request.clone().json();
      } catch {
        return resendError(422, 'validation_error', 'Invalid JSON body');
      }
      const emails = pathname === '/emails' ? [body] : Array.isArray(body) ? body : [];
      const verified = new Set(
        this.engine.store
          .collection('resend.domains', ['uuid', 'name'])
          .all()
          .filter((d) => d.status === 'verified')
          .map((d) => String(d.name).toLowerCase()),
      );
      for (const email of emails) {
        const from = (email as { from?: unknown } | null)?.from;
        const domain = senderDomain(from);
        if (from === undefined || domain === TEST_DOMAIN || (domain && verified.has(domain))) continue;
        if (!domain) return resendError(422, 'validation_error', 'Invalid `from` field.');
        return resendError(
          403,
          'validation_error',
          `The ${domain} domain is not verified. Please, add and verify your domain on https://resend.com/domains`,
        );
      }
    }
    // Resend renamed audiences to segments; resend-node 6 calls /segments, the engine serves /audiences.
    const segments = /^\/segments(\/|$)/.test(pathname);
    if (segments) {
      const url = new URL(request.url);
      url.pathname = pathname.replace(/^\/segments/, '/audiences');
      request = new Request(url, request);
    }
    const response = await this.engine.app.fetch(request);
    if (response.status === 404) {
      const body = (await response
        .clone()
        .json()
        .catch(() => undefined)) as { name?: unknown } | undefined;
      if (typeof body?.name !== 'string')
        return resendError(404, 'not_found', 'The requested endpoint does not exist.');
    }
    return toResendResponse(request.method, pathname, response, segments);
  }

  /** Routes resend-node calls that the engine lacks. */
  addRoutes(): void {
    this.engine.priority.get('/audiences/:id', (c) => {
      const audience = this.engine.store
        .collection('resend.audiences', ['uuid'])
        .findOneBy('uuid', c.req.param('id'));
      if (!audience) return resendError(404, 'not_found', 'Segment not found');
      return c.json({
        object: 'audience',
        id: audience.uuid,
        name: audience.name,
        created_at: audience.created_at,
      });
    });
  }

  /** Resend's webhook body: `{ type, created_at, data }`, with the time the engine leaves out. */
  protected override eventBody(event: string, payload: unknown): unknown {
    const { data } = (payload ?? {}) as { data?: Record<string, unknown> };
    const now = new Date().toISOString();
    return { type: event, created_at: now, data: { created_at: now, ...data } };
  }

  errorResponse(status: number, message: string, code?: string): Response {
    if (code === 'too_large') return resendError(413, 'validation_error', 'Request body is too large.');
    if (status >= 500) return resendError(500, 'internal_server_error', 'An unexpected error occurred.');
    if (code === 'invalid_json') return resendError(400, 'validation_error', 'Invalid JSON body');
    return resendError(status === 400 ? 422 : status, 'validation_error', message);
  }

  faultResponse(kind: 'status' | 'rate_limit', status: number): Response {
    if (kind === 'rate_limit') {
      return resendError(
        429,
        'rate_limit_exceeded',
        'Too many requests. You can only make 2 requests per second. See rate limit response headers for more information. Or contact support to increase rate limit.',
        { 'retry-after': '1', 'ratelimit-limit': '2', 'ratelimit-remaining': '0', 'ratelimit-reset': '1' },
      );
    }
    return status >= 500
      ? resendError(status, 'internal_server_error', 'An unexpected error occurred.')
      : resendError(status, 'validation_error', 'The request could not be processed.');
  }

  envVars(): Record<string, string> {
    return {
      RESEND_API_KEY: this.apiKey,
      // resend-node reads RESEND_BASE_URL itself (default https://api.resend.com).
      RESEND_BASE_URL: this.baseUrl,
      RESEND_WEBHOOK_SECRET: this.credentials.RESEND_WEBHOOK_SECRET!,
    };
  }

  override secrets(): string[] {
    return [...super.secrets(), ...this.createdKeys()];
  }

  protected override afterReset(): void {
    this.insertEmails(this.seed.emails ?? []);
  }

  /** Seeded emails go straight into the engine's store, as delivered ones: seeding sends no webhooks. */
  insertEmails(emails: NonNullable<ResendSeed['emails']>): void {
    const store = this.engine.store.collection('resend.emails', ['uuid']);
    for (const email of emails) {
      store.insert({
        uuid: randomUUID(),
        from: email.from,
        to: Array.isArray(email.to) ? email.to : [email.to],
        subject: email.subject,
        html: email.html ?? null,
        text: email.text ?? null,
        cc: [],
        bcc: [],
        reply_to: [],
        headers: {},
        tags: [],
        scheduled_at: null,
        status: 'delivered',
        last_event: 'email.delivered',
      });
    }
  }

  async applySeed(raw: unknown): Promise<void> {
    const seed = raw as ResendSeed;
    this.engine.seedFromConfig(engineSeed(seed));
    this.insertEmails(seed.emails ?? []);
    if (seed.webhook) this.configureTarget(seed.webhook);
  }

  configureTarget(w: NonNullable<ResendSeed['webhook']>): void {
    this.webhooks.target = {
      url: w.url,
      secret: this.credentials.RESEND_WEBHOOK_SECRET!,
      events: w.events ?? ['*'],
    };
  }
}

const engineSeed = (seed: ResendSeed) => ({
  ...(seed.domains ? { domains: seed.domains } : {}),
  ...(seed.contacts ? { contacts: seed.contacts } : {}),
});

export const resendTwin = engineTwinFactory(resendDescriptor, {
  newCredentials: () => ({
    RESEND_API_KEY: randomToken('re_', 24),
    RESEND_WEBHOOK_SECRET: standardWebhookSecret(),
  }),
  engineSeed: (seed) => ({ tokens: {}, resend: engineSeed(seed) }),
  driver(engine, baseUrl, credentials, seed) {
    const twin = new ResendTwin(engine, baseUrl, credentials, seed);
    twin.addRoutes();
    return twin;
  },
  fresh(twin, seed) {
    twin.insertEmails(seed.emails ?? []);
    if (seed.webhook) twin.configureTarget(seed.webhook);
  },
});
