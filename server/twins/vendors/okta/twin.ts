import { randomBytes } from 'node:crypto';
import { TwinInputError, type Authorization, type Granted, type RequestHead } from '../../contract.ts';
import type { Engine } from '../../engine/emulate.ts';
import { EngineTwin } from '../../engine/engine-twin.ts';
import { credentialFieldsSaved, engineTwinFactory } from '../../engine/factory.ts';
import { json } from '../../runtime/http.ts';
import { randomToken, secretEquals } from '../../runtime/secrets.ts';
import type { WebhookSigner } from '../../runtime/webhooks.ts';
import { toOktaResponse } from './shape.ts';
import { oktaDescriptor, type OktaSeed } from './descriptor.ts';

/** The engine's `okta` seed: users by login, as the twin's seed names them (groups are added by the twin). */
interface OktaEngineSeed {
  users: Array<NonNullable<OktaSeed['users']>[number] & { email: string }>;
}

/** Okta's error body (`errorCode`, `errorSummary`, `errorLink`, `errorId`, `errorCauses`). */
function oktaError(status: number, errorCode: string, errorSummary: string): Response {
  return json(status, {
    errorCode,
    errorSummary,
    errorLink: errorCode,
    errorId: `oae${randomBytes(11).toString('base64url')}`,
    errorCauses: [],
  });
}

/** Demo objects the engine always creates, with a published client secret: not in a Twinbox org. */
const ENGINE_DEMO = { user: 'testuser@okta.local', clients: ['okta-test-client', 'okta-test-app'] };

