/**
 * Redaction for the request log: the log is readable through the admin API, so it must never show
 * credentials, while still showing what a test needs to assert on (e.g. a PKCE `code_verifier`).
 */
import { bareObject } from './safe-json.ts';

// Card numbers and CVCs too: Stripe's `card[number]` and the hosted checkout page's `card_number` field.
const SECRET_KEY =
  /secret|password|private_key|authorization|api_key|^(access_|refresh_)?token$|_token$|^card(\[|_)(number|cvc)\]?$/i;
const MASK = '[REDACTED]';
const MAX_BODY_CHARS = 16_384;

function redactValue(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(redactValue);
  if (value && typeof value === 'object') {
    // Keys come from request bodies: a prototype-less copy, so `__proto__` stays a plain key.
    const out = bareObject();
    for (const [key, inner] of Object.entries(value)) {
      out[key] = SECRET_KEY.test(key) && inner !== null && inner !== '' ? MASK : redactValue(inner);
    }
    return out;
  }
  return value;
}

function maskKnown(text: string, known: readonly string[]): string {
  let out = text;
  for (const secret of known) if (secret.length >= 8) out = out.split(secret).join(MASK);
  return out;
}

/** Redacts a body (JSON or form-encoded or text) for the log; `known` are secret values to mask anywhere. */
export function redactBody(text: string, contentType: string, known: readonly string[]): unknown {
  if (text === '') return null;
  const clipped = text.length > MAX_BODY_CHARS ? text.slice(0, MAX_BODY_CHARS) : text;
  if (contentType.includes('json') || /^\s*[[{]/.test(clipped)) {
    try {
      return redactValue(JSON.parse(maskKnown(text, known)));
    } catch {
      // Not JSON after all: fall through to text handling.
    }
  }
  if (contentType.includes('x-www-form-urlencoded')) {
    const params = new URLSearchParams(clipped);
    for (const key of [...params.keys()]) if (SECRET_KEY.test(key)) params.set(key, MASK);
    return maskKnown(decodeURIComponent(params.toString().replace(/\+/g, ' ')), known);
  }
  if (!/^(text\/|application\/(json|x-www-form-urlencoded|xml))/.test(contentType) && contentType !== '') {
    return `[${text.length} bytes ${contentType}]`;
  }
  return maskKnown(clipped, known);
}

/** Redacts secret-looking query parameters (e.g. `client_secret`) in a path with query. */
export function redactPath(pathWithQuery: string, known: readonly string[]): string {
  const q = pathWithQuery.indexOf('?');
  if (q === -1) return pathWithQuery;
  const params = new URLSearchParams(pathWithQuery.slice(q + 1));
  for (const key of [...params.keys()]) if (SECRET_KEY.test(key)) params.set(key, MASK);
  return maskKnown(`${pathWithQuery.slice(0, q)}?${params.toString()}`, known);
}
