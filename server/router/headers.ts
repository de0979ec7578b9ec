import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { API_KEY_PREFIX } from '../auth/api-key-format.ts';
import { OAUTH_COOKIE, SESSION_COOKIE } from '../identity/cookies.ts';

/**
 * What crosses the router, in both directions (docs/routing.md). Everything of the app's own passes
 * untouched; what is taken out is either hop-by-hop (about one connection, not the request) or Twinbox's
 * own credentials, which a sandbox must never see.
 */

export const REQUEST_ID_HEADER = 'x-twinbox-request-id';

/** Twinbox's cookies, by name: never forwarded to an app or twin, even if a browser sends them. */
const TWINBOX_COOKIES = new Set([SESSION_COOKIE, OAUTH_COOKIE]);

/** The issuer Twinbox's session JWTs carry (server/auth/sessions.ts); a test issues one to check. */
const SESSION_ISSUER = 'twinbox';

/** RFC 9110 7.6.1, plus the legacy ones; `connection` itself and what it names are handled apart. */
const HOP_BY_HOP = ['keep-alive', 'proxy-connection', 'proxy-authorization', 'te', 'transfer-encoding'];

/** Tells whether an `Authorization` value carries a credential of Twinbox's own. */
export type CredentialCheck = (authorization: string) => boolean;

/**
 * Twinbox's credentials: API keys (`twinbox_sk_`), session JWTs (issuer `twinbox`) and the operator's
 * admin token. Unverified on purpose: a forged token that claims to be Twinbox's is dropped too, which
 * costs nobody anything. Anything else (an app's own bearer tokens, Basic auth, the twins' `twinadm_`
 * admin tokens) is the sandbox's business and passes.
 */
