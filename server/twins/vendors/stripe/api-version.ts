/**
 * Which `Stripe-Version` a request may name. The twin serves one version (STRIPE_API_VERSION) and cannot
 * know the list of Stripe's release dates, so it refuses what cannot be a Stripe version at all, as Stripe
 * refuses it (400 `Invalid Stripe API version: ...`): a real calendar date YYYY-MM-DD from 2011 (Stripe's
 * first dated version) up to today, optionally followed by a release name (`.acacia`), optionally followed
 * by beta flags (`; embedded_connect_beta=v2`), which stripe-node lets an app append.
 */
import { StripeError } from './errors.ts';

const SHAPE = /^(\d{4})-(\d{2})-(\d{2})(?:\.[a-z]+)?$/;
const BETA = /^[a-z][a-z0-9_]*=v\d+$/;
const FIRST_YEAR = 2011;
/** A version dated today somewhere on earth is not in the future yet: up to a day past UTC's today. */
const CLOCK_SLACK_MS = 24 * 3600 * 1000;

export function isStripeVersionName(value: string, now = Date.now()): boolean {
  const [version = '', ...betas] = value.split(';').map((part) => part.trim());
  if (!betas.every((beta) => BETA.test(beta))) return false;
  const match = SHAPE.exec(version);
  if (!match) return false;
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  const date = new Date(Date.UTC(year, month - 1, day));
  // Date.UTC rolls 2024-02-30 over to March: a rolled date was not a calendar date.
  const real =
    date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day;
  return real && year >= FIRST_YEAR && date.getTime() <= now + CLOCK_SLACK_MS;
}

/** Stripe's refusal of a `Stripe-Version` header that names no version, or undefined when there is none. */
export function versionError(header: string | null): StripeError | undefined {
  if (header === null || isStripeVersionName(header)) return undefined;
  return new StripeError(400, {
    type: 'invalid_request_error',
    message: `Invalid Stripe API version: ${header}`,
  });
}
