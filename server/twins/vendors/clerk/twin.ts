import { createPrivateKey, generateKeyPairSync } from 'node:crypto';
import { type Authorization, type RequestHead } from '../../contract.ts';
import { type Engine } from '../../engine/emulate.ts';
import { EngineTwin } from '../../engine/engine-twin.ts';
import { standardWebhookSigner } from '../../engine/standard-webhooks.ts';
import { engineTwinFactory } from '../../engine/factory.ts';
import { isKnownSecret, presentedToken, randomToken } from '../../runtime/secrets.ts';
import { RSA_MODULUS_BITS, takeGivenRsaKey } from '../../runtime/rsa-keys.ts';
import { clerkError, clerkJson, toClerkResponse } from './shape.ts';
import { hashPassword, passwordMatches } from './passwords.ts';
import { SessionTokens } from './session-tokens.ts';
import { clerkDescriptor, type ClerkSeed } from './descriptor.ts';

/** The engine's collections (its getClerkStore names), read and written by the twin's own routes. */
const USERS = 'clerk.users';
const EMAILS = 'clerk.emails';
const ORGS = 'clerk.orgs';
const MEMBERSHIPS = 'clerk.memberships';
const SESSIONS = 'clerk.sessions';
const OAUTH_APPS = 'clerk.oauth_apps';

/** `GET /v1/users/{id}/organization_memberships`, which the engine lacks. */
const USER_MEMBERSHIPS = /^\/v1\/users\/([^/]+)\/organization_memberships$/;
const MEMBERSHIP = /^\/v1\/organizations\/([^/]+)\/memberships\/([^/]+)$/;
const SESSION_TOKEN = /^\/v1\/sessions\/([^/]+)\/tokens(?:\/([^/]+))?$/;
const PASSWORD_WRITE = /^\/v1\/users(?:\/([^/]+))?$/;
const VERIFY_PASSWORD = /^\/v1\/users\/([^/]+)\/verify_password$/;

/** Clerk's publishable key: `pk_test_` + base64 of the Frontend API host and a `$` (what the SDKs decode). */
export function publishableKey(frontendApiHost: string): string {
  return `pk_test_${Buffer.from(`${frontendApiHost}$`).toString('base64')}`;
}

class ClerkTwin extends EngineTwin {
  readonly tokens: SessionTokens;

  constructor(
    engine: Engine,
    baseUrl: string,
    credentials: Record<string, string>,
    private readonly seed: ClerkSeed,
  ) {
    super(engine, baseUrl, credentials, standardWebhookSigner);
    this.tokens = new SessionTokens(engine.store, baseUrl, credentials.signing_key!);
  }

  private get secretKey(): string {
    return this.credentials.CLERK_SECRET_KEY!;
  }

  /**
   * Only the instance's secret key. Clerk answers a missing or malformed Authorization header and an unknown
   * key with 401 (https://clerk.com/docs/errors/authentication); the engine takes any `sk_test_` in its map.
   */
  authorize(head: RequestHead): Authorization {
    const presented = presentedToken(head.headers.get('authorization'));
    if (!presented || presented.scheme !== 'bearer') {
      return clerkError(
        401,
        'authorization_header_format_invalid',
        'Invalid Authorization header format',
        "Invalid Authorization header format. Must be 'Bearer <YOUR_API_KEY>'",
      );
    }
    if (isKnownSecret(presented.token, [this.secretKey])) return true;
    const message =
      'The provided Clerk Secret Key is invalid. Make sure that your Clerk Secret Key is correct.';
    return clerkError(401, 'clerk_key_invalid', message, message);
  }

