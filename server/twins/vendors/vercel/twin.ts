import { createHmac } from 'node:crypto';
import { type Authorization, type RequestHead } from '../../contract.ts';
import { type Engine } from '../../engine/emulate.ts';
import { EngineTwin } from '../../engine/engine-twin.ts';
import { engineTwinFactory } from '../../engine/factory.ts';
import { json } from '../../runtime/http.ts';
import { isKnownSecret, presentedToken, randomToken } from '../../runtime/secrets.ts';
import type { WebhookSigner } from '../../runtime/webhooks.ts';
import { ENV_PATH, toVercelResponse } from './shape.ts';
import { vercelDescriptor, type VercelSeed } from './descriptor.ts';

/** Vercel's error body: `{ error: { code, message, ... } }` (https://vercel.com/docs/rest-api/errors). */
const vercelError = (
  status: number,
  code: string,
  message: string,
  extra: Record<string, unknown> = {},
  headers?: Record<string, string>,
) => json(status, { error: { code, message, ...extra } }, headers);

/** Vercel signs webhook bodies with HMAC-SHA1 of the raw body, hex, in `x-vercel-signature`. */
const vercelSigner: WebhookSigner = ({ body, secret }) => ({
  'x-vercel-signature': createHmac('sha1', secret).update(body).digest('hex'),
});

const DEFAULT_USER = { username: 'developer', name: 'Developer', email: 'developer@example.com' };

/** Project paths whose answers are one project (create, get, update). */
class VercelTwin extends EngineTwin {
  constructor(engine: Engine, baseUrl: string, credentials: Record<string, string>) {
    super(engine, baseUrl, credentials, vercelSigner);
  }

  /**
   * Only the instance's token (and tokens in the engine's map, i.e. the same one after a restore): the engine
   * takes any bearer. Vercel answers both a missing and an unknown token with 403 `forbidden`.
   */
  authorize(head: RequestHead): Authorization {
    const presented = presentedToken(head.headers.get('authorization'));
    if (!presented || presented.scheme !== 'bearer')
      return vercelError(403, 'forbidden', 'The request is missing an authentication token', {
        missingToken: true,
      });
    return isKnownSecret(presented.token, [this.credentials.VERCEL_TOKEN!, ...this.engine.tokenMap.keys()])
      ? true
      : vercelError(403, 'forbidden', 'Not authorized', { invalidToken: true });
  }

  /** The engine's answer, its misses as Vercel's 404 and its successes in Vercel's shape (shape.ts). */
  override async handle(request: Request): Promise<Response> {
    const { pathname } = new URL(request.url);
    const method = request.method;
    const isEnv = ENV_PATH.test(pathname);
    // Vercel answers one variable posted with `created: {...}`, several with `created: [...]`.
    const batch =
      isEnv &&
      method === 'POST' &&
      Array.isArray(
        await request
          .clone()
          .json()
          .catch(() => undefined),
      );
    const response = await this.engine.app.fetch(request);
    if (!response.headers.get('content-type')?.includes('json')) {
      return response.status === 404
        ? vercelError(404, 'not_found', 'The requested resource was not found')
        : response;
    }
    if (!response.ok) {
      if (response.status !== 404) return response;
      const body = (await response
        .clone()
        .json()
        .catch(() => undefined)) as { error?: unknown } | undefined;
      return body?.error ? response : vercelError(404, 'not_found', 'The requested resource was not found');
    }
    return toVercelResponse(method, pathname, response, batch);
  }

  errorResponse(status: number, message: string, code?: string): Response {
    if (code === 'too_large') return vercelError(413, 'payload_too_large', 'Request body is too large.');
    if (status >= 500) return vercelError(500, 'internal_server_error', 'An unexpected error occurred.');
    if (code === 'invalid_json') return vercelError(400, 'bad_request', 'Invalid JSON body');
    return vercelError(status, 'bad_request', message);
  }

  faultResponse(kind: 'status' | 'rate_limit', status: number): Response {
    if (kind === 'rate_limit') {
      const reset = String(Math.ceil(Date.now() / 1000) + 60);
      return vercelError(
        429,
        'rate_limited',
        'Rate limit exceeded',
        { limit: { remaining: 0, reset: Number(reset), resetMs: Number(reset) * 1000, total: 100 } },
        { 'x-ratelimit-limit': '100', 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': reset },
      );
    }
    return status >= 500
      ? vercelError(status, 'internal_server_error', 'An unexpected error occurred.')
      : vercelError(status, 'bad_request', 'The request could not be processed.');
  }

  envVars(): Record<string, string> {
    return {
      VERCEL_TOKEN: this.credentials.VERCEL_TOKEN!,
      // @vercel/sdk reads no variable for its base URL: the app passes this as `serverURL` (docs/twins.md).
      VERCEL_API_URL: this.baseUrl,
    };
  }

  /** Tokens the engine issued (`POST /v1/api-keys`) are masked in the log like the instance's own. */
  override secrets(): string[] {
    return [...super.secrets(), ...this.engine.tokenMap.keys()];
  }

  async applySeed(raw: unknown): Promise<void> {
    this.engine.seedFromConfig(engineSeed(raw as VercelSeed));
  }
}

function engineSeed(seed: VercelSeed, user?: VercelSeed['user']) {
  return {
    ...(user ? { users: [{ ...user, email: user.email ?? `${user.username}@example.com` }] } : {}),
    ...(seed.teams ? { teams: seed.teams } : {}),
    ...(seed.projects
      ? {
          projects: seed.projects.map(({ env, ...p }) => ({
            ...p,
            ...(env ? { envVars: env } : {}),
          })),
        }
      : {}),
  };
}

export const vercelTwin = engineTwinFactory(vercelDescriptor, {
  newCredentials: () => ({ VERCEL_TOKEN: randomToken('', 18) }),
  // The token maps to the seeded user; the engine's own demo tokens are not in the map.
  engineSeed(seed, credentials) {
    const user = seed.user ?? DEFAULT_USER;
    return {
      tokens: { [credentials.VERCEL_TOKEN!]: { login: user.username, scopes: [] } },
      vercel: engineSeed(seed, user),
    };
  },
  driver: (engine, baseUrl, credentials) => new VercelTwin(engine, baseUrl, credentials),
});
