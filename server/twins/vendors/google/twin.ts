import { randomBytes } from 'node:crypto';
import { type Authorization, type RequestHead } from '../../contract.ts';
import { type Engine } from '../../engine/emulate.ts';
import { OAuthEngineTwin } from '../../engine/oauth-engine-twin.ts';
import { engineTwinFactory } from '../../engine/factory.ts';
import { json } from '../../runtime/http.ts';
import { presentedToken, randomToken } from '../../runtime/secrets.ts';
import { googleDescriptor, type GoogleSeed } from './descriptor.ts';

/** The account a sandbox has when its seed names none. */
const DEFAULT_USER = { email: 'user@example.com', name: 'Sandbox User' };

/** The seed's accounts, or the default one when it names none. */
const usersOf = (seed: GoogleSeed) => (seed.users?.length ? seed.users : [DEFAULT_USER]);

/** Google's JSON API error body (https://cloud.google.com/apis/design/errors#http_mapping). */
function googleError(
  code: number,
  status: string,
  reason: string,
  message: string,
  headers: Record<string, string> = {},
): Response {
  return json(
    code,
    { error: { code, message, errors: [{ message, domain: 'global', reason }], status } },
    headers,
  );
}

const STATUS_OF: Record<number, [string, string]> = {
  400: ['INVALID_ARGUMENT', 'badRequest'],
  401: ['UNAUTHENTICATED', 'authError'],
  403: ['PERMISSION_DENIED', 'forbidden'],
  404: ['NOT_FOUND', 'notFound'],
  409: ['ALREADY_EXISTS', 'conflict'],
  413: ['INVALID_ARGUMENT', 'uploadTooLarge'],
  429: ['RESOURCE_EXHAUSTED', 'rateLimitExceeded'],
  500: ['INTERNAL', 'backendError'],
  503: ['UNAVAILABLE', 'backendError'],
};

function googleStatusError(code: number, message: string): Response {
  const [status, reason] = STATUS_OF[code] ?? (code >= 500 ? STATUS_OF[500]! : STATUS_OF[400]!);
  return googleError(code, status, reason, message);
}

/** The paths of Google's APIs that take an OAuth access token (the OAuth endpoints themselves are public). */
const API_PATH = /^\/(gmail|calendar|drive|upload)\/|^\/oauth2\/v[23]\/userinfo$/;

/** The engine's own demo account, present in every engine store: not in a Twinbox sandbox. */
const ENGINE_DEMO_USER = 'testuser@gmail.com';

class GoogleTwin extends OAuthEngineTwin {
  constructor(
    engine: Engine,
    baseUrl: string,
    credentials: Record<string, string>,
    private readonly seed: GoogleSeed,
  ) {
    super(engine, baseUrl, credentials, {
      usersCollection: 'google.users',
      usersIndexes: ['email'],
      demoEmail: ENGINE_DEMO_USER,
      seed,
    });
  }

  private get account(): string {
    return this.seed.users?.[0]?.email ?? DEFAULT_USER.email;
  }

  private refreshTokens(): Map<string, { email: string; scope: string; clientId: string }> {
    let map = this.engine.store.getData<Map<string, { email: string; scope: string; clientId: string }>>(
      'google.oauth.refreshTokens',
    );
    if (!(map instanceof Map)) {
      map = new Map(Object.entries(map ?? {}));
      this.engine.store.setData('google.oauth.refreshTokens', map);
    }
    return map;
  }

  /**
   * API calls need an access token the twin issued (and that was not revoked): the engine would take any
   * bearer token as its first user. Google answers a missing or unknown token alike, 401 UNAUTHENTICATED.
   */
  authorize(head: RequestHead): Authorization {
    if (!API_PATH.test(head.url.pathname)) return 'public';
    const presented = presentedToken(head.headers.get('authorization'));
    if (presented?.scheme === 'bearer' && this.engine.tokenMap.has(presented.token)) return true;
    const challenge = {
      'www-authenticate': 'Bearer realm="https://accounts.google.com/", error="invalid_token"',
    };
    if (head.url.pathname.startsWith('/oauth2/'))
      return json(401, { error: 'invalid_request', error_description: 'Invalid Credentials' }, challenge);
    return presented
      ? googleError(401, 'UNAUTHENTICATED', 'authError', 'Invalid Credentials', challenge)
      : googleError(
          401,
          'UNAUTHENTICATED',
          'required',
          'Request is missing required authentication credential. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.',
          challenge,
        );
  }

