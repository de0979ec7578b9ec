/**
 * What our layer adds to the engine's OAuth flow: PKCE (the engine ignores `code_challenge`) and an
 * optional auto-approve, so a headless test can follow the authorize redirect like a browser would for an
 * app the user already authorised. The engine still issues codes and tokens.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Engine } from '../../engine/emulate.ts';
import { json } from '../../runtime/http.ts';
import { bareObject, parseJsonSafe } from '../../runtime/safe-json.ts';
import { secretEquals } from '../../runtime/secrets.ts';

interface Challenge {
  challenge: string;
  method: 'S256' | 'plain';
}

const BY_STATE = 'twinbox.pkce.byState';
const BY_CODE = 'twinbox.pkce.byCode';

function map(engine: Engine, key: string): Map<string, Challenge> {
  let m = engine.store.getData<Map<string, Challenge>>(key);
  if (!m) {
    m = new Map();
    engine.store.setData(key, m);
  }
  return m;
}

function codeFrom(response: Response): string | undefined {
  const location = response.headers.get('location');
  if (!location) return undefined;
  return new URL(location, 'http://x').searchParams.get('code') ?? undefined;
}

function verifierMatches(c: Challenge, verifier: string): boolean {
  const computed = c.method === 'S256' ? createHash('sha256').update(verifier).digest('base64url') : verifier;
  return secretEquals(computed, c.challenge);
}

/** The token request's parameters (JSON or form), in a prototype-less object; bad JSON is no parameters. */
function tokenParams(text: string, contentType: string): Record<string, string> {
  const params = bareObject<string>();
  let source: Iterable<[string, unknown]>;
  if (contentType.includes('json')) {
    try {
      const parsed = parseJsonSafe(text);
      source = parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? Object.entries(parsed) : [];
    } catch {
      source = [];
    }
  } else source = new URLSearchParams(text);
  for (const [key, value] of source) if (typeof value === 'string') params[key] = value;
  return params;
}

/** JSON that parses, to something other than an object or array (`null`, a number, a string, a boolean). */
function jsonScalar(text: string): boolean {
  try {
    const parsed: unknown = JSON.parse(text);
    return parsed === null || typeof parsed !== 'object';
  } catch {
    return false;
  }
}

export interface OAuthOptions {
  autoApprove: () => string | undefined;
  /** Client ids whose user tokens expire (a GitHub App's, with token expiration on): they get refresh tokens. */
  expiring: (clientId: string) => boolean;
}

/** GitHub Apps' user tokens: 8 hours; their refresh tokens: about 6 months (GitHub's documented numbers). */
export const USER_TOKEN_TTL_S = 8 * 3600;
export const REFRESH_TOKEN_TTL_S = 15_811_200;

interface Expiring {
  login: string;
  clientId: string;
  expiresAt: number;
}
interface Refresh extends Expiring {
  accessToken: string;
}

const EXPIRING = 'twinbox.oauth.expiringTokens';
const REFRESH = 'twinbox.oauth.refreshTokens';

function dataMap<T>(engine: Engine, key: string): Map<string, T> {
  let m = engine.store.getData<Map<string, T>>(key);
  if (!m) {
    m = new Map();
    engine.store.setData(key, m);
  }
  return m;
}

/** True when `token` is a user token that expired: GitHub answers 401 Bad credentials to it. */
export function tokenExpired(engine: Engine, token: string): boolean {
  const entry = dataMap<Expiring>(engine, EXPIRING).get(token);
  return entry !== undefined && entry.expiresAt <= Date.now();
}

/** Admin aid: the user tokens of `login` expire now, as 8 hours passing would make them (refresh tokens stay). */
export function expireUserTokens(engine: Engine, login: string): number {
  let count = 0;
  for (const entry of dataMap<Expiring>(engine, EXPIRING).values()) {
    if (entry.login === login && entry.expiresAt > Date.now()) {
      entry.expiresAt = Date.now();
      count++;
    }
  }
  return count;
}

/** A new user token and refresh token for `login` under `clientId`, as GitHub issues them to a GitHub App. */
function issueExpiring(engine: Engine, login: string, clientId: string, user: Record<string, unknown>) {
  const now = Date.now();
  const accessToken = `ghu_${randomBytes(27).toString('base64url')}`;
  const refreshToken = `ghr_${randomBytes(57).toString('base64url')}`;
  engine.tokenMap.set(accessToken, user as never);
  dataMap<string>(engine, 'github.oauth.tokenToClientId').set(accessToken, clientId);
  dataMap<Expiring>(engine, EXPIRING).set(accessToken, {
    login,
    clientId,
    expiresAt: now + USER_TOKEN_TTL_S * 1000,
  });
  dataMap<Refresh>(engine, REFRESH).set(refreshToken, {
    login,
    clientId,
    accessToken,
    expiresAt: now + REFRESH_TOKEN_TTL_S * 1000,
  });
  return {
    access_token: accessToken,
    expires_in: USER_TOKEN_TTL_S,
    refresh_token: refreshToken,
    refresh_token_expires_in: REFRESH_TOKEN_TTL_S,
    token_type: 'bearer',
    scope: '',
  };
}

