import { createHmac, randomBytes } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import {
  changesStateByMethod,
  TwinInputError,
  type Authorization,
  type Granted,
  type RequestHead,
} from '../../contract.ts';
import type { Engine, EngineTokenUser } from '../../engine/emulate.ts';
import { EngineTwin } from '../../engine/engine-twin.ts';
import type { EngineTwinSaved } from '../../engine/engine-twin.ts';
import { credentialFieldsSaved, engineTwinFactory } from '../../engine/factory.ts';
import { json } from '../../runtime/http.ts';
import { isKnownSecret, presentedToken, randomToken } from '../../runtime/secrets.ts';
import type { WebhookSigner } from '../../runtime/webhooks.ts';
import { SlackShape } from './shape.ts';
import { TokenRevocations } from './revocation.ts';
import { SocketModeHub } from './socket-mode.ts';
import { SlackAppActions } from './app-actions.ts';
import { slackDescriptor, type SlackSeed } from './descriptor.ts';

/** What the Slack twin keeps beside the engine's state (EngineTwinSaved's `extra`). */
interface SlackExtra {
  /** SHA-256 digests of tokens revoked with auth.revoke. */
  revoked?: string[];
}

/** The name of the bot user SLACK_BOT_TOKEN authenticates as. */
const botNameOf = (seed: SlackSeed) => seed.bot_name ?? 'twinbox-bot';

const engineChannels = (channels: NonNullable<SlackSeed['channels']>) =>
  channels.map(({ members: _m, messages: _h, ...channel }) => channel);

function engineSeed(seed: SlackSeed, botName: string) {
  return {
    ...(seed.team ? { team: seed.team } : {}),
    users: [
      ...(seed.users ?? []),
      { name: botName, real_name: botName, email: `${botName}@bots.slack.local` },
    ],
    ...(seed.channels ? { channels: engineChannels(seed.channels) } : {}),
    bots: [{ name: botName }],
  };
}

/**
 * Slack's request signing (`v0=` HMAC of `v0:<timestamp>:<body>`), as Bolt verifies it; a retry says
 * which one it is and why, as the Events API does.
 */
export const slackSigner: WebhookSigner = ({ body, secret, attempt, retryReason }) => {
  const ts = String(Math.floor(Date.now() / 1000));
  return {
    'user-agent': 'Slackbot 1.0 (+https://api.slack.com/robots)',
    'x-slack-request-timestamp': ts,
    'x-slack-signature': `v0=${createHmac('sha256', secret).update(`v0:${ts}:${body}`).digest('hex')}`,
    ...(attempt > 1
      ? { 'x-slack-retry-num': String(attempt - 1), 'x-slack-retry-reason': retryReason ?? 'http_error' }
      : {}),
  };
};

/** Slack answers Web API errors with HTTP 200 and `ok: false`; @slack/web-api raises them as platform errors. */
const slackError = (error: string, status = 200) => json(status, { ok: false, error });

/** Incoming webhooks and upload URLs answer errors as plain text. */
const slackText = (status: number, text: string) =>
  new Response(text, { status, headers: { 'content-type': 'text/plain; charset=utf-8' } });

/** Methods called with client credentials (in the body or Basic), not a token. */
const CLIENT_CREDENTIAL_METHODS = new Set([
  '/api/oauth.v2.access',
  '/api/oauth.access',
  '/api/openid.connect.token',
]);

const FORM = /^application\/x-www-form-urlencoded/i;

/**
 * Web API methods that only read. Slack's methods are POSTs, reads included, so by its method each would
 * be taken for a write, and the instance would diff the whole state against the journal after it (most
 * of an `auth.test`'s cost). test/twins/slack.test.ts calls each of them and checks the state is unchanged.
 */
export const READ_METHODS = new Set(
  [
    'auth.test',
    'bookmarks.list',
    'bots.info',
    'chat.getPermalink',
    'chat.scheduledMessages.list',
    'conversations.history',
    'conversations.info',
    'conversations.list',
    'conversations.members',
    'conversations.replies',
    'files.info',
    'files.list',
    'pins.list',
    'reactions.get',
    'team.info',
    'users.getPresence',
    'users.info',
    'users.list',
    'users.lookupByEmail',
    'users.profile.get',
  ].map((method) => `/api/${method}`),
);