  /** The engine answers an unknown route with a bare 404; Google's front end answers with its error body. */
  override async handle(request: Request): Promise<Response> {
    const url = new URL(request.url);
    // google-auth-library's revokeToken sends the token in the query (Google takes it there or in the
    // form body); the engine reads the body only.
    if (request.method === 'POST' && url.pathname === '/oauth2/revoke') {
      const queryToken = url.searchParams.get('token');
      await this.rememberRevoked(request, true);
      if (queryToken) {
        request = new Request(url, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ token: queryToken }),
        });
      }
    }
    const response = await this.engine.app.fetch(request);
    if (response.status === 404 && !response.headers.get('content-type')?.includes('json')) {
      return googleError(404, 'NOT_FOUND', 'notFound', 'Requested entity was not found.');
    }
    return response;
  }

  errorResponse(status: number, message: string, code?: string): Response {
    if (code === 'too_large') return googleStatusError(413, 'Request payload size exceeds the limit.');
    if (status >= 500) return googleStatusError(500, 'Backend Error');
    if (code === 'invalid_json') return googleStatusError(400, 'Invalid JSON payload received.');
    return googleStatusError(status, message);
  }

  faultResponse(kind: 'status' | 'rate_limit', status: number): Response {
    if (kind === 'rate_limit') {
      return googleError(
        429,
        'RESOURCE_EXHAUSTED',
        'rateLimitExceeded',
        'Quota exceeded for quota metric and limit of service (user rate limit).',
        { 'retry-after': '1' },
      );
    }
    return googleStatusError(status, status >= 500 ? 'Backend Error' : 'The request could not be processed.');
  }

  envVars(): Record<string, string> {
    const root = this.baseUrl;
    return {
      GOOGLE_CLIENT_ID: this.credentials.GOOGLE_CLIENT_ID!,
      GOOGLE_CLIENT_SECRET: this.credentials.GOOGLE_CLIENT_SECRET!,
      GOOGLE_REFRESH_TOKEN: this.credentials.GOOGLE_REFRESH_TOKEN!,
      // googleapis has no environment override for its hosts: the app passes these as `rootUrl` (API
      // clients) and as OAuth2Client's `endpoints` (docs/twins.md, "Google").
      GOOGLE_API_ROOT_URL: `${root}/`,
      GOOGLE_OAUTH2_AUTH_URL: `${root}/o/oauth2/v2/auth`,
      GOOGLE_OAUTH2_TOKEN_URL: `${root}/oauth2/token`,
      GOOGLE_OAUTH2_REVOKE_URL: `${root}/oauth2/revoke`,
      // OIDC clients (openid-client, Auth.js `issuer`) discover the rest from here.
      GOOGLE_ISSUER: root,
    };
  }

  /** Issued access and refresh tokens are secrets too: the log masks them wherever they appear. */
  override secrets(): string[] {
    return [
      this.credentials.GOOGLE_CLIENT_SECRET!,
      this.credentials.GOOGLE_REFRESH_TOKEN!,
      ...this.engine.tokenMap.keys(),
      ...this.refreshTokens().keys(),
      ...this.revoked,
    ];
  }

  /** The demo account owns mail, labels, events and files too: it leaves every Google collection. */
  protected override dropDemoAccount(): void {
    const store = this.engine.store;
    const collections = Object.keys(store.snapshot().collections).filter((n) => n.startsWith('google.'));
    for (const name of collections) {
      const col = store.collection(name);
      for (const item of col.all())
        if (item.user_email === ENGINE_DEMO_USER || item.email === ENGINE_DEMO_USER) col.delete(item.id);
    }
  }

  protected oauthClient(): Record<string, unknown> {
    return {
      client_id: this.credentials.GOOGLE_CLIENT_ID,
      client_secret: this.credentials.GOOGLE_CLIENT_SECRET,
    };
  }

  /** Also grants the first account's refresh token (GOOGLE_REFRESH_TOKEN), as a consent screen once did. */
  override prepare(): void {
    super.prepare();
    this.refreshTokens().set(this.credentials.GOOGLE_REFRESH_TOKEN!, {
      email: this.account,
      scope: GRANTED_SCOPES,
      clientId: this.credentials.GOOGLE_CLIENT_ID!,
    });
  }

  /** Routes googleapis calls that the engine lacks. */
  addRoutes(): void {
    // users.getProfile: the first call most Gmail integrations make, to learn whose mailbox it is.
    this.engine.priority.get('/gmail/v1/users/:userId/profile', (c) => {
      const login = (c.get('authUser') as { login?: string } | undefined)?.login;
      const userId = c.req.param('userId');
      if (!login || (userId !== 'me' && userId !== login))
        return googleError(404, 'NOT_FOUND', 'notFound', 'Requested entity was not found.');
      const messages = this.engine.store
        .collection('google.messages', ['gmail_id', 'thread_id', 'user_email'])
        .findBy('user_email', login);
      // Gmail's historyId is the mailbox's latest change: the newest of its messages' and history's ids.
      const ids = [
        ...messages.map((m) => m.history_id),
        ...this.engine.store
          .collection('google.history', ['gmail_id', 'message_gmail_id', 'user_email'])
          .findBy('user_email', login)
          .map((h) => h.gmail_id),
      ]
        .filter((id): id is string => typeof id === 'string' && /^\d+$/.test(id))
        .map(BigInt);
      return c.json({
        emailAddress: login,
        messagesTotal: messages.length,
        threadsTotal: new Set(messages.map((m) => m.thread_id)).size,
        historyId: String(ids.reduce((max, id) => (id > max ? id : max), 1n)),
      });
    });
  }

  async applySeed(raw: unknown): Promise<void> {
    const seed = raw as GoogleSeed;
    this.engine.seedFromConfig(engineSeed(seed, this.account));
  }
}

