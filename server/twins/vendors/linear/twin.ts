import { createHmac } from 'node:crypto';
import { changesStateByMethod, type Authorization, type RequestHead } from '../../contract.ts';
import { type Engine, type EngineRecord } from '../../engine/emulate.ts';
import { EngineTwin, type EngineTwinSaved } from '../../engine/engine-twin.ts';
import { engineTwinFactory } from '../../engine/factory.ts';
import { bytesAnswer, json } from '../../runtime/http.ts';
import { isKnownSecret, randomToken } from '../../runtime/secrets.ts';
import type { WebhookSigner } from '../../runtime/webhooks.ts';
import { conformAnswer } from './shape.ts';
import { fitDocument, linearEngineSchema, type FittedRequest } from './fit-document.ts';
import { linearDescriptor, type LinearSeed } from './descriptor.ts';

/** Linear's GraphQL error body: `errors[].extensions.type` is what @linear/sdk turns into its error classes. */
const linearError = (
  status: number,
  type: string,
  code: string,
  message: string,
  headers?: Record<string, string>,
) =>
  json(
    status,
    { errors: [{ message, extensions: { type, code, userPresentableMessage: message } }] },
    headers,
  );

/** Linear answers a missing or unknown key with HTTP 400 and an "authentication error". */
const notAuthenticated = () =>
  linearError(
    400,
    'authentication error',
    'AUTHENTICATION_ERROR',
    'Authentication required, not authenticated',
  );

/** The engine's published credentials (its README's), which must not open a sandbox's workspace. */
const ENGINE_TOKEN = 'lin_test_admin';
const ENGINE_OAUTH_CLIENT = 'lin_example_client_id';
/** The engine's own webhook subscription that stands for the app's target: its deliveries go to our outbox. */
const TARGET_WEBHOOK_ID = 'twinbox-app-target';
const DEFAULT_ADMIN = 'admin@linear.local';
const SCOPES = ['read', 'write', 'issues:create', 'comments:create', 'admin'];

/** Linear's webhook headers: `Linear-Signature` is the hex HMAC-SHA256 of the raw body. */
const linearSigner: WebhookSigner = ({ event, body, secret, guid }) => ({
  'linear-delivery': guid,
  'linear-event': event,
  'linear-signature': createHmac('sha256', secret).update(body).digest('hex'),
  'user-agent': 'Linear-Webhook',
});

/** The `Authorization` header's key: Linear takes a personal API key bare and an OAuth token as Bearer. */
function presentedKey(header: string | null): string | undefined {
  const value = header?.trim().replace(/^bearer\s+/i, '');
  return value ? value : undefined;
}

/** A GraphQL request body as `handle` sends it on to the engine (`prepareCall`). */
interface PreparedCall {
  /** Undefined when the document does not parse: the engine then answers it with its own error. */
  fitted: FittedRequest | undefined;
  variables: Record<string, unknown>;
  operationName: string | undefined;
  /** The request body for the engine: the fitted document and variables. */
  engineBody: string;
  /** The engine's last answer to it (its text) and the shaped bytes it gave. */
  last?: { status: number; engineText: string; out: Buffer };
}

/**
 * Bounds of what a twin keeps of its requests (`prepareCall`): how many bodies, and the size of bodies and
 * answers together (a sandbox fleet runs many twins; an app's few documents fit well within it). Past
 * either, it starts over; a body or answer over an eighth of it is not kept at all.
 */
const PREPARED_CALLS_MAX = 200;
const KEPT_SIZE_MAX = 1024 * 1024;
const KEPT_ANSWER_MAX = KEPT_SIZE_MAX / 8;
/** What `json()` (runtime/http.ts) labels an answer with, for the answers made from bytes here. */
const LINEAR_JSON = { 'content-type': 'application/json; charset=utf-8' };

class LinearTwin extends EngineTwin {
  private readonly hooked = new WeakSet<object>();
  /** Prepared request bodies by their text (`prepareCall`). */
  private readonly calls = new Map<string, PreparedCall>();
  /** Size of the bodies and answers `calls` holds (characters of text, bytes of shaped answers). */
  private keptSize = 0;

