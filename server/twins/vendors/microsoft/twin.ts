import { randomBytes, randomUUID } from 'node:crypto';
import { type Authorization, type RequestHead } from '../../contract.ts';
import { type Engine, type EngineContext } from '../../engine/emulate.ts';
import { OAuthEngineTwin } from '../../engine/oauth-engine-twin.ts';
import { engineTwinFactory } from '../../engine/factory.ts';
import { json } from '../../runtime/http.ts';
import { presentedToken } from '../../runtime/secrets.ts';
import { microsoftDescriptor, type MicrosoftSeed } from './descriptor.ts';

/** The tenant the engine issues every token in (its issuer is `<base_url>/<tenant>/v2.0`). */
const TENANT_ID = '9188040d-6c67-4c5b-b112-36a304b66dad';

/** The engine's demo account, in every engine store: not in a Twinbox tenant. */
const ENGINE_DEMO_USER = 'testuser@outlook.com';

/** Microsoft Graph's error body (https://learn.microsoft.com/graph/errors). */
function graphError(status: number, code: string, message: string, headers: Record<string, string> = {}) {
  const requestId = randomUUID();
  return json(
    status,
    {
      error: {
        code,
        message,
        innerError: {
          date: new Date().toISOString().slice(0, 19),
          'request-id': requestId,
          'client-request-id': requestId,
        },
      },
    },
    { 'request-id': requestId, ...headers },
  );
}

const CODE_OF: Record<number, string> = {
  400: 'BadRequest',
  401: 'InvalidAuthenticationToken',
  403: 'Authorization_RequestDenied',
  404: 'Request_ResourceNotFound',
  409: 'Conflict',
  413: 'RequestEntityTooLarge',
  429: 'TooManyRequests',
  503: 'serviceNotAvailable',
};

/** Graph and the OIDC userinfo endpoint take a bearer access token; the sign-in endpoints are public. */
const API_PATH = /^\/(v1\.0|beta)\/|^\/oidc\/userinfo$/;

interface GraphUser {
  oid: string;
  email: string;
  name: string;
  given_name: string;
  family_name: string;
  preferred_username: string;
}

class MicrosoftTwin extends OAuthEngineTwin {
  constructor(engine: Engine, baseUrl: string, credentials: Record<string, string>, seed: MicrosoftSeed) {
    super(engine, baseUrl, credentials, {
      usersCollection: 'microsoft.users',
      usersIndexes: ['oid', 'email'],
      demoEmail: ENGINE_DEMO_USER,
      seed,
    });
  }

  /**
   * Graph calls need an access token the twin issued and that was not revoked (the engine took any bearer
   * as its first user): none is Graph's "Access token is empty.", any other token 401 as Graph answers.
   */
  authorize(head: RequestHead): Authorization {
    if (!API_PATH.test(head.url.pathname)) return 'public';
    const presented = presentedToken(head.headers.get('authorization'));
    if (presented?.scheme === 'bearer' && this.engine.tokenMap.has(presented.token)) return true;
    const challenge = {
      'www-authenticate': `Bearer realm="", authorization_uri="${this.baseUrl}/common/oauth2/authorize", client_id="00000003-0000-0000-c000-000000000000"`,
    };
    if (!presented) return graphError(401, 'InvalidAuthenticationToken', 'Access token is empty.', challenge);
    return graphError(
      401,
      'InvalidAuthenticationToken',
      'IDX14100: JWT is not well formed, there are no dots (.).',
      challenge,
    );
  }

  override async handle(request: Request): Promise<Response> {
    const url = new URL(request.url);
    if (request.method === 'POST' && url.pathname === '/oauth2/v2.0/revoke')
      await this.rememberRevoked(request);
    const response = await this.engine.app.fetch(request);
    if (response.status === 404 && API_PATH.test(url.pathname)) {
      const body = (await response
        .clone()
        .json()
        .catch(() => undefined)) as { error?: unknown } | undefined;
      if (!body?.error)
        return graphError(
          400,
          'BadRequest',
          `Resource not found for the segment '${url.pathname.split('/').at(-1)}'.`,
        );
    }
    return response;
  }

  private users() {
    return this.engine.store.collection('microsoft.users', ['oid', 'email']);
  }

  private graphUser(u: GraphUser) {
    return {
      id: u.oid,
      displayName: u.name,
      givenName: u.given_name || null,
      surname: u.family_name || null,
      mail: u.email,
      userPrincipalName: u.preferred_username,
      businessPhones: [],
      jobTitle: null,
      mobilePhone: null,
      officeLocation: null,
      preferredLanguage: null,
    };
  }