/** The engine's answer to a code exchange, made GitHub App-shaped: an expiring `ghu_` token and a refresh token. */
async function withExpiry(engine: Engine, response: Response, clientId: string): Promise<Response> {
  if (!response.ok || !(response.headers.get('content-type') ?? '').includes('json')) return response;
  const body = (await response.clone().json()) as Record<string, unknown>;
  if (typeof body.access_token !== 'string') return response;
  const user = engine.tokenMap.get(body.access_token);
  if (!user) return response;
  // The engine's `gho_` token is replaced: a GitHub App's user token never outlives its 8 hours.
  engine.tokenMap.delete(body.access_token);
  dataMap<string>(engine, 'github.oauth.tokenToClientId').delete(body.access_token);
  return json(200, { ...issueExpiring(engine, user.login, clientId, { ...user }), scope: body.scope ?? '' });
}

/** `grant_type=refresh_token`: the old pair is spent, a new one issued (GitHub's rotation). */
function refresh(engine: Engine, params: Record<string, string>): Response {
  const app = engine.store
    .collection('github.oauth_apps', ['client_id'])
    .findOneBy('client_id', params.client_id ?? '');
  if (!app || !secretEquals(params.client_secret ?? '', String(app.client_secret))) {
    return json(200, {
      error: 'incorrect_client_credentials',
      error_description: 'The client_id and/or client_secret passed are incorrect.',
    });
  }
  const refreshes = dataMap<Refresh>(engine, REFRESH);
  const presented = params.refresh_token ?? '';
  const grant = refreshes.get(presented);
  if (!grant || grant.clientId !== app.client_id || grant.expiresAt <= Date.now()) {
    return json(200, {
      error: 'bad_refresh_token',
      error_description: 'The refresh token passed is incorrect or expired.',
    });
  }
  refreshes.delete(presented);
  const user = engine.tokenMap.get(grant.accessToken);
  engine.tokenMap.delete(grant.accessToken);
  dataMap<Expiring>(engine, EXPIRING).delete(grant.accessToken);
  dataMap<string>(engine, 'github.oauth.tokenToClientId').delete(grant.accessToken);
  const account = engine.store.collection('github.users', ['login']).findOneBy('login', grant.login);
  if (!account) {
    return json(200, {
      error: 'bad_refresh_token',
      error_description: 'The refresh token passed is incorrect or expired.',
    });
  }
  return json(
    200,
    issueExpiring(engine, grant.login, grant.clientId, {
      ...(user ?? {}),
      login: account.login,
      id: account.id,
      scopes: user?.scopes ?? [],
    }),
  );
}

/** Returns a response when the request is an OAuth step we handle, else undefined (engine handles it). */
export async function handleOAuth(
  engine: Engine,
  request: Request,
  opts: OAuthOptions,
): Promise<Response | undefined> {
  const url = new URL(request.url);
  if (request.method === 'GET' && url.pathname === '/login/oauth/authorize') {
    const q = url.searchParams;
    const stateKey = `${q.get('client_id') ?? ''}|${q.get('state') ?? ''}`;
    const challenge = q.get('code_challenge');
    const method = q.get('code_challenge_method') === 'plain' ? 'plain' : 'S256';
    if (challenge) map(engine, BY_STATE).set(stateKey, { challenge, method });
    const login = opts.autoApprove();
    // The engine's page validates client_id and redirect_uri; only approve when it would show the page.
    const page = await engine.app.fetch(request);
    if (!login || page.status !== 200) return page;
    const form = new URLSearchParams({
      login,
      redirect_uri: q.get('redirect_uri') ?? '',
      scope: q.get('scope') ?? '',
      state: q.get('state') ?? '',
      client_id: q.get('client_id') ?? '',
    });
    const approved = await engine.app.fetch(
      new Request(new URL('/login/oauth/callback', url), {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: form,
      }),
    );
    attach(engine, stateKey, codeFrom(approved));
    return approved;
  }
  if (request.method === 'POST' && url.pathname === '/login/oauth/callback') {
    const text = await request.clone().text();
    const form = new URLSearchParams(text);
    const response = await engine.app.fetch(request);
    attach(engine, `${form.get('client_id') ?? ''}|${form.get('state') ?? ''}`, codeFrom(response));
    return response;
  }
  if (request.method === 'POST' && url.pathname === '/login/oauth/access_token') {
    const text = await request.clone().text();
    const contentType = request.headers.get('content-type') ?? '';
    const params = tokenParams(text, contentType);
    if (params.grant_type === 'refresh_token') return refresh(engine, params);
    const pending = params.code ? map(engine, BY_CODE).get(params.code) : undefined;
    if (pending) {
      if (!params.code_verifier || !verifierMatches(pending, params.code_verifier)) {
        return json(200, {
          error: 'bad_verification_code',
          error_description: 'The code_verifier does not match the code_challenge.',
        });
      }
      map(engine, BY_CODE).delete(params.code!);
    }
    // The engine lists the keys of whatever JSON it gets, and `null` has none to list (a 500): a body that
    // is not a JSON object is no parameters, as unparseable JSON already is to the engine.
    if (contentType.includes('application/json') && jsonScalar(text)) {
      return engine.app.fetch(new Request(request, { body: '{}' }));
    }
    const exchanged = await engine.app.fetch(request);
    return params.client_id && opts.expiring(params.client_id)
      ? withExpiry(engine, exchanged, params.client_id)
      : exchanged;
  }
  return undefined;
}

function attach(engine: Engine, stateKey: string, code: string | undefined): void {
  const challenge = map(engine, BY_STATE).get(stateKey);
  if (!challenge || !code) return;
  map(engine, BY_STATE).delete(stateKey);
  map(engine, BY_CODE).set(code, challenge);
}