/** The one method an app-level token (`xapp-...`) may call; bot and user tokens may not call it. */
const CONNECTIONS_OPEN = '/api/apps.connections.open';

/**
 * Credentials beside the env vars' (persisted with them): the verification token Slack still puts in
 * every payload (`token`), deprecated but read by older apps.
 */
const VERIFICATION_TOKEN = 'verification_token';

/** An app-level token as Slack writes them: `xapp-1-<app id>-<13 digits>-<64 hex>`. */
function newAppToken(): string {
  const appId = `A0${randomBytes(8).toString('hex').toUpperCase().slice(0, 9)}`;
  const digits = String(Date.now()).padStart(13, '0').slice(-13);
  return `xapp-1-${appId}-${digits}-${randomBytes(32).toString('hex')}`;
}

/** The credentials a Slack twin has beyond the ones it started with (a state saved before they existed). */
function withNewerCredentials(credentials: Record<string, string>): Record<string, string> {
  return {
    ...credentials,
    SLACK_APP_TOKEN: credentials.SLACK_APP_TOKEN ?? newAppToken(),
    [VERIFICATION_TOKEN]: credentials[VERIFICATION_TOKEN] ?? randomToken('', 18),
  };
}

/**
 * Whether the consent form's post names a `redirect_uri` that is an absolute URL. The engine redirects to
 * it without checking, and a missing or relative one was a 500.
 */
async function hasAbsoluteRedirect(request: Request): Promise<boolean> {
  try {
    const uri = (await request.clone().formData()).get('redirect_uri');
    return typeof uri === 'string' && URL.canParse(uri);
  } catch {
    // Not a form at all (JSON, text, a broken multipart body): the engine would read no redirect_uri.
    return false;
  }
}

/**
 * Whether the body's `limit`, read as the engine reads it (`Number()` of the form field or JSON value),
 * is negative or fractional: the engine's list methods then index past their page (a 500). Slack
 * answers `invalid_limit`. Other non-numbers are the engine's default, as before.
 */
function invalidLimit(body: Buffer, contentType: string): boolean {
  let limit: unknown;
  if (contentType.includes('application/json')) {
    try {
      const parsed: unknown = JSON.parse(body.toString('utf8'));
      if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) return false;
      limit = (parsed as { limit?: unknown }).limit;
    } catch {
      return false;
    }
  } else limit = new URLSearchParams(body.toString('utf8')).get('limit') ?? undefined;
  if (limit === undefined) return false;
  const n = Number(limit);
  return Number.isFinite(n) && (n < 0 || !Number.isInteger(n));
}

/** JSON that parses, to something other than an object or array (`null`, a number, a string, a boolean). */
function jsonScalar(body: Buffer): boolean {
  try {
    const parsed: unknown = JSON.parse(body.toString('utf8'));
    return parsed === null || typeof parsed !== 'object';
  } catch {
    return false;
  }
}

class SlackTwin extends EngineTwin {
  /** `blocks` and `attachments` arrive as JSON text in form fields, and the engine parses them. */
  readonly jsonFormFields = true;
  private readonly shape: SlackShape;
  private readonly revocations = new TokenRevocations();
  private readonly botName: string;
  /** The bot token's engine user, to give it back on reset after an auth.revoke. */
  private readonly botEntry: EngineTokenUser | undefined;
  /** Socket Mode: apps.connections.open's URLs and the app's WebSocket connections. */
  private readonly hub = new SocketModeHub(() => this.appId);
  private readonly actions: SlackAppActions;