export function twinboxCredentials(adminToken?: string): CredentialCheck {
  const adminDigest = adminToken ? sha256(adminToken) : undefined;
  return (authorization) => {
    const match = /^bearer +(\S+) *$/i.exec(authorization);
    if (!match) return false;
    const token = match[1]!;
    if (token.startsWith(API_KEY_PREFIX)) return true;
    if (adminDigest && timingSafeEqual(sha256(token), adminDigest)) return true;
    return isTwinboxJwt(token);
  };
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

function isTwinboxJwt(token: string): boolean {
  const parts = token.split('.');
  if (parts.length !== 3) return false;
  try {
    const claims = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8')) as { iss?: unknown };
    return claims.iss === SESSION_ISSUER;
  } catch {
    return false;
  }
}

/** The cookie header without Twinbox's cookies; undefined when nothing is left. */
export function withoutTwinboxCookies(cookie: string): string | undefined {
  // Most requests carry none of ours: leave the app's header byte for byte as it came.
  if (!cookie.includes('twinbox_')) return cookie;
  const kept = cookie.split(';').filter((pair) => {
    const eq = pair.indexOf('=');
    return !TWINBOX_COOKIES.has((eq === -1 ? pair : pair.slice(0, eq)).trim());
  });
  const joined = kept.map((pair) => pair.trim()).join('; ');
  return joined === '' ? undefined : joined;
}

/**
 * A Set-Cookie value without any `Domain` attribute, so the cookie stays host-only: a sandbox can set
 * cookies for its own host, never for the parent domain (which would reach every other sandbox and,
 * with a shared parent, Twinbox itself). Every occurrence goes: browsers honour the last one.
 */
export function withoutCookieDomain(setCookie: string): string {
  return setCookie.replace(/;\s*domain\s*(?:=[^;]*)?(?=;|$)/gi, '');
}

/** Header names listed in `Connection` (hop-by-hop by declaration), never `host`. */
function connectionTokens(value: string | string[] | undefined): string[] {
  if (!value) return [];
  return String(value)
    .split(',')
    .map((token) => token.trim().toLowerCase())
    .filter((token) => token !== '' && token !== 'host');
}

export interface ForwardContext {
  requestId: string;
  remoteAddress: string | undefined;
  encrypted: boolean;
  /** A WebSocket handshake keeps `Connection` and `Upgrade`: they are the handshake. */
  upgrade: boolean;
  isTwinboxCredential: CredentialCheck;
}

/** Rewrites an incoming request's headers in place into what the app or twin receives. */
export function forwardRequestHeaders(headers: IncomingHttpHeaders, context: ForwardContext): void {
  if (!context.upgrade) {
    for (const token of connectionTokens(headers.connection)) delete headers[token];
    delete headers.connection;
    delete headers.upgrade;
  }
  for (const name of HOP_BY_HOP) {
    // The body's framing is kept: the request is streamed through as it arrives.
    if (name !== 'transfer-encoding') delete headers[name];
  }
  if (headers.cookie !== undefined) {
    const cookie = withoutTwinboxCookies(headers.cookie);
    if (cookie === undefined) delete headers.cookie;
    else headers.cookie = cookie;
  }
  if (headers.authorization !== undefined && context.isTwinboxCredential(headers.authorization)) {
    delete headers.authorization;
  }
  // The chain of clients, as every proxy extends it; scheme and host as the first proxy saw them.
  const remote = context.remoteAddress ?? '';
  const forwardedFor = headers['x-forwarded-for'];
  headers['x-forwarded-for'] = forwardedFor ? `${forwardedFor}, ${remote}` : remote;
  headers['x-forwarded-proto'] ??= context.encrypted ? 'https' : 'http';
  headers['x-forwarded-host'] ??= headers.host ?? '';
  headers[REQUEST_ID_HEADER] = context.requestId;
}

/**
 * The headers an app or twin receives, as the flat `[name, value, ...]` list the upstream client sends,
 * from headers `forwardRequestHeaders` has already rewritten. `Transfer-Encoding` is left to the client,
 * which frames a streamed body itself (chunked) and refuses to be told how.
 */
export function upstreamRequestHeaders(headers: IncomingHttpHeaders): string[] {
  const flat: string[] = [];
  for (const name in headers) {
    if (name === 'transfer-encoding') continue;
    const value = headers[name];
    if (value === undefined) continue;
    if (typeof value === 'string') flat.push(name, value);
    else for (const one of value) flat.push(name, one);
  }
  return flat;
}

/**
 * A response's raw header lines (as the upstream client hands them over, name and value alternating)
 * into what the client receives, with the same rules as `forwardResponseHeaders`, in one pass and
 * without building a header object: this runs on every proxied response.
 */
export function forwardRawResponseHeaders(raw: readonly Buffer[], requestId: string): string[] {
  let listed: string[] | undefined;
  for (let i = 0; i < raw.length; i += 2) {
    // 10: "connection".length; the comparison only runs on names of that length.
    if (raw[i]!.length === 10 && raw[i]!.toString('latin1').toLowerCase() === 'connection') {
      (listed ??= []).push(...connectionTokens(raw[i + 1]!.toString('latin1')));
    }
  }
  const flat: string[] = [];
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!.toString('latin1');
    const lower = name.toLowerCase();
    if (RESPONSE_DROPPED.has(lower) || listed?.includes(lower)) continue;
    const value = raw[i + 1]!.toString('latin1');
    flat.push(name, lower === 'set-cookie' ? withoutCookieDomain(value) : value);
  }
  flat.push(REQUEST_ID_HEADER, requestId);
  return flat;
}

/** What never reaches the client from a response: hop-by-hop, and the request id, which the router sets. */
const RESPONSE_DROPPED = new Set([...HOP_BY_HOP, 'connection', 'upgrade', REQUEST_ID_HEADER]);

/** Rewrites a response's headers in place into what the client receives. */
export function forwardResponseHeaders(
  headers: IncomingHttpHeaders,
  requestId: string,
  upgrade = false,
): IncomingHttpHeaders {
  if (!upgrade) {
    for (const token of connectionTokens(headers.connection)) delete headers[token];
    delete headers.connection;
    delete headers.upgrade;
  }
  // Node frames the response to the client itself (chunked when there is no length).
  for (const name of HOP_BY_HOP) delete headers[name];
  const setCookie = headers['set-cookie'];
  if (setCookie) headers['set-cookie'] = setCookie.map(withoutCookieDomain);
  headers[REQUEST_ID_HEADER] = requestId;
  return headers;
}