  override async handle(request: Request): Promise<Response> {
    const url = new URL(request.url);
    const { pathname } = url;
    const method = request.method;
    // The Backend API lives under /v1; the engine's OAuth pages and HTML inspector are not part of it.
    if (!pathname.startsWith('/v1/')) return notFound();
    if (method === 'GET' && pathname === '/v1/jwks') return clerkJson(200, await this.tokens.jwks());
    let m: RegExpExecArray | null;
    if (method === 'POST' && (m = SESSION_TOKEN.exec(pathname)))
      return this.tokens.issue(m[1]!, m[2], request);
    if (method === 'GET' && (m = USER_MEMBERSHIPS.exec(pathname))) return this.userMemberships(m[1]!, url);
    if (method === 'GET' && pathname === '/v1/users/count') return this.countUsers(url);
    if (method === 'POST' && (m = VERIFY_PASSWORD.exec(pathname))) return this.verifyPassword(m[1]!, request);
    if (method === 'DELETE' && (m = MEMBERSHIP.exec(pathname)))
      return this.deleteMembership(m[1]!, m[2]!, request);
    let password: string | undefined;
    if ((method === 'POST' || method === 'PATCH') && PASSWORD_WRITE.test(pathname)) {
      const body = (await request
        .clone()
        .json()
        .catch(() => undefined)) as { password?: unknown } | undefined;
      if (typeof body?.password === 'string') password = body.password;
    }
    const response = await this.engine.app.fetch(request);
    const out = await toClerkResponse(
      method,
      pathname,
      response,
      url.searchParams.get('paginated') === 'true',
    );
    // The engine keeps the password as given; at rest it is a scrypt hash.
    if (password !== undefined && out.ok) {
      const { id } = (await out.clone().json()) as { id: string };
      this.storePassword(id, password);
    }
    return out;
  }

  private storePassword(clerkId: string, password: string): void {
    const users = this.engine.store.collection(USERS, ['clerk_id', 'username']);
    const user = users.findOneBy('clerk_id', clerkId);
    if (user)
      users.update(user.id, {
        password_hash: password ? hashPassword(password) : null,
        password_enabled: !!password,
      });
  }

  private async verifyPassword(userId: string, request: Request): Promise<Response> {
    const user = this.engine.store.collection(USERS, ['clerk_id', 'username']).findOneBy('clerk_id', userId);
    if (!user) return clerkError(404, 'resource_not_found', 'not found', 'Resource not found');
    const body = (await request.json().catch(() => undefined)) as { password?: unknown } | undefined;
    if (typeof body?.password !== 'string' || !body.password)
      return clerkError(422, 'form_param_missing', 'missing parameter', 'password must be included.', {
        param_name: 'password',
      });
    const hash = typeof user.password_hash === 'string' ? user.password_hash : '';
    // Clerk's description: 400 when the user has no password, 422 when it is wrong (never `verified: false`).
    if (!hash)
      return clerkError(400, 'password_not_set', 'no password', 'The user does not have a password set.');
    if (!passwordMatches(body.password, hash))
      return clerkError(
        422,
        'incorrect_password',
        'Password is incorrect.',
        'Password is incorrect. Try again.',
      );
    return clerkJson(200, { verified: true });
  }

  /** The engine counts every user whatever the filters; Clerk counts those `GET /users` would list. */
  private async countUsers(url: URL): Promise<Response> {
    // Without `query` or `email_address`, the only filters the engine's list applies, that is every user:
    // read off the store as the engine's own count does, not by listing through the engine. @clerk/backend's
    // getUserList asks for this count on every list, so the detour cost a second engine request per list.
    const { searchParams } = url;
    if (!searchParams.has('query') && !searchParams.has('email_address')) {
      const total_count = this.engine.store.collection(USERS, ['clerk_id', 'username']).all().length;
      return clerkJson(200, { object: 'total_count', total_count });
    }
    const list = new URL(url);
    list.pathname = '/v1/users';
    list.searchParams.set('limit', '1');
    list.searchParams.delete('offset');
    const response = await this.engine.app.fetch(
      new Request(list, { headers: { authorization: `Bearer ${this.secretKey}` } }),
    );
    if (!response.ok) return toClerkResponse('GET', '/v1/users', response);
    const { total_count } = (await response.json()) as { total_count: number };
    return clerkJson(200, { object: 'total_count', total_count });
  }