  /** Graph routes the engine lacks, and `/me` for app-only tokens. */
  addRoutes(): void {
    const login = (c: EngineContext) => (c.get('authUser') as { login?: string } | undefined)?.login;
    this.engine.priority.get('/v1.0/users', (c) => {
      const top = Number(c.req.query('$top') ?? '100');
      if (!Number.isInteger(top) || top < 1 || top > 999)
        return graphError(400, 'Request_UnsupportedQuery', 'Invalid page size specified.');
      const users = this.users()
        .all()
        .map((u) => this.graphUser(u as unknown as GraphUser));
      return c.json({
        '@odata.context': `${this.baseUrl}/v1.0/$metadata#users`,
        value: users.slice(0, top),
      });
    });
    // /users/{id} takes the object id or the userPrincipalName, as Graph does.
    this.engine.priority.get('/v1.0/users/:id', (c) => {
      const id = decodeURIComponent(c.req.param('id'));
      const user = this.users().findOneBy('oid', id) ?? this.users().findOneBy('email', id.toLowerCase());
      if (!user)
        return graphError(
          404,
          'Request_ResourceNotFound',
          `Resource '${id}' does not exist or one of its queried reference-property objects are not present.`,
        );
      return c.json({
        '@odata.context': `${this.baseUrl}/v1.0/$metadata#users/$entity`,
        ...this.graphUser(user as unknown as GraphUser),
      });
    });
    this.engine.priority.get('/v1.0/me', (c) => {
      const user = this.users().findOneBy('email', login(c));
      if (!user)
        return graphError(400, 'BadRequest', '/me request is only valid with delegated authentication flow.');
      return c.json({
        '@odata.context': `${this.baseUrl}/v1.0/$metadata#users/$entity`,
        ...this.graphUser(user as unknown as GraphUser),
      });
    });
  }

  errorResponse(status: number, message: string, code?: string): Response {
    if (code === 'too_large') return graphError(413, 'RequestEntityTooLarge', 'The request is too large.');
    if (status >= 500) return graphError(500, 'generalException', 'An internal server error occurred.');
    if (code === 'invalid_json') return graphError(400, 'BadRequest', 'Unable to read JSON request payload.');
    return graphError(status, CODE_OF[status] ?? 'BadRequest', message);
  }

  faultResponse(kind: 'status' | 'rate_limit', status: number): Response {
    if (kind === 'rate_limit')
      return graphError(429, 'TooManyRequests', 'Too many requests.', { 'retry-after': '1' });
    return status >= 500
      ? graphError(status, CODE_OF[status] ?? 'generalException', 'The service is unavailable.')
      : graphError(status, CODE_OF[status] ?? 'BadRequest', 'The request could not be processed.');
  }

  envVars(): Record<string, string> {
    return {
      // @azure/identity's EnvironmentCredential reads these three (and AZURE_AUTHORITY_HOST).
      AZURE_CLIENT_ID: this.credentials.AZURE_CLIENT_ID!,
      AZURE_CLIENT_SECRET: this.credentials.AZURE_CLIENT_SECRET!,
      AZURE_TENANT_ID: TENANT_ID,
      AZURE_AUTHORITY_HOST: this.baseUrl,
      // The v2.0 endpoints, as the app registration's "Endpoints" page lists them.
      AZURE_OAUTH2_TOKEN_URL: `${this.baseUrl}/oauth2/v2.0/token`,
      AZURE_OAUTH2_AUTHORIZE_URL: `${this.baseUrl}/oauth2/v2.0/authorize`,
      AZURE_ISSUER: `${this.baseUrl}/${TENANT_ID}/v2.0`,
      // The Graph client's `baseUrl` option (it appends the version, `v1.0`).
      MICROSOFT_GRAPH_BASE_URL: `${this.baseUrl}/`,
    };
  }

  override secrets(): string[] {
    return [this.credentials.AZURE_CLIENT_SECRET!, ...this.engine.tokenMap.keys(), ...this.revoked];
  }

  /** The twin's app registration (AZURE_CLIENT_ID). */
  protected oauthClient(): Record<string, unknown> {
    return {
      client_id: this.credentials.AZURE_CLIENT_ID,
      client_secret: this.credentials.AZURE_CLIENT_SECRET,
    };
  }

  async applySeed(raw: unknown): Promise<void> {
    const seed = raw as MicrosoftSeed;
    this.engine.seedFromConfig({ users: seed.users ?? [] });
  }
}

const DEFAULT_USERS = [{ email: 'user@contoso.example', name: 'Sandbox User' }];

/** The seed's accounts, or the default one when it names none. */
const usersOf = (seed: MicrosoftSeed) => (seed.users?.length ? seed.users : DEFAULT_USERS);

export const microsoftTwin = engineTwinFactory(microsoftDescriptor, {
  newCredentials: () => ({
    AZURE_CLIENT_ID: randomUUID(),
    // Entra client secrets: 40 characters with a `~` after the 3-character hint.
    AZURE_CLIENT_SECRET: `${randomBytes(2).toString('hex').slice(0, 3)}8Q~${randomBytes(27).toString('base64url').slice(0, 34)}`,
  }),
  engineSeed: (seed) => ({ tokens: {}, microsoft: { users: usersOf(seed) } }),
  driver(engine, baseUrl, credentials, seed) {
    const twin = new MicrosoftTwin(engine, baseUrl, credentials, { ...seed, users: usersOf(seed) });
    twin.addRoutes();
    return twin;
  },
  fresh: (twin) => twin.prepare(),
});
