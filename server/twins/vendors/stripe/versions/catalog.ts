/**
 * The Stripe API versions the twin serves, and which one a request is answered in.
 *
 * Stripe answers each request in the version its `Stripe-Version` header names, or in the account's
 * default version when it names none. It refuses a version it never released with 400 `Invalid Stripe
 * API version: ...` (a real date that was no release, such as `2022-08-02`, included). The releases are
 * listed here from `2020-08-27` (the version stripe-node 8 pins, the oldest any maintained SDK major
 * sends) to the current one: every version a stripe-node release has pinned since, as its CHANGELOG
 * records them. Older Stripe releases exist but are not served: they are refused with a 400 that says so,
 * rather than answered in a shape the twin does not know.
 */
import { StripeError } from '../errors.ts';

/** Every version served, oldest first. Monthly releases within a name (`.acacia`) only add to it. */
export const STRIPE_API_VERSIONS = [
  '2020-08-27',
  '2022-08-01',
  '2022-11-15',
  '2023-08-16',
  '2023-10-16',
  '2024-04-10',
  '2024-06-20',
  '2024-09-30.acacia',
  '2024-10-28.acacia',
  '2024-11-20.acacia',
  '2024-12-18.acacia',
  '2025-01-27.acacia',
  '2025-02-24.acacia',
  '2025-03-31.basil',
  '2025-04-30.basil',
  '2025-05-28.basil',
  '2025-06-30.basil',
  '2025-07-30.basil',
  '2025-08-27.basil',
  '2025-09-30.clover',
  '2025-10-29.clover',
  '2025-11-17.clover',
  '2025-12-15.clover',
  '2026-01-28.clover',
  '2026-02-25.clover',
  '2026-03-25.dahlia',
  '2026-04-22.dahlia',
  '2026-05-27.dahlia',
  '2026-06-24.dahlia',
  '2026-07-29.dahlia',
  '2026-08-26.dahlia',
  '2026-09-30.endive',
  '2026-10-28.endive',
] as const;

export type StripeApiVersion = (typeof STRIPE_API_VERSIONS)[number];

/** The version the store's objects are kept in (the internal model), and a new account's default. */
export const CURRENT_VERSION: StripeApiVersion = '2026-10-28.endive';
export const OLDEST_VERSION: StripeApiVersion = '2020-08-27';

const SHAPE = /^(\d{4})-(\d{2})-(\d{2})(?:\.[a-z]+)?$/;
const BETA = /^[a-z][a-z0-9_]*=v\d+$/;
const FIRST_YEAR = 2011;

export function isServedVersion(value: string): value is StripeApiVersion {
  return (STRIPE_API_VERSIONS as readonly string[]).includes(value);
}

/** Whether `version` is older than `gate` (both served versions): the change at `gate` is undone for it. */
export function isBefore(version: StripeApiVersion, gate: StripeApiVersion): boolean {
  return STRIPE_API_VERSIONS.indexOf(version) < STRIPE_API_VERSIONS.indexOf(gate);
}

/**
 * The version a request is answered in: its `Stripe-Version` (beta flags such as
 * `; embedded_connect_beta=v2`, which stripe-node lets an app append, set aside), or the account's default.
 */
export function resolveVersion(header: string | null, accountDefault: StripeApiVersion): StripeApiVersion {
  if (header === null || header.trim() === '') return accountDefault;
  return servedVersion(header, 'Stripe-Version');
}

/**
 * A version named in a header, a parameter (`api_version` of a webhook endpoint) or a seed, checked.
 * `param` names the parameter in the error; for the header there is none, as on Stripe.
 */
export function servedVersion(value: string, param: 'Stripe-Version' | 'api_version'): StripeApiVersion {
  const [version = '', ...betas] = value.split(';').map((part) => part.trim());
  if (betas.every((beta) => BETA.test(beta)) && isServedVersion(version)) return version;
  if (betas.every((beta) => BETA.test(beta)) && isOlderRelease(version)) {
    throw new StripeError(400, {
      type: 'invalid_request_error',
      message: `Stripe API version ${version} is older than the oldest version this Twinbox twin serves (${OLDEST_VERSION}, the one stripe-node 8 pins). Send ${OLDEST_VERSION} or later.`,
      ...(param === 'api_version' ? { param } : {}),
    });
  }
  throw new StripeError(400, {
    type: 'invalid_request_error',
    message:
      param === 'api_version' ? `Invalid api_version: ${value}` : `Invalid Stripe API version: ${value}`,
    ...(param === 'api_version' ? { param } : {}),
  });
}

/**
 * A real calendar date from 2011 (Stripe's first dated version) up to the oldest served one, without a
 * release name (names began with acacia): it may be one of Stripe's older releases, which are not listed.
 */
function isOlderRelease(version: string): boolean {
  const match = SHAPE.exec(version);
  if (!match || version.includes('.')) return false;
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  const date = new Date(Date.UTC(year, month - 1, day));
  // Date.UTC rolls 2024-02-30 over to March: a rolled date was not a calendar date.
  const real =
    date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day;
  return real && year >= FIRST_YEAR && version < OLDEST_VERSION;
}