  constructor(
    engine: Engine,
    baseUrl: string,
    credentials: Record<string, string>,
    private readonly seed: SlackSeed,
  ) {
    // The engine's events (messages, channel changes...) arrive as Events API envelopes (event_callback),
    // the body they are delivered with.
    super(engine, baseUrl, credentials, slackSigner);
    this.botName = botNameOf(seed);
    this.shape = new SlackShape(engine);
    this.botEntry = engine.tokenMap.get(this.botToken);
    this.actions = new SlackAppActions({
      engine,
      hub: this.hub,
      signer: slackSigner,
      signingSecret: this.signingSecret,
      verificationToken: this.credentials[VERIFICATION_TOKEN]!,
      appId: this.appId,
      baseUrl,
      target: () => this.webhooks.target,
      botUserId: () => this.botUserId(),
      call: (user, method, params) => this.call(user, method, params),
    });
    // While an app holds a Socket Mode connection, Slack sends its events there instead of to the
    // request URL; without one, they go over HTTP as before.
    const viaHttp = engine.webhooks.dispatch.bind(engine.webhooks);
    engine.webhooks.dispatch = async (event, action, payload, owner, repo) => {
      if (!this.hub.open || !this.sendsEvents()) return viaHttp(event, action, payload, owner, repo);
      this.hub.send('events_api', this.eventBody(event, payload, owner), {
        acceptsResponsePayload: false,
        retries: true,
      });
    };
  }

  private get appToken(): string {
    return this.credentials.SLACK_APP_TOKEN!;
  }

  /** The app's id, which its app-level token carries (`xapp-1-<app id>-...`). */
  private get appId(): string {
    return /^xapp-\d+-(A[A-Z0-9]+)-/.exec(this.appToken)?.[1] ?? 'A0TWINBOX';
  }

  private botUserId(): string | undefined {
    const users = this.engine.store.collection('slack.users', ['user_id', 'email']);
    return users.all().find((u) => u.name === this.botName)?.user_id as string | undefined;
  }

  /**
   * An Events API envelope as Slack sends it (its published event wrapper: `token`, `api_app_id`,
   * `authed_users`, `authorizations`), over HTTP and Socket Mode alike; a message event says its
   * `channel_type`.
   */
  protected override eventBody(_event: string, payload: unknown, _owner: string): unknown {
    if (!payload || typeof payload !== 'object') return payload;
    const envelope = payload as Record<string, unknown>;
    const event = envelope.event as Record<string, unknown> | undefined;
    const bot = this.botUserId();
    // Every event says when it was dispatched (Slack's event wrapper requires it); the engine's do not.
    if (event && typeof event.event_ts !== 'string') {
      event.event_ts = typeof event.ts === 'string' ? event.ts : `${String(envelope.event_time)}.000000`;
    }
    if (event?.type === 'message' && typeof event.channel === 'string' && !event.channel_type) {
      const channels = this.engine.store.collection('slack.channels', ['channel_id', 'name']);
      const channel = channels.findOneBy('channel_id', event.channel);
      event.channel_type = channel?.is_im
        ? 'im'
        : channel?.is_mpim
          ? 'mpim'
          : channel?.is_private
            ? 'group'
            : 'channel';
    }
    return {
      token: this.credentials[VERIFICATION_TOKEN],
      team_id: envelope.team_id,
      api_app_id: this.appId,
      ...envelope,
      authed_users: bot ? [bot] : [],
      authorizations: [
        {
          enterprise_id: null,
          team_id: envelope.team_id,
          user_id: bot,
          is_bot: true,
          is_enterprise_install: false,
        },
      ],
      is_ext_shared_channel: false,
      event_context: `4-${Buffer.from(String(envelope.event_id ?? '')).toString('base64url')}`,
    };
  }