  /** An organization's memberships as the engine lists them. */
  private async orgMemberships(orgId: string): Promise<Array<Record<string, unknown>>> {
    const listed = await this.engine.app.fetch(
      new Request(`${this.baseUrl}/v1/organizations/${encodeURIComponent(orgId)}/memberships?limit=500`, {
        headers: { authorization: `Bearer ${this.secretKey}` },
      }),
    );
    return ((await listed.json()) as { data?: Array<Record<string, unknown>> }).data ?? [];
  }

  /** Clerk answers a removed membership with the membership itself; the engine with a deleted_object. */
  private async deleteMembership(orgId: string, userId: string, request: Request): Promise<Response> {
    const before = (await this.orgMemberships(orgId)).find(
      (m) => (m.public_user_data as { user_id?: string } | undefined)?.user_id === userId,
    );
    const response = await this.engine.app.fetch(request);
    if (!response.ok || !before)
      return toClerkResponse(request.method, new URL(request.url).pathname, response);
    const org = before.organization as { members_count?: number } | undefined;
    if (org && typeof org.members_count === 'number') org.members_count = Math.max(0, org.members_count - 1);
    return toClerkResponse('GET', '/v1/membership', Response.json(before));
  }

  /** A user's memberships, as the engine answers them per organization. */
  private async userMemberships(userId: string, url: URL): Promise<Response> {
    const user = this.engine.store.collection(USERS, ['clerk_id', 'username']).findOneBy('clerk_id', userId);
    if (!user) return clerkError(404, 'resource_not_found', 'not found', 'Resource not found');
    const limit = Math.min(Math.max(Number(url.searchParams.get('limit') ?? 10) || 10, 1), 500);
    const offset = Math.max(Number(url.searchParams.get('offset') ?? 0) || 0, 0);
    const memberships = this.engine.store
      .collection(MEMBERSHIPS, ['membership_id', 'org_id', 'user_id'])
      .findBy('user_id', userId);
    const data: unknown[] = [];
    for (const orgId of [...new Set(memberships.map((m) => String(m.org_id)))]) {
      data.push(
        ...(await this.orgMemberships(orgId)).filter(
          (m) => (m.public_user_data as { user_id?: string } | undefined)?.user_id === userId,
        ),
      );
    }
    const page = { data: data.slice(offset, offset + limit), total_count: data.length };
    return toClerkResponse('GET', url.pathname, Response.json(page));
  }

  errorResponse(status: number, message: string, code?: string): Response {
    if (code === 'too_large')
      return clerkError(
        413,
        'request_body_too_large',
        'Request body too large',
        'Request body is too large.',
      );
    if (status >= 500)
      return clerkError(500, 'internal_clerk_error', 'Oops, an unexpected error occurred', message);
    if (code === 'invalid_json')
      return clerkError(400, 'request_body_invalid', 'Request body invalid', 'The request body is invalid.');
    return clerkError(status, 'form_param_value_invalid', 'is invalid', message);
  }

  faultResponse(kind: 'status' | 'rate_limit', status: number): Response {
    if (kind === 'rate_limit') {
      return clerkError(
        429,
        'too_many_requests',
        'Too many requests',
        'Too many requests, retry later.',
        undefined,
        { 'retry-after': '10' },
      );
    }
    return status >= 500
      ? clerkError(
          status,
          'internal_clerk_error',
          'Oops, an unexpected error occurred',
          'Oops, an unexpected error occurred',
        )
      : clerkError(status, 'request_invalid', 'Request invalid', 'The request could not be processed.');
  }

  envVars(): Record<string, string> {
    return {
      CLERK_SECRET_KEY: this.secretKey,
      CLERK_PUBLISHABLE_KEY: this.credentials.CLERK_PUBLISHABLE_KEY!,
      // createClerkClient's `apiUrl`; Clerk's framework SDKs (@clerk/nextjs, @clerk/express) read CLERK_API_URL.
      CLERK_API_URL: this.baseUrl,
      // PEM of the key session tokens are signed with: `jwtKey` for networkless verification.
      CLERK_JWT_KEY: this.tokens.publicKeyPem(),
    };
  }