const okta0 = (prefix: string) =>
  prefix +
  [...randomBytes(17)]
    .map((b) => 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789'[b % 62])
    .join('');

/** Okta's event hooks are not modelled: nothing to sign. */
const noSigner: WebhookSigner = () => ({});

class OktaTwin extends EngineTwin {
  constructor(
    engine: Engine,
    baseUrl: string,
    credentials: Record<string, string>,
    private readonly seed: OktaSeed,
  ) {
    super(engine, baseUrl, credentials, noSigner);
  }

  private get apiToken(): string {
    return this.credentials.OKTA_CLIENT_TOKEN!;
  }

  private col(name: string) {
    return this.engine.store.collection(name);
  }

  /**
   * The management API (`/api/v1/*`) takes the org's API token (`SSWS <token>`), compared in constant
   * time; the engine would take any token as its admin. The OAuth 2.0 / OIDC endpoints check their
   * client credentials and access tokens themselves, as Okta's do.
   */
  authorize(head: RequestHead): Authorization {
    if (!head.url.pathname.startsWith('/api/')) return 'public';
    const header = head.headers.get('authorization');
    if (!header) return oktaError(401, 'E0000005', 'Invalid session');
    const m = /^SSWS\s+(\S+)\s*$/i.exec(header);
    if (!m || !secretEquals(m[1]!, this.apiToken))
      return oktaError(401, 'E0000011', 'Invalid token provided');
    return true;
  }

  override async handle(request: Request, granted: Granted): Promise<Response> {
    // The API token passed the door: the engine knows it as its admin.
    if (granted === true) this.engine.tokenMap.set(this.apiToken, { login: 'admin', id: 1, scopes: [] });
    return toOktaResponse(
      request.method,
      new URL(request.url).pathname,
      await this.engine.app.fetch(request),
    );
  }

  errorResponse(status: number, message: string, code?: string): Response {
    if (code === 'too_large')
      return oktaError(413, 'E0000001', 'Api validation failed: request body too large');
    if (status >= 500) return oktaError(status, 'E0000009', 'Internal Server Error');
    if (status === 401) return oktaError(401, 'E0000011', 'Invalid token provided');
    if (code === 'invalid_json') return oktaError(400, 'E0000003', 'The request body was not well-formed.');
    return oktaError(status, 'E0000001', `Api validation failed: ${message}`);
  }

  envVars(): Record<string, string> {
    return {
      // okta-sdk-nodejs reads these two itself (new okta.Client() with no options).
      OKTA_CLIENT_ORGURL: this.baseUrl,
      OKTA_CLIENT_TOKEN: this.apiToken,
      // The names Okta's Node samples and @okta/oidc-middleware configurations use.
      OKTA_OAUTH2_ISSUER: `${this.baseUrl}/oauth2/default`,
      OKTA_OAUTH2_CLIENT_ID: this.credentials.OKTA_OAUTH2_CLIENT_ID!,
      OKTA_OAUTH2_CLIENT_SECRET: this.credentials.OKTA_OAUTH2_CLIENT_SECRET!,
    };
  }

  /** The client id is public (it is in every authorize URL): the log keeps it. */
  override secrets(): string[] {
    return [this.apiToken, this.credentials.OKTA_OAUTH2_CLIENT_SECRET!];
  }

  /** Removes the engine's demo user and clients, and registers the twin's own OIDC app. */
  prepare(): void {
    const users = this.col('okta.users');
    const clients = this.col('okta.oauth_clients');
    const memberships = this.col('okta.group_memberships');
    if (!this.seed.users?.some((u) => u.login === ENGINE_DEMO.user)) {
      for (const user of users.findBy('login', ENGINE_DEMO.user)) {
        for (const m of memberships.findBy('user_okta_id', user.okta_id)) memberships.delete(m.id);
        users.delete(user.id);
      }
    }
    for (const id of ENGINE_DEMO.clients)
      for (const c of clients.findBy('client_id', id)) clients.delete(c.id);
    clients.insert({
      client_id: this.credentials.OKTA_OAUTH2_CLIENT_ID,
      client_secret: this.credentials.OKTA_OAUTH2_CLIENT_SECRET,
      name: 'Twinbox app',
      redirect_uris: this.seed.redirect_uris ?? [],
      response_types: ['code'],
      grant_types: ['authorization_code', 'refresh_token', 'client_credentials'],
      token_endpoint_auth_method: 'client_secret_basic',
      auth_server_id: 'default',
    });
    this.addContent(this.seed);
  }

  /** Groups and memberships, which the engine's seeding does not take by name. */
  private addContent(seed: OktaSeed): void {
    const users = this.col('okta.users');
    const groups = this.col('okta.groups');
    const memberships = this.col('okta.group_memberships');
    const now = new Date().toISOString();
    for (const g of seed.groups ?? []) {
      const group =
        groups.findOneBy('name', g.name) ??
        groups.insert({
          okta_id: okta0('00g'),
          name: g.name,
          description: g.description ?? '',
          type: 'OKTA_GROUP',
          last_membership_updated: now,
          last_updated: now,
        });
      for (const login of g.members ?? []) {
        const user = users.findOneBy('login', login);
        if (!user) throw new TwinInputError(400, `okta seed: "${login}" is not a user`);
        const exists = memberships
          .findBy('group_okta_id', group.okta_id)
          .some((m) => m.user_okta_id === user.okta_id);
        if (!exists) memberships.insert({ group_okta_id: group.okta_id, user_okta_id: user.okta_id });
      }
    }
  }

  protected override afterReset(): void {
    this.prepare();
  }

  async applySeed(raw: unknown): Promise<void> {
    const seed = raw as OktaSeed;
    this.engine.seedFromConfig(engineSeed(seed));
    this.addContent(seed);
  }

  faultResponse(kind: 'status' | 'rate_limit', status: number): Response {
    if (kind === 'rate_limit') {
      const reset = String(Math.ceil(Date.now() / 1000) + 60);
      const response = oktaError(429, 'E0000047', 'API call exceeded rate limit due to too many requests.');
      response.headers.set('x-rate-limit-limit', '600');
      response.headers.set('x-rate-limit-remaining', '0');
      response.headers.set('x-rate-limit-reset', reset);
      return response;
    }
    return status >= 500
      ? oktaError(status, 'E0000009', 'Internal Server Error')
      : oktaError(status, 'E0000001', 'Api validation failed');
  }
}

function engineSeed(seed: OktaSeed): OktaEngineSeed {
  return {
    users: (seed.users ?? []).map((u) => ({ ...u, email: u.email ?? u.login })),
  };
}

export const oktaTwin = engineTwinFactory(oktaDescriptor, {
  newCredentials: () => ({
    OKTA_CLIENT_TOKEN: randomToken('00', 30),
    OKTA_OAUTH2_CLIENT_ID: okta0('0oa'),
    OKTA_OAUTH2_CLIENT_SECRET: randomToken('', 30),
  }),
  engineSeed: (seed) => ({ okta: engineSeed(seed) }),
  driver: (engine, baseUrl, credentials, seed) => new OktaTwin(engine, baseUrl, credentials, seed),
  fresh: (twin) => twin.prepare(),
  // Up to d4a1e50 the twin saved its three credentials in fields of their own and no token map (the
  // engine's then starts empty: `handle` puts the caller's credential in it): read once, saved anew.
  readSaved: credentialFieldsSaved({
    OKTA_CLIENT_TOKEN: 'api_token',
    OKTA_OAUTH2_CLIENT_ID: 'client_id',
    OKTA_OAUTH2_CLIENT_SECRET: 'client_secret',
  }),
});