  /**
   * A Web API call as a user (by id) or the bot, from inside the twin (a person's message, an app's
   * response shown in the channel): through the engine, answered as `handle` answers. A user's call
   * runs on a token that exists for that call only.
   */
  private async call(
    user: string | undefined,
    method: string,
    params: Record<string, unknown>,
  ): Promise<Record<string, unknown>> {
    let token = this.botToken;
    if (user !== undefined) {
      token = randomToken('xoxp-twinbox-');
      this.engine.tokenMap.set(token, { ...(this.botEntry ?? { id: 0 }), login: user, scopes: [] });
    }
    try {
      const request = new Request(`${this.baseUrl}/api/${method}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify(params),
      });
      return (await (await this.forward(request)).json()) as Record<string, unknown>;
    } finally {
      if (user !== undefined) this.engine.tokenMap.delete(token);
    }
  }

  readonly adminRoutes = (method: string, subpath: string, body: unknown) =>
    this.actions.routes(method, subpath, body) ?? Promise.resolve(undefined);

  upgrade(request: IncomingMessage, socket: Duplex, head: Buffer, url: URL): Response | undefined {
    return this.hub.upgrade(request, socket, head, url);
  }

  override async close(): Promise<void> {
    this.hub.close();
    await super.close();
  }

  /** `apps.connections.open`: the app-level token only (`not_allowed_token_type` for any other). */
  private connectionsOpen(request: Request, token: string | undefined): Response {
    if (!token) return slackError('not_authed');
    if (isKnownSecret(token, [this.appToken])) {
      return json(200, { ok: true, url: this.hub.connectionUrl(new URL(request.url).origin) });
    }
    if (this.knownToken(token)) return slackError('not_allowed_token_type');
    return slackError(this.revocations.errorFor(token));
  }

  private get botToken(): string {
    return this.credentials.SLACK_BOT_TOKEN!;
  }

  private get signingSecret(): string {
    return this.credentials.SLACK_SIGNING_SECRET!;
  }

  /** The engine seeds bots without a user; make the bot a user so auth.test reports bot_id and user_id. */
  linkBotUser(): void {
    const users = this.engine.store.collection('slack.users', ['user_id', 'email']);
    const bots = this.engine.store.collection('slack.bots', ['bot_id']);
    const user = users.all().find((u) => u.name === this.botName);
    const bot = bots.all().find((b) => b.name === this.botName);
    if (user && bot) {
      users.update(user.id, { is_bot: true });
      bots.update(bot.id, { user_id: user.user_id });
    }
  }

  /** Tokens this twin issued: the bot token, and whatever its OAuth and seeds added. */
  private knownToken(token: string): boolean {
    const stored = this.engine.store.collection('slack.tokens', ['token', 'user_id', 'app_id', 'team_id']);
    return isKnownSecret(token, [
      ...this.engine.tokenMap.keys(),
      ...stored.all().map((r) => String(r.token)),
    ]);
  }

  /** A write by its method, except the Web API methods that only read (READ_METHODS). */
  changesState(head: RequestHead): boolean {
    return changesStateByMethod(head.method) && !READ_METHODS.has(head.url.pathname);
  }

  /**
   * Before any body is read. The engine takes any unknown token as its default user; we do not: a token
   * in the `Authorization` header (or `?token=`) must be one the twin knows (compared in constant time).
   * A form post without the header may carry `token` in its body, as Slack allows: that body is read
   * (capped) and `handle` checks the token. The OAuth pages and client-credential methods are public,
   * incoming webhooks and upload URLs are authorised by the secret in their path.
   */
  authorize(head: RequestHead): Authorization {
    const { pathname, searchParams } = head.url;
    if (CLIENT_CREDENTIAL_METHODS.has(pathname) || pathname.startsWith('/oauth/')) return 'public';
    if (pathname.startsWith('/services/')) {
      const hooks = this.engine.store.collection('slack.incoming_webhooks', ['token']).all();
      const known = hooks.map((h) => String(h.token));
      return isKnownSecret(pathname.split('/')[4] ?? '', known) ? true : slackText(403, 'invalid_token');
    }
    if (pathname.startsWith('/commands/')) {
      return head.method === 'POST' && this.actions.knowsResponseUrl(pathname)
        ? 'public'
        : slackText(404, 'expired_url');
    }
    if (pathname.startsWith('/upload/v1/')) {
      const sessions = this.engine.store.collection('slack.file_upload_sessions', ['file_id']);
      const session = sessions.all().find((f) => f.file_id === pathname.split('/')[3]);
      return session && !session.completed ? 'public' : slackText(404, 'file_not_found');
    }
    const header = head.headers.get('authorization');
    const presented = header ? presentedToken(header)?.token : (searchParams.get('token') ?? undefined);
    if (header !== null || presented !== undefined) {
      const app = !!presented && isKnownSecret(presented, [this.appToken]);
      if (pathname === CONNECTIONS_OPEN && (app || (presented && this.knownToken(presented)))) {
        return true;
      }
      if (app) return slackError('not_allowed_token_type');
      return presented && this.knownToken(presented)
        ? true
        : slackError(this.revocations.errorFor(presented));
    }
    if (!pathname.startsWith('/api/')) {
      return ['GET', 'HEAD', 'OPTIONS'].includes(head.method) ? 'public' : slackError('not_authed');
    }
    return head.method === 'POST' && FORM.test(head.headers.get('content-type') ?? '')
      ? 'public'
      : slackError('not_authed');
  }

  /** Called by the instance once `authorize` let the request in (`granted`) and its input screen passed. */
  override async handle(request: Request, granted: Granted): Promise<Response> {
    const url = new URL(request.url);
    const body = Buffer.from(await request.clone().arrayBuffer());
    const contentType = request.headers.get('content-type') ?? '';
    // oauth.v2.access parses its JSON body itself and reads fields of `null` (a 500); every other method
    // takes JSON that is not an object as no parameters, and so does it now.
    if (contentType.includes('application/json') && jsonScalar(body)) {
      request = new Request(request, { body: '{}' });
    }
    if (url.pathname.startsWith('/api/') && invalidLimit(body, contentType)) {
      return slackError('invalid_limit');
    }
    if (url.pathname.startsWith('/commands/')) return this.actions.answerResponseUrl(request);
    if (url.pathname === CONNECTIONS_OPEN) {
      const fromForm = FORM.test(contentType) ? new URLSearchParams(body.toString('utf8')) : undefined;
      const token =
        presentedToken(request.headers.get('authorization'))?.token ??
        url.searchParams.get('token') ??
        fromForm?.get('token') ??
        undefined;
      return this.connectionsOpen(request, token);
    }
    const consent = request.method === 'POST' && url.pathname === '/oauth/v2/authorize/callback';
    if (consent && !(await hasAbsoluteRedirect(request))) {
      return slackText(400, 'bad_redirect_uri');
    }
    // The engine reads tokens from the header only: a token from the query or the form moves there. On
    // a public route, a header that is not a known token (nor Basic client credentials) is dropped: the
    // engine would take an unknown token as its default user.
    const headers = new Headers(request.headers);
    const presented = presentedToken(headers.get('authorization'));
    if (!headers.has('authorization')) {
      let token = url.searchParams.get('token') ?? undefined;
      const formToken = granted === 'public' && url.pathname.startsWith('/api/');
      if (token === undefined && formToken && !CLIENT_CREDENTIAL_METHODS.has(url.pathname)) {
        token = new URLSearchParams(body.toString('utf8')).get('token') ?? undefined;
        if (!token) return slackError('not_authed');
        if (isKnownSecret(token, [this.appToken])) return slackError('not_allowed_token_type');
        if (!this.knownToken(token)) return slackError(this.revocations.errorFor(token));
      }
      if (token === undefined) return this.forward(request);
      headers.set('authorization', `Bearer ${token}`);
    } else if (granted === 'public' && presented?.scheme !== 'basic') {
      if (presented && this.knownToken(presented.token)) return this.forward(request);
      headers.delete('authorization');
    } else return this.forward(request);
    return this.forward(new Request(request, { headers }));
  }

  /**
   * To the engine, and its answer brought to Slack's documented shape (shape.ts). `auth.revoke`, which
   * the engine lacks, is answered here for the token the request carries.
   */
  private async forward(request: Request): Promise<Response> {
    const presented = presentedToken(request.headers.get('authorization'));
    const token = presented && presented.scheme !== 'basic' ? presented.token : undefined;
    const { pathname, searchParams } = new URL(request.url);
    if (pathname === '/api/auth.revoke' && token && this.knownToken(token)) {
      const form = new URLSearchParams(await request.clone().text());
      const test = searchParams.get('test') ?? form.get('test');
      return this.revocations.revoke(this.engine, token, test === 'true' || test === '1');
    }
    // The engine reads the body; a copy keeps the parameters for the answer's fixes.
    const copy = this.shape.changes(pathname) ? request.clone() : request;
    const response = await this.engine.app.fetch(request);
    return this.shape.finish(copy, response, token && this.userIdOf(token));
  }

  /** The Slack user id a token acts as. */
  private userIdOf(token: string): string | undefined {
    const users = this.engine.store.collection('slack.users', ['user_id', 'email']);
    const login = this.engine.tokenMap.get(token)?.login;
    if (login) return users.all().find((u) => u.name === login)?.user_id as string | undefined;
    const stored = this.engine.store.collection('slack.tokens', ['token', 'user_id', 'app_id', 'team_id']);
    return stored.findOneBy('token', token)?.user_id as string | undefined;
  }

  /** Slack's `{ok: false, error}`: `invalid_json` and `invalid_arguments` as Slack sends them (HTTP 200). */
  errorResponse(status: number, _message: string, code?: string): Response {
    if (code === 'invalid_json') return slackError('invalid_json');
    if (code === 'too_large') return slackError('request_too_large', 413);
    if (status >= 500) return slackError('internal_error', status);
    if (status === 401) return slackError('invalid_auth');
    return slackError('invalid_arguments');
  }

  envVars(): Record<string, string> {
    return {
      SLACK_BOT_TOKEN: this.botToken,
      SLACK_SIGNING_SECRET: this.signingSecret,
      // @slack/web-api's `slackApiUrl` option: the API root including /api/.
      SLACK_API_URL: `${this.baseUrl}/api/`,
      // The app-level token Socket Mode connects with (Bolt's `appToken`, as its template names it).
      SLACK_APP_TOKEN: this.appToken,
    };
  }

  protected override saveExtra(): SlackExtra {
    return { revoked: this.revocations.list() };
  }

  protected override restoreExtra(extra: unknown): void {
    this.revocations.restore((extra as SlackExtra | undefined)?.revoked ?? []);
  }

  /** Reset is a fresh install: a bot token revoked since works again, and is the only token left. */
  protected override afterReset(): void {
    const own = this.engine.tokenMap.get(this.botToken) ?? this.botEntry;
    this.hub.clear();
    this.revocations.clear();
    this.engine.tokenMap.clear();
    if (own) this.engine.tokenMap.set(this.botToken, own);
    this.linkBotUser();
    this.applyChannelContent(this.seed);
  }

  /**
   * What the engine's own seeding does not do: topic/purpose of a channel that already existed (the
   * engine always has #general and #random), `members`, and message history. Written to the engine's
   * store directly, so it sends no events.
   */
  applyChannelContent(seed: SlackSeed): void {
    const users = this.engine.store.collection('slack.users', ['user_id', 'email']);
    const channels = this.engine.store.collection('slack.channels', ['channel_id', 'name']);
    const messages = this.engine.store.collection('slack.messages', ['ts', 'channel_id']);
    const userId = (name: string, at: string) => {
      const user = users.all().find((u) => u.name === name && !u.deleted);
      if (!user) throw new TwinInputError(400, `slack seed: "${at}" "${name}" is not a seeded user`);
      return user.user_id as string;
    };
    const defaultAuthor = seed.users?.[0]?.name ?? this.seed.users?.[0]?.name;
    const total = (seed.channels ?? []).reduce((n, c) => n + (c.messages?.length ?? 0), 0);
    // Seeded history is in order, one second apart, ending a minute ago, and after any existing message
    // (so POST /seed appends to a channel's history).
    const latest = Math.max(0, ...messages.all().map((m) => Math.floor(Number(m.ts)) + 1));
    let clock = Math.max(Math.floor(Date.now() / 1000) - 60 - total, latest);
    let seq = 0;
    for (const [i, ch] of (seed.channels ?? []).entries()) {
      const channel = channels.all().find((c) => c.name === ch.name);
      if (!channel) continue;
      const now = Math.floor(Date.now() / 1000);
      const changes: Record<string, unknown> = {};
      const creator = channel.creator as string;
      if (ch.topic !== undefined) changes.topic = { value: ch.topic, creator, last_set: now };
      if (ch.purpose !== undefined) changes.purpose = { value: ch.purpose, creator, last_set: now };
      // Every user by default, as the engine does for the channels it creates (#general predates the seed).
      const ids = ch.members
        ? ch.members.map((name, k) => userId(name, `channels[${i}].members[${k}]`))
        : users
            .all()
            .filter((u) => !u.deleted)
            .map((u) => u.user_id as string);
      const bot = users.all().find((u) => u.name === this.botName)?.user_id as string | undefined;
      const members = [...new Set([...ids, ...(bot ? [bot] : [])])];
      changes.members = members;
      changes.num_members = members.length;
      channels.update(channel.id, changes);
      for (const [k, message] of (ch.messages ?? []).entries()) {
        const author = message.user ?? defaultAuthor;
        const at = `channels[${i}].messages[${k}].user`;
        if (!author)
          throw new TwinInputError(400, `slack seed: "${at}" is required when no users are seeded`);
        messages.insert({
          ts: `${clock++}.${String(++seq).padStart(6, '0')}`,
          channel_id: channel.channel_id,
          user: userId(author, at),
          text: message.text,
          type: 'message',
          reply_count: 0,
          reply_users: [],
          reactions: [],
        });
      }
    }
  }

  async applySeed(raw: unknown): Promise<void> {
    const seed = raw as SlackSeed;
    this.engine.seedFromConfig({
      ...(seed.team ? { team: seed.team } : {}),
      ...(seed.users ? { users: seed.users } : {}),
      ...(seed.channels ? { channels: engineChannels(seed.channels) } : {}),
    });
    this.applyChannelContent(seed);
    if (seed.webhook) this.configureTarget(seed.webhook);
  }

  configureTarget(w: NonNullable<SlackSeed['webhook']>): void {
    this.webhooks.target = { url: w.url, secret: this.signingSecret, events: w.events ?? ['*'] };
  }

  faultResponse(kind: 'status' | 'rate_limit', status: number): Response {
    if (kind === 'rate_limit') return json(429, { ok: false, error: 'ratelimited' }, { 'retry-after': '1' });
    return json(status, { ok: false, error: status >= 500 ? 'internal_error' : 'invalid_request' });
  }
}

const readOldSlack = credentialFieldsSaved({
  SLACK_BOT_TOKEN: 'bot_token',
  SLACK_SIGNING_SECRET: 'signing_secret',
});

export const slackTwin = engineTwinFactory(slackDescriptor, {
  newCredentials: () =>
    withNewerCredentials({
      SLACK_BOT_TOKEN: randomToken('xoxb-'),
      SLACK_SIGNING_SECRET: randomToken('', 16),
    }),
  engineSeed: (seed, credentials) => ({
    tokens: { [credentials.SLACK_BOT_TOKEN!]: { login: botNameOf(seed), scopes: [] } },
    slack: engineSeed(seed, botNameOf(seed)),
  }),
  driver: (engine, baseUrl, credentials, seed) => new SlackTwin(engine, baseUrl, credentials, seed),
  fresh(twin, seed) {
    twin.linkBotUser();
    twin.applyChannelContent(seed);
    if (seed.webhook) twin.configureTarget(seed.webhook);
  },
  // Up to d4a1e50 the twin saved its credentials in fields of their own: read once, saved anew. A state
  // saved before Socket Mode gets its app-level token now, kept from then on.
  readSaved: (saved): EngineTwinSaved => {
    const read = readOldSlack(saved);
    return { ...read, credentials: withNewerCredentials(read.credentials) };
  },
});