  constructor(engine: Engine, baseUrl: string, credentials: Record<string, string>) {
    super(engine, baseUrl, credentials, linearSigner);
    this.removeEngineCredentials();
    this.hookDeliveries();
    this.ensureTargetSubscription();
  }

  private get tokens() {
    return this.engine.store.collection('linear.tokens', ['token', 'user_id', 'app_id']);
  }

  /** Access tokens that still open the workspace: the API key and OAuth tokens not revoked. */
  private liveTokens(): string[] {
    const now = Date.now();
    return this.tokens
      .all()
      .filter(
        (t) =>
          t.revoked !== true &&
          t.type !== 'oauth_refresh' &&
          !(typeof t.expires_at === 'string' && Date.parse(t.expires_at) <= now),
      )
      .map((t) => String(t.token));
  }

  private removeEngineCredentials(): void {
    for (const t of this.tokens.findBy('token', ENGINE_TOKEN)) this.tokens.delete(t.id);
    const apps = this.engine.store.collection('linear.oauth_apps', ['linear_id', 'client_id']);
    for (const a of apps.findBy('client_id', ENGINE_OAUTH_CLIENT)) apps.delete(a.id);
  }

  /**
   * The engine sends a workspace's events itself, to its webhook subscriptions, and records each delivery.
   * The one for our target subscription is taken off that path into the outbox (signed, retried, listed).
   */
  private hookDeliveries(): void {
    const deliveries = this.engine.store.collection('linear.webhook_deliveries', ['linear_id', 'webhook_id']);
    if (this.hooked.has(deliveries)) return;
    this.hooked.add(deliveries);
    const insert = deliveries.insert.bind(deliveries);
    deliveries.insert = (data) => {
      if (data.webhook_id !== TARGET_WEBHOOK_ID) return insert(data);
      const payload = data.payload as { type?: string };
      void this.webhooks.deliver(String(payload.type), payload);
      return data as EngineRecord;
    };
  }

  /**
   * The app's target as a subscription the engine dispatches to (every resource type, public teams). It is
   * always there, as the app's webhook is in a real workspace; without a target the outbox drops its events.
   */
  private ensureTargetSubscription(): void {
    const subscriptions = this.engine.store.collection('linear.webhooks', ['linear_id', 'team_id']);
    if (subscriptions.findOneBy('linear_id', TARGET_WEBHOOK_ID)) return;
    subscriptions.insert({
      linear_id: TARGET_WEBHOOK_ID,
      label: 'Twinbox app',
      // Never fetched by us: the delivery is intercepted; a data: URL keeps the engine's own fetch offline.
      url: 'data:,',
      secret: null,
      enabled: true,
      team_id: null,
      all_public_teams: true,
      resource_types: ['*'],
      creator_id: null,
    });
  }

  authorize(head: RequestHead): Authorization {
    const path = head.url.pathname;
    if (path.startsWith('/oauth/')) return 'public';
    const key = presentedKey(head.headers.get('authorization'));
    if (!key) return notAuthenticated();
    return isKnownSecret(key, this.liveTokens()) ? true : notAuthenticated();
  }

  /**
   * A GraphQL POST changes state only when its document holds a mutation, and a mutation's document must
   * spell the keyword: a body without it is a read (a query, introspection), for which the runtime does
   * not diff and save the whole state (about 150 µs a call). A body with the word anywhere (a field or a
   * string that spells it), or with a JSON `\u` escape that could hide it, counts as a write: at worst an
   * extra save, never a change left unsaved.
   */
  changesState(head: RequestHead, body: Buffer): boolean {
    if (head.method !== 'POST' || head.url.pathname !== '/graphql') return changesStateByMethod(head.method);
    return body.includes('mutation') || body.includes('\\u');
  }