/** What GOOGLE_REFRESH_TOKEN was granted: sign-in and the Gmail, Calendar and Drive APIs. */
const GRANTED_SCOPES = [
  'openid',
  'email',
  'profile',
  'https://mail.google.com/',
  'https://www.googleapis.com/auth/calendar',
  'https://www.googleapis.com/auth/drive',
].join(' ');

/** The engine's seed format; objects without a `user_email` belong to `account`. */
function engineSeed(seed: GoogleSeed, account: string) {
  const owner = <T extends { user_email?: string }>(items: T[] | undefined) =>
    (items ?? []).map((item) => ({ ...item, user_email: item.user_email ?? account }));
  // A seeded label gets an id from its name, so messages can name it in `label_ids` (the engine would
  // take an unknown id as a new label's name).
  const labelId = (name: string) => `Label_${name.replace(/[^A-Za-z0-9]+/g, '_')}`;
  const named = new Set((seed.labels ?? []).map((l) => l.name));
  return {
    ...(seed.users ? { users: seed.users } : {}),
    labels: owner(seed.labels).map((l) => ({ ...l, id: labelId(l.name) })),
    messages: owner(seed.messages).map((m) => ({
      ...m,
      label_ids: (m.label_ids ?? ['INBOX', 'UNREAD']).map((id) => (named.has(id) ? labelId(id) : id)),
    })),
    calendar_events: owner(seed.calendar_events).map((e) => ({ ...e, calendar_id: 'primary' })),
    drive_items: owner(seed.drive_files),
  };
}

/** A client id in Google's shape (`<project number>-<32 chars>.apps.googleusercontent.com`). */
const googleClientId = () =>
  `${100000000000 + (randomBytes(4).readUInt32BE(0) % 899999999999)}-${randomBytes(16).toString('hex')}.apps.googleusercontent.com`;

export const googleTwin = engineTwinFactory(googleDescriptor, {
  newCredentials: () => ({
    GOOGLE_CLIENT_ID: googleClientId(),
    GOOGLE_CLIENT_SECRET: randomToken('GOCSPX-', 21),
    GOOGLE_REFRESH_TOKEN: randomToken('1//', 48),
  }),
  engineSeed: (seed) => ({
    tokens: {},
    google: engineSeed({ ...seed, users: usersOf(seed) }, seed.users?.[0]?.email ?? DEFAULT_USER.email),
  }),
  driver(engine, baseUrl, credentials, seed) {
    const twin = new GoogleTwin(engine, baseUrl, credentials, { ...seed, users: usersOf(seed) });
    twin.addRoutes();
    return twin;
  },
  fresh: (twin) => twin.prepare(),
});
