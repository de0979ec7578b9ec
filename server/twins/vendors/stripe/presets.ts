/**
 * The Stripe twin's scenario presets: ready-made seeds and the counts each one promises. GET /scenarios
 * lists them (server/scenarios/presets.ts sets the order); test/scenarios/presets.test.ts starts each one
 * and checks every promised count through the official SDK, before and after a reset.
 */
import type { TwinPresets } from '../../contract.ts';

/** The subscription products of the SaaS presets (the SaaS launch preset reuses Pro). */
export const SAAS_PRODUCTS = [
  {
    id: 'prod_starter',
    name: 'Starter',
    description: 'For individuals and small projects',
    prices: [
      { id: 'price_starter_monthly', unit_amount: 900, currency: 'usd', recurring: { interval: 'month' } },
      { id: 'price_starter_yearly', unit_amount: 9000, currency: 'usd', recurring: { interval: 'year' } },
    ],
  },
  {
    id: 'prod_pro',
    name: 'Pro',
    description: 'For growing teams',
    prices: [
      { id: 'price_pro_monthly', unit_amount: 2900, currency: 'usd', recurring: { interval: 'month' } },
      { id: 'price_pro_yearly', unit_amount: 29000, currency: 'usd', recurring: { interval: 'year' } },
    ],
  },
];

const DECLINES: Array<[card: string, name: string]> = [
  ['pm_card_chargeDeclined', 'Generic Decline'],
  ['pm_card_chargeDeclinedInsufficientFunds', 'Insufficient Funds'],
  ['pm_card_chargeDeclinedLostCard', 'Lost Card'],
  ['pm_card_chargeDeclinedStolenCard', 'Stolen Card'],
  ['pm_card_chargeDeclinedExpiredCard', 'Expired Card'],
  ['pm_card_chargeDeclinedIncorrectCvc', 'Incorrect Cvc'],
  ['pm_card_chargeDeclinedProcessingError', 'Processing Error'],
];

export const stripePresets: TwinPresets = {
  promiseKeys: {
    customers: 'customers',
    declining_customers:
      'customers whose default payment method is declined when a PaymentIntent is confirmed with it',
    products: 'products',
    prices: 'prices',
    payment_intents: 'PaymentIntents',
  },
  presets: [
    {
      id: 'preset_saas_billing',
      name: 'SaaS billing account',
      description:
        'A Stripe account with two subscription products (monthly and yearly prices) and three customers: two with a working Visa card and one whose card is declined.',
      twins: ['stripe'],
      seed: {
        stripe: {
          products: SAAS_PRODUCTS,
          customers: [
            {
              id: 'cus_ada',
              email: 'ada@example.com',
              name: 'Ada Lovelace',
              metadata: { plan: 'pro' },
              payment_method: 'pm_card_visa',
              payment_intents: [{ amount: 2900, currency: 'usd', status: 'succeeded' }],
            },
            {
              id: 'cus_grace',
              email: 'grace@example.com',
              name: 'Grace Hopper',
              metadata: { plan: 'starter' },
              payment_method: 'pm_card_mastercard',
            },
            {
              id: 'cus_declining',
              email: 'decline@example.com',
              name: 'Dee Klein',
              metadata: { plan: 'pro' },
              payment_method: 'pm_card_chargeDeclined',
              payment_intents: [{ amount: 2900, currency: 'usd', status: 'requires_payment_method' }],
            },
          ],
        },
      },
      promises: {
        stripe: { customers: 3, declining_customers: 1, products: 2, prices: 4, payment_intents: 2 },
      },
    },
    {
      id: 'preset_checkout_declines',
      name: 'Checkout with every decline type',
      description:
        'A one-product shop with one customer per Stripe test decline (generic, insufficient funds, lost, stolen, expired, incorrect CVC, processing error) and one customer whose card succeeds.',
      twins: ['stripe'],
      seed: {
        stripe: {
          products: [
            {
              id: 'prod_tshirt',
              name: 'Twinbox T-shirt',
              prices: [{ id: 'price_tshirt', unit_amount: 2500, currency: 'usd' }],
            },
          ],
          customers: [
            { email: 'ok@example.com', name: 'Happy Path', payment_method: 'pm_card_visa' },
            ...DECLINES.map(([card, name]) => ({
              email: `${name.toLowerCase().replace(/ /g, '.')}@example.com`,
              name,
              metadata: { test_card: card },
              payment_method: card,
            })),
          ],
        },
      },
      promises: { stripe: { customers: 8, declining_customers: 7, products: 1, prices: 1 } },
    },
  ],
};
