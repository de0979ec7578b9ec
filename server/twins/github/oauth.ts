/**
 * What our layer adds to the engine's OAuth flow: PKCE (the engine ignores `code_challenge`) and an
 * optional auto-approve, so a headless test can follow the authorize redirect like a browser would for an
 * app the user already authorised. The engine still issues codes and tokens.
 */
import { createHash } from 'node:crypto';
import type { Engine } from '../engine/emulate.ts';
import { json } from '../http.ts';
import { bareObject, parseJsonSafe } from '../safe-json.ts';
import { secretEquals } from '../secrets.ts';

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
    return engine.app.fetch(request);
  }
  return undefined;
}

function attach(engine: Engine, stateKey: string, code: string | undefined): void {
  const challenge = map(engine, BY_STATE).get(stateKey);
  if (!challenge || !code) return;
  map(engine, BY_STATE).delete(stateKey);
  map(engine, BY_CODE).set(code, challenge);
}
