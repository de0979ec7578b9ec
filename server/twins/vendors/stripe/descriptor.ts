/** What Twinbox knows of the Stripe twin without running it (TwinDescriptor); its driver is twin.ts. */
import Joi from 'joi';
import type { TwinDescriptor } from '../../contract.ts';
import { seedValidator } from '../../kit/seed-validator.ts';
import { describeStripeChange } from './changes.ts';
import { summarizeStripe } from './summary.ts';
import { stripePresets } from './presets.ts';
import { cardOutcome, magicCardNumber } from './cards.ts';
import {
  CURRENT_VERSION,
  OLDEST_VERSION,
  STRIPE_API_VERSIONS,
  type StripeApiVersion,
} from './versions/catalog.ts';

export interface StripeCustomerSeed {
  id?: string;
  email?: string;
  name?: string;
  metadata?: Record<string, string>;
  /**
   * A magic id (`pm_card_visa`, `pm_card_chargeDeclined`, ...; `tok_*` too) or a test card number: a card
   * payment method is created, attached and made `invoice_settings.default_payment_method`.
   */
  payment_method?: string;
  /** Payment intents of this customer, made with its payment method (see seedPaymentIntent). */
  payment_intents?: Array<{
    amount: number;
    currency: string;
    status?: 'succeeded' | 'requires_payment_method';
  }>;
}

export interface StripeSeed {
  customers?: StripeCustomerSeed[];
  products?: Array<{
    id?: string;
    name: string;
    description?: string;
    prices?: Array<{ id?: string; unit_amount: number; currency: string; recurring?: { interval: string } }>;
  }>;
  webhook?: { url: string; events?: string[] };
  /** The account's default API version: requests without `Stripe-Version` and the seed webhook's events. */
  api_version?: StripeApiVersion;
}

const seedSchema = Joi.object<StripeSeed>({
  customers: Joi.array().items(
    Joi.object({
      id: Joi.string().pattern(/^cus_\w+$/),
      email: Joi.string().email(),
      name: Joi.string(),
      metadata: Joi.object().pattern(Joi.string(), Joi.string()),
      payment_method: Joi.string()
        .custom((value: string, helpers) =>
          magicCardNumber(value) || (/^\d{13,19}$/.test(value) && cardOutcome(value))
            ? value
            : helpers.error('any.invalid'),
        )
        .messages({
          'any.invalid':
            '{{#label}} must be a test card number (e.g. 4000000000000002) or a magic id such as pm_card_visa or pm_card_chargeDeclined',
        }),
      payment_intents: Joi.array().items(
        Joi.object({
          amount: Joi.number().integer().min(1).required(),
          currency: Joi.string().length(3).required(),
          status: Joi.string().valid('succeeded', 'requires_payment_method'),
        }),
      ),
    }),
  ),
  products: Joi.array().items(
    Joi.object({
      id: Joi.string().pattern(/^prod_\w+$/),
      name: Joi.string().required(),
      description: Joi.string(),
      prices: Joi.array().items(
        Joi.object({
          id: Joi.string().pattern(/^price_\w+$/),
          unit_amount: Joi.number().integer().min(0).required(),
          currency: Joi.string().length(3).required(),
          recurring: Joi.object({ interval: Joi.string().valid('day', 'week', 'month', 'year').required() }),
        }),
      ),
    }),
  ),
  api_version: Joi.string()
    .valid(...STRIPE_API_VERSIONS)
    .messages({
      'any.only': `{{#label}} must be a Stripe API version from ${OLDEST_VERSION} to ${CURRENT_VERSION}`,
    }),
  webhook: Joi.object({
    url: Joi.string()
      .uri({ scheme: ['http', 'https'] })
      .required(),
    events: Joi.array().items(Joi.string()),
  }),
});

export const validateStripeSeed = seedValidator('stripe', seedSchema);

export const stripeDescriptor: TwinDescriptor<StripeSeed, 'stripe'> = {
  name: 'stripe',
  description:
    "Stripe API, every version from 2020-08-27 to 2026-10-28.endive (Stripe-Version, or the seed's api_version): customers (and search), products, prices, payment methods, payment intents and charges with test cards, refunds, subscriptions with trials, invoices and invoice items, Checkout Sessions with a hosted test-card page, webhook endpoints, events, Idempotency-Key, expand[], signed webhooks",
  hosts: ['api.stripe.com', 'files.stripe.com'],
  // The hosted Checkout page: a browser outside the sandbox follows a session's url, whoever created it.
  pages: ['/c/'],
  envVarNames: [
    'STRIPE_SECRET_KEY',
    'STRIPE_PUBLISHABLE_KEY',
    'STRIPE_WEBHOOK_SECRET',
    'STRIPE_API_BASE',
    'STRIPE_API_HOST',
    'STRIPE_API_PORT',
    'STRIPE_API_PROTOCOL',
  ],
  // Stripe's SDKs have no default path; ours is the same pattern as every twin without one.
  webhook: { path: '/webhooks/stripe', secretVar: 'STRIPE_WEBHOOK_SECRET' },
  summarize: summarizeStripe,
  validateSeed: validateStripeSeed,
  presets: stripePresets,
  describeChange: describeStripeChange,
};
