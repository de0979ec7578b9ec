/** A Stripe twin, and stripe-node clients that send a chosen `Stripe-Version`, for the version tests. */
import Stripe from 'stripe';
import type { StripeApiVersion } from '../../server/twins/vendors/stripe/versions/catalog.ts';
import { tempHost, type Teardown } from './helpers.ts';
import { stripeVersionFetch } from './stripe-versions.ts';

export async function stripeTwin(t: Teardown, seeds: Record<string, unknown> = {}) {
  const { host } = await tempHost(t);
  const env = (await host.start('sb', ['stripe'], { adminToken: 'admin', seeds })).stripe!.env_vars;
  return { env };
}

/** stripe-node (the current major) sending `Stripe-Version: version`, its answers checked in that version. */
export function clientIn(env: Record<string, string>, version?: string, accountDefault?: StripeApiVersion) {
  return new Stripe(env.STRIPE_SECRET_KEY!, {
    ...(version ? { apiVersion: version as Stripe.LatestApiVersion } : {}),
    host: env.STRIPE_API_HOST,
    port: Number(env.STRIPE_API_PORT),
    protocol: env.STRIPE_API_PROTOCOL as 'http',
    maxNetworkRetries: 0,
    httpClient: Stripe.createFetchHttpClient(stripeVersionFetch(accountDefault)),
  });
}
