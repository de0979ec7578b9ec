/**
 * Stripe answers checked against the description of the API version they were asked in (issue 23).
 *
 * The twin serves every version from 2020-08-27 on (server/twins/vendors/stripe/versions/). Each version is
 * checked against the description generated from the types of the stripe-node release that pins it
 * (server/twins/vendors/stripe/vendor-schema/versions/<version>/). A monthly release within a named
 * line (`2024-10-28.acacia`) only adds to the line, so it is checked against the line's last release
 * there is a description of: stricter, since that one requires every field added since.
 */
import { existsSync, readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import {
  CURRENT_VERSION,
  STRIPE_API_VERSIONS,
  type StripeApiVersion,
} from '../../server/twins/vendors/stripe/versions/catalog.ts';
import { freshConnectionFetch, precompileStripeSchemas } from './stripe-schema.ts';
import { assertVendorResponse } from './vendor-schema.ts';

const VERSIONS_DIR = fileURLToPath(
  new URL('../../server/twins/vendors/stripe/vendor-schema/versions/', import.meta.url),
);

/** The versions there is a description of, each from the stripe-node release that pins it. */
export function describedVersions(): StripeApiVersion[] {
  const dirs = existsSync(VERSIONS_DIR) ? readdirSync(VERSIONS_DIR) : [];
  return [...STRIPE_API_VERSIONS.filter((v) => dirs.includes(v)), CURRENT_VERSION];
}

/** The vendor-schema name of the description `version` is checked against (`stripe` is the current one). */
export function descriptionOf(version: StripeApiVersion): string {
  const described = describedVersions();
  if (version === CURRENT_VERSION) return 'stripe';
  if (described.includes(version)) return `stripe@${version}`;
  const name = version.split('.')[1];
  const sameLine = name ? described.filter((v) => v.endsWith(`.${name}`)) : [];
  const last = sameLine[sameLine.length - 1];
  if (!last) throw new Error(`no description covers Stripe API version ${version}`);
  return last === CURRENT_VERSION ? 'stripe' : `stripe@${last}`;
}

export class StripeVersionMismatch extends Error {
  override name = 'StripeVersionMismatch';
}

/** The version a request names (`Stripe-Version`, beta flags set aside), or undefined. */
function askedVersion(headers: Headers): string | undefined {
  const header = headers.get('stripe-version');
  return header ? header.split(';')[0]!.trim() : undefined;
}

/**
 * A `fetch` that checks each Stripe answer against the description of the version it was asked in: the
 * request's `Stripe-Version`, or `accountDefault` when it names none. The answer's `Stripe-Version`
 * header must name that same version (a StripeVersionMismatch otherwise).
 */
export function stripeVersionFetch(
  accountDefault: StripeApiVersion = CURRENT_VERSION,
  inner: typeof fetch = freshConnectionFetch,
): typeof fetch {
  return async (input, init) => {
    const request = input instanceof Request ? input : new Request(input, init);
    const headers = new Headers(init?.headers ?? request.headers);
    const asked = askedVersion(headers) ?? accountDefault;
    const known = (STRIPE_API_VERSIONS as readonly string[]).includes(asked);
    const description = known ? descriptionOf(asked as StripeApiVersion) : 'stripe';
    precompileStripeSchemas(description);
    const response = await inner(input, init);
    const answered = response.headers.get('stripe-version');
    if (known && answered !== asked) {
      throw new StripeVersionMismatch(`asked in Stripe API version ${asked}, answered in ${answered}`);
    }
    const text = await response.clone().text();
    let body: unknown = text || undefined;
    if (text && /json/i.test(response.headers.get('content-type') ?? '')) body = JSON.parse(text);
    assertVendorResponse(description, {
      method: init?.method ?? request.method,
      path: new URL(request.url).pathname,
      status: response.status,
      body,
    });
    return response;
  };
}