  /** Session tokens the twin issued (bearer credentials of a signed-in user) are masked in the log too. */
  override secrets(): string[] {
    return [...super.secrets(), ...this.tokens.issued()];
  }

  protected override afterReset(): void {
    this.prepare(this.seed);
  }

  /**
   * A new Clerk instance has no users and no OAuth applications; the engine's defaults (a Test User with a
   * published password and an OAuth app with a published secret) are removed before the seed goes in.
   */
  prepare(seed: ClerkSeed): void {
    const store = this.engine.store;
    const users = store.collection(USERS, ['clerk_id', 'username']);
    const emails = store.collection(EMAILS, ['email_id', 'user_id', 'email_address']);
    for (const user of users.all()) users.delete(user.id);
    for (const email of emails.all()) emails.delete(email.id);
    const apps = store.collection(OAUTH_APPS, ['app_id', 'client_id']);
    for (const app of apps.all()) apps.delete(app.id);
    this.addSeed(seed);
  }

  /** The engine seeds users, organizations and members; names it defaults and passwords are fixed after. */
  addSeed(seed: ClerkSeed): void {
    this.engine.seedFromConfig(engineSeed(seed));
    const users = this.engine.store.collection(USERS, ['clerk_id', 'username']);
    const emails = this.engine.store.collection(EMAILS, ['email_id', 'user_id', 'email_address']);
    for (const u of seed.users ?? []) {
      const email = emails.all().find((e) => String(e.email_address).toLowerCase() === u.email.toLowerCase());
      const user = email && users.findOneBy('clerk_id', email.user_id);
      if (!user) continue;
      users.update(user.id, {
        // The engine names a user without names "Test User"; Clerk leaves them null.
        first_name: u.first_name ?? null,
        last_name: u.last_name ?? null,
        password_hash: u.password ? hashPassword(u.password) : null,
        password_enabled: !!u.password,
      });
      // Seeded addresses are verified by the instance's admin, as the Backend API creates them.
      emails.update(email.id, { verification_strategy: 'admin' });
    }
  }

  async applySeed(raw: unknown): Promise<void> {
    this.addSeed(raw as ClerkSeed);
  }
}

function notFound(): Response {
  return clerkError(404, 'resource_not_found', 'not found', 'Resource not found');
}

const engineSeed = (seed: ClerkSeed) => ({
  users: (seed.users ?? []).map(({ email, password: _password, ...u }) => ({
    ...u,
    email_addresses: [email],
  })),
  organizations: (seed.organizations ?? []).map(({ members, ...o }) => ({
    ...o,
    members: (members ?? []).map((m) => ({ email: m.email, role: m.role ?? 'org:member' })),
  })),
});

/**
 * An RSA key pair for the instance's session tokens, PEM-encoded (persisted with the credentials): one the
 * host gave the process if any is left (runtime/rsa-keys.ts), else one made here, on the event loop.
 */
function signingKey(): string {
  const given = takeGivenRsaKey();
  const privateKey = given
    ? createPrivateKey(given)
    : generateKeyPairSync('rsa', { modulusLength: RSA_MODULUS_BITS }).privateKey;
  return privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
}

export const clerkTwin = engineTwinFactory(clerkDescriptor, {
  newCredentials: (baseUrl) => ({
    CLERK_SECRET_KEY: randomToken('sk_test_', 30),
    CLERK_PUBLISHABLE_KEY: publishableKey(new URL(baseUrl).host),
    signing_key: signingKey(),
  }),
  // The engine checks the key against its token map; the twin's own check (authorize) runs first.
  engineSeed: (_seed, credentials) => ({
    tokens: { [credentials.CLERK_SECRET_KEY!]: { login: 'clerk', scopes: [] } },
    clerk: {},
  }),
  driver: (engine, baseUrl, credentials, seed) => new ClerkTwin(engine, baseUrl, credentials, seed),
  fresh: (twin, seed) => twin.prepare(seed),
});
