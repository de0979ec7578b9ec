/**
 * The Stripe twin's edge: how its answers leave it in Stripe's shape. Every answer carries Stripe's
 * `Request-Id` and `Stripe-Version` headers, and what is refused around the resources (a key, an unknown
 * URL, a reused idempotency key, a body the runtime refused, an injected fault) gets Stripe's error
 * envelope here. The resources (resources/*.ts) build their objects in the current API version; the
 * answer is rendered in the version asked for (versions/render.ts) before it gets here, and the header
 * names that version.
 */
import { randomBytes } from 'node:crypto';
import { bytesAnswer, json } from '../../runtime/http.ts';
import { CURRENT_VERSION } from './versions/catalog.ts';

/**
 * Random bytes for request ids, drawn 4 KiB at a time: an id must be unique, not secret, and one call
 * to the system's RNG per answer cost more than the rest of the header.
 */
let idPool = Buffer.alloc(0);
let idAt = 0;

/** `req_` and 12 random characters, as Stripe's request ids look. */
function requestId(): string {
  if (idAt + 9 > idPool.length) {
    idPool = randomBytes(4096);
    idAt = 0;
  }
  idAt += 9;
  return `req_${idPool.toString('base64url', idAt - 9, idAt)}`;
}

export function stripeJson(
  status: number,
  body: unknown,
  extra: Record<string, string> = {},
  version: string = CURRENT_VERSION,
): Response {
  return json(status, body, {
    'request-id': requestId(),
    'stripe-version': version,
    ...extra,
  });
}

/** `stripeJson` for a body already written as JSON (`bytes`), with the same headers. */
export function stripeJsonBytes(status: number, bytes: Buffer, version: string = CURRENT_VERSION): Response {
  return bytesAnswer(bytes, {
    status,
    headers: {
      'content-type': 'application/json; charset=utf-8',
      'request-id': requestId(),
      'stripe-version': version,
    },
  });
}

/** Stripe's 401 for a missing or wrong secret key; the key is shown masked, as Stripe does. */
export function unauthorized(key: string, version?: string): Response {
  const shown = key ? `${key.slice(0, 8)}${'*'.repeat(Math.max(0, key.length - 12))}${key.slice(-4)}` : '';
  return stripeJson(
    401,
    {
      error: {
        type: 'invalid_request_error',
        message: key
          ? `Invalid API Key provided: ${shown}`
          : "You did not provide an API key. You need to provide your API key in the Authorization header, using Bearer auth (e.g. 'Authorization: Bearer YOUR_SECRET_KEY'). See https://stripe.com/docs/api#authentication for details, or we can help at https://support.stripe.com/.",
      },
    },
    {},
    version,
  );
}

/** A parameter the form parser refused (params.ts). */
export function refusedParam(message: string, param: string, version?: string): Response {
  return stripeJson(400, { error: { type: 'invalid_request_error', message, param } }, {}, version);
}

/** An `Idempotency-Key` used again with other parameters. */
export function idempotencyMismatch(key: string, version?: string): Response {
  return stripeJson(
    400,
    {
      error: {
        type: 'idempotency_error',
        message: `Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '${key}' if you meant to execute a different request.`,
      },
    },
    {},
    version,
  );
}

/** The body of Stripe's 404 for a method and path it does not serve. */
export function unrecognizedUrl(method: string, pathname: string) {
  return {
    error: {
      type: 'invalid_request_error',
      message: `Unrecognized request URL (${method}: ${pathname}).`,
    },
  };
}

/** Stripe's error shape for input refused before `handle` (bad keys, too large) or a thrown TwinInputError. */
export function refusedInput(status: number, message: string, code?: string, version?: string): Response {
  if (status >= 500) return stripeJson(status, { error: { type: 'api_error', message } }, {}, version);
  const text =
    code === 'too_large'
      ? `${message.charAt(0).toUpperCase()}${message.slice(1)}.`
      : code === 'forbidden_key'
        ? `Received unknown parameter: ${message.replace(/^"(.*)" is not an allowed key$/, '$1')}`
        : message;
  return stripeJson(status, { error: { type: 'invalid_request_error', message: text } }, {}, version);
}

export function injectedFault(kind: 'status' | 'rate_limit', status: number, version?: string): Response {
  if (kind === 'rate_limit') {
    return stripeJson(
      429,
      {
        error: {
          type: 'invalid_request_error',
          code: 'rate_limit',
          message:
            'Too many requests hit the API too quickly. We recommend an exponential backoff of your requests.',
        },
      },
      {},
      version,
    );
  }
  return stripeJson(
    status,
    {
      error: {
        type: status >= 500 ? 'api_error' : 'invalid_request_error',
        message: `Injected fault (${status})`,
      },
    },
    {},
    version,
  );
}
