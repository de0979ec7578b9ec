import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { decodeProtectedHeader, importSPKI, jwtVerify } from 'jose';
import { type Authorization } from '../../contract.ts';
import { type Engine } from '../../engine/emulate.ts';
import { OAuthEngineTwin } from '../../engine/oauth-engine-twin.ts';
import { engineTwinFactory } from '../../engine/factory.ts';
import { json } from '../../runtime/http.ts';
import { appleDescriptor, type AppleSeed } from './descriptor.ts';

/** Sign in with Apple's error body (`{error}` only, as its token endpoint answers). */
const appleError = (status: number, error: string) => json(status, { error });

/** The audience Apple requires in a client secret, whatever host the token endpoint is on. */
const APPLE_AUDIENCE = 'https://appleid.apple.com';
/** Apple refuses client secrets that expire more than six months after they were issued. */
const MAX_SECRET_LIFETIME_S = 15_777_000;

const ENGINE_DEMO_USER = 'testuser@icloud.com';

const DEFAULT_USERS = [{ email: 'user@icloud.example', name: 'Sandbox User' }];

/** The seed's accounts, or the default one when it names none. */
const usersOf = (seed: AppleSeed) => (seed.users?.length ? seed.users : DEFAULT_USERS);

/** Ten upper-case letters and digits, like Apple's Team ID and Key ID. */
const appleId10 = () =>
  [...randomBytes(10)].map((b) => 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789'[b % 36]).join('');

class AppleTwin extends OAuthEngineTwin {
  constructor(engine: Engine, baseUrl: string, credentials: Record<string, string>, seed: AppleSeed) {
    super(engine, baseUrl, credentials, {
      usersCollection: 'apple.users',
      usersIndexes: ['uid', 'email'],
      demoEmail: ENGINE_DEMO_USER,
      seed,
    });
  }

  /** Sign in with Apple has no bearer-token API: the token and revoke endpoints check the client secret. */
  authorize(): Authorization {
    return 'public';
  }

  /**
   * The client secret is a JWT the app signs with its private key (ES256, `kid` = Key ID, `iss` = Team ID,
   * `sub` = Services ID, `aud` = https://appleid.apple.com, at most six months long); Apple answers
   * anything else with 400 `invalid_client`. The engine checked no secret at all.
   */
  private async clientIsValid(form: URLSearchParams): Promise<boolean> {
    const clientId = form.get('client_id');
    const secret = form.get('client_secret');
    if (clientId !== this.credentials.APPLE_CLIENT_ID || !secret) return false;
    try {
      const header = decodeProtectedHeader(secret);
      if (header.kid !== this.credentials.APPLE_KEY_ID) return false;
      const key = await importSPKI(this.credentials.APPLE_PUBLIC_KEY!, 'ES256');
      const { payload } = await jwtVerify(secret, key, {
        algorithms: ['ES256'],
        issuer: this.credentials.APPLE_TEAM_ID,
        subject: clientId,
        audience: APPLE_AUDIENCE,
      });
      return (
        typeof payload.iat === 'number' &&
        typeof payload.exp === 'number' &&
        payload.exp - payload.iat <= MAX_SECRET_LIFETIME_S
      );
    } catch {
      return false;
    }
  }

  override async handle(request: Request): Promise<Response> {
    const { pathname } = new URL(request.url);
    if (request.method === 'POST' && (pathname === '/auth/token' || pathname === '/auth/revoke')) {
      const form = new URLSearchParams(await request.clone().text());
      if (!(await this.clientIsValid(form))) return appleError(400, 'invalid_client');
      if (pathname === '/auth/revoke') {
        const token = form.get('token');
        // A revoked token leaves the engine's maps, but the log must keep masking it.
        if (token) this.revoked.add(token);
      }
    }
    const response = await this.engine.app.fetch(request);
    if (response.status === 404 && !response.headers.get('content-type')?.includes('json'))
      return appleError(404, 'not_found');
    return response;
  }

  errorResponse(status: number, message: string, code?: string): Response {
    if (code === 'too_large') return appleError(413, 'invalid_request');
    if (status >= 500) return appleError(500, 'server_error');
    void message;
    return appleError(status, 'invalid_request');
  }

  faultResponse(kind: 'status' | 'rate_limit', status: number): Response {
    if (kind === 'rate_limit') return json(429, { error: 'rate_limited' }, { 'retry-after': '1' });
    return appleError(status, status >= 500 ? 'server_error' : 'invalid_request');
  }

  envVars(): Record<string, string> {
    return {
      APPLE_CLIENT_ID: this.credentials.APPLE_CLIENT_ID!,
      APPLE_TEAM_ID: this.credentials.APPLE_TEAM_ID!,
      APPLE_KEY_ID: this.credentials.APPLE_KEY_ID!,
      APPLE_PRIVATE_KEY: this.credentials.APPLE_PRIVATE_KEY!,
      // Issuer of the ID tokens and base of /auth/authorize, /auth/token, /auth/keys, /auth/revoke.
      APPLE_ISSUER: this.baseUrl,
    };
  }

  override secrets(): string[] {
    const refresh = this.engine.store.getData<Map<string, unknown>>('apple.oauth.refreshTokens');
    return [
      this.credentials.APPLE_PRIVATE_KEY!,
      ...this.engine.tokenMap.keys(),
      ...(refresh instanceof Map ? refresh.keys() : []),
      ...this.revoked,
    ];
  }

  /** The twin's Services ID (APPLE_CLIENT_ID) with the team and key its client secrets name. */
  protected oauthClient(): Record<string, unknown> {
    return {
      client_id: this.credentials.APPLE_CLIENT_ID,
      team_id: this.credentials.APPLE_TEAM_ID,
      key_id: this.credentials.APPLE_KEY_ID,
    };
  }

  async applySeed(raw: unknown): Promise<void> {
    this.engine.seedFromConfig({ users: (raw as AppleSeed).users ?? [] });
  }
}

export const appleTwin = engineTwinFactory(appleDescriptor, {
  newCredentials() {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    return {
      APPLE_CLIENT_ID: `dev.twinbox.sandbox${randomBytes(4).toString('hex')}.web`,
      APPLE_TEAM_ID: appleId10(),
      APPLE_KEY_ID: appleId10(),
      APPLE_PRIVATE_KEY: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
      APPLE_PUBLIC_KEY: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
    };
  },
  engineSeed: (seed) => ({ tokens: {}, apple: { users: usersOf(seed) } }),
  driver: (engine, baseUrl, credentials, seed) =>
    new AppleTwin(engine, baseUrl, credentials, { ...seed, users: usersOf(seed) }),
  fresh: (twin) => twin.prepare(),
});