  override async handle(request: Request): Promise<Response> {
    const { pathname } = new URL(request.url);
    // The engine's HTML inspector at / lists tokens and secrets: not part of Linear's API.
    if (pathname !== '/graphql' && !pathname.startsWith('/oauth/'))
      return linearError(404, 'invalid input', 'NOT_FOUND', `Cannot ${request.method} ${pathname}`);
    if (pathname !== '/graphql' || request.method !== 'POST') return this.engine.app.fetch(request);
    const text = await request.text();
    const call = this.calls.get(text) ?? (await this.prepareCall(text, request.url));
    if (call instanceof Response) return call;
    const headers = new Headers(request.headers);
    headers.delete('content-length');
    const response = await this.engine.app.fetch(
      new Request(request.url, { method: 'POST', headers, body: call.engineBody }),
    );
    if (!call.fitted || !response.headers.get('content-type')?.includes('json')) return response;
    const engineText = await response.text();
    // The shaped answer is a function of the engine's answer alone (the document, variables and base URL
    // being fixed for this call): the same text again, as a repeated query's is until the state changes,
    // gets the same bytes without parsing, executing against Linear's schema and serialising once more.
    const last = call.last;
    if (last && last.status === response.status && last.engineText === engineText)
      return bytesAnswer(last.out, { status: response.status, headers: LINEAR_JSON });
    const answer = JSON.parse(engineText) as { data?: unknown; errors?: unknown[] };
    // An answer with errors goes as the engine gave it: filling its nulls would hide what failed.
    if (answer.data && !answer.errors?.length)
      answer.data =
        (await conformAnswer(
          call.fitted.original,
          call.variables,
          call.operationName,
          answer.data,
          this.baseUrl,
        )) ?? answer.data;
    const out = Buffer.from(JSON.stringify(answer));
    // Shared, not copied: the runtime writes an answer's bytes and never changes them (GitHub's kept
    // repository answers are shared the same way).
    this.keepAnswer(text, call, { status: response.status, engineText, out });
    return bytesAnswer(out, { status: response.status, headers: LINEAR_JSON });
  }

  /** Keeps `last` beside the prepared call of `text`, within the bounds (KEPT_SIZE_MAX). */
  private keepAnswer(text: string, call: PreparedCall, last: NonNullable<PreparedCall['last']>): void {
    const size = last.engineText.length + last.out.length;
    // A call dropped meanwhile (the map started over) is not kept again here.
    if (size > KEPT_ANSWER_MAX || this.calls.get(text) !== call) return;
    this.keptSize += size - (call.last ? call.last.engineText.length + call.last.out.length : 0);
    call.last = last;
    if (this.keptSize > KEPT_SIZE_MAX) this.forgetCalls();
  }

  private forgetCalls(): void {
    this.calls.clear();
    this.keptSize = 0;
  }

  /**
   * A GraphQL request body parsed, fitted to the engine's schema and serialised for it, or Linear's error
   * for a body that is not a GraphQL request. Kept by the body's text: the SDK sends the same few bodies
   * again and again, and all of this follows from the text alone (the engine's schema is fixed).
   */
  private async prepareCall(text: string, url: string): Promise<PreparedCall | Response> {
    let body: { query?: unknown; variables?: unknown; operationName?: unknown };
    try {
      body = JSON.parse(text) as typeof body;
    } catch {
      return linearError(400, 'graphql error', 'INVALID_JSON', 'Request body is not valid JSON');
    }
    if (!body || typeof body !== 'object' || typeof body.query !== 'string')
      return linearError(400, 'graphql error', 'GRAPHQL_VALIDATION_FAILED', 'Must provide query string.');
    const variables =
      body.variables && typeof body.variables === 'object' && !Array.isArray(body.variables)
        ? (body.variables as Record<string, unknown>)
        : {};
    const schema = await linearEngineSchema((b) =>
      this.engine.app.fetch(
        new Request(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: this.credentials.LINEAR_API_KEY! },
          body: b,
        }),
      ),
    );
    const fitted = fitDocument(schema, body.query, variables);
    const call: PreparedCall = {
      fitted,
      variables,
      operationName: typeof body.operationName === 'string' ? body.operationName : undefined,
      engineBody: JSON.stringify({
        query: fitted?.query ?? body.query,
        variables: fitted?.variables ?? variables,
        operationName: body.operationName,
      }),
    };
    // Bounded: a client that sends ever new bodies (variables that change each call) starts it over.
    const size = text.length + call.engineBody.length;
    if (size > KEPT_ANSWER_MAX) return call;
    if (this.calls.size >= PREPARED_CALLS_MAX || this.keptSize + size > KEPT_SIZE_MAX) this.forgetCalls();
    this.calls.set(text, call);
    this.keptSize += size;
    return call;
  }

  errorResponse(status: number, message: string, code?: string): Response {
    if (code === 'too_large')
      return linearError(413, 'invalid input', 'PAYLOAD_TOO_LARGE', 'Request body is too large.');
    if (status >= 500) return linearError(500, 'internal error', 'INTERNAL_SERVER_ERROR', 'Internal error');
    return linearError(status, 'invalid input', 'INVALID_INPUT', message);
  }

  faultResponse(kind: 'status' | 'rate_limit', status: number): Response {
    if (kind === 'rate_limit') {
      const reset = String(Date.now() + 60_000);
      return linearError(400, 'ratelimited', 'RATELIMITED', 'Rate limit exceeded', {
        'x-ratelimit-requests-limit': '1500',
        'x-ratelimit-requests-remaining': '0',
        'x-ratelimit-requests-reset': reset,
      });
    }
    return status >= 500
      ? linearError(status, 'internal error', 'INTERNAL_SERVER_ERROR', 'Internal error')
      : linearError(status, 'invalid input', 'INVALID_INPUT', 'The request could not be processed.');
  }

  envVars(): Record<string, string> {
    return {
      LINEAR_API_KEY: this.credentials.LINEAR_API_KEY!,
      // @linear/sdk has no environment variable for its endpoint: the app passes this as `apiUrl`.
      LINEAR_API_URL: `${this.baseUrl}/graphql`,
      LINEAR_WEBHOOK_SECRET: this.credentials.LINEAR_WEBHOOK_SECRET!,
    };
  }

  override secrets(): string[] {
    return [...super.secrets(), ...this.tokens.all().map((t) => String(t.token))];
  }

  override restore(saved: EngineTwinSaved): void {
    super.restore(saved);
    this.removeEngineCredentials();
    this.ensureTargetSubscription();
  }

  protected override afterReset(): void {
    this.removeEngineCredentials();
    this.ensureTargetSubscription();
  }

  async applySeed(raw: unknown): Promise<void> {
    const seed = raw as LinearSeed;
    this.engine.seedFromConfig(engineSeed(seed));
    if (seed.webhook) this.configureTarget(seed.webhook);
  }

  configureTarget(w: NonNullable<LinearSeed['webhook']>): void {
    this.webhooks.target = {
      url: w.url,
      secret: this.credentials.LINEAR_WEBHOOK_SECRET!,
      events: w.events ?? ['*'],
    };
  }
}

/** The engine's seed config: ours, plus the API key as a personal token of the workspace's first admin. */
function engineSeed(seed: LinearSeed, apiKey?: string) {
  const admin = seed.users?.find((u) => u.admin)?.email ?? DEFAULT_ADMIN;
  const { webhook: _webhook, ...rest } = seed;
  return {
    ...rest,
    ...(apiKey ? { tokens: [{ token: apiKey, user: admin, scopes: SCOPES }] } : {}),
  };
}

export const linearTwin = engineTwinFactory(linearDescriptor, {
  newCredentials: () => ({
    LINEAR_API_KEY: randomToken('lin_api_', 30),
    LINEAR_WEBHOOK_SECRET: randomToken('lin_wh_', 24),
  }),
  engineSeed: (seed, credentials) => ({
    tokens: {},
    linear: engineSeed(seed, credentials.LINEAR_API_KEY),
  }),
  driver: (engine, baseUrl, credentials) => new LinearTwin(engine, baseUrl, credentials),
  fresh(twin, seed) {
    if (seed.webhook) twin.configureTarget(seed.webhook);
  },
});
