/** How the Stripe twin's seed document (docs/twins.md, "Seeds"; its schema: descriptor.ts) is written to the store. */
import { TwinInputError } from '../../contract.ts';
import { setOwn } from '../../runtime/safe-json.ts';
import { cardOutcome, magicCardNumber } from './cards.ts';
import { StripeError } from './errors.ts';
import { createCustomer, updateCustomer } from './resources/customers.ts';
import { confirmPaymentIntent, createPaymentIntent } from './resources/payment-intents.ts';
import {
  attachPaymentMethod,
  createPaymentMethod,
  resolvePaymentMethod,
} from './resources/payment-methods.ts';
import { createPrice, createProduct } from './resources/products.ts';
import { StripeStore, type StripeObject, type StripeState } from './store.ts';
import type { StripeCustomerSeed, StripeSeed } from './descriptor.ts';

/**
 * Writes a seed's customers and products into the state. Seeding writes objects directly: it records and
 * sends no events (they were not API calls). The seed's `webhook` is the twin's to apply.
 */
export function seedStripe(state: StripeState, seed: StripeSeed): void {
  if (seed.api_version) state.api_version = seed.api_version;
  const quiet = new StripeStore(state);
  try {
    for (const c of seed.customers ?? []) {
      const created = createCustomer(quiet, {
        ...(c.email ? { email: c.email } : {}),
        ...(c.name ? { name: c.name } : {}),
        metadata: c.metadata ?? {},
      });
      const id = c.id ?? created.id;
      if (c.id) rename(state, created, c.id);
      let pm: StripeObject | undefined;
      if (c.payment_method) {
        const number = magicCardNumber(c.payment_method);
        pm = number
          ? resolvePaymentMethod(quiet, c.payment_method)
          : createPaymentMethod(quiet, { type: 'card', card: { number: c.payment_method } });
        attachPaymentMethod(quiet, pm.id, { customer: id });
        updateCustomer(quiet, id, { invoice_settings: { default_payment_method: pm.id } });
      }
      for (const p of c.payment_intents ?? []) seedPaymentIntent(quiet, id, pm, p);
    }
    for (const p of seed.products ?? []) {
      const product = createProduct(quiet, {
        name: p.name,
        ...(p.id ? { id: p.id } : {}),
        ...(p.description ? { description: p.description } : {}),
      });
      for (const price of p.prices ?? []) {
        createPrice(quiet, {
          product: product.id,
          unit_amount: String(price.unit_amount),
          currency: price.currency,
          ...(price.id ? { id: price.id } : {}),
          ...(price.recurring ? { recurring: { interval: price.recurring.interval } } : {}),
        });
      }
    }
  } catch (error) {
    if (error instanceof StripeError) throw new TwinInputError(400, `stripe seed: ${error.message}`);
    throw error;
  }
}

/**
 * `succeeded`: confirmed with the customer's payment method, or with a fresh `pm_card_visa` when it has
 * none or it declines. `requires_payment_method` (default): when the customer's card declines, the intent
 * records that failed attempt (`last_payment_error`, a failed charge); otherwise it has no payment method.
 */
function seedPaymentIntent(
  store: StripeStore,
  customer: string,
  pm: StripeObject | undefined,
  p: NonNullable<StripeCustomerSeed['payment_intents']>[number],
): void {
  const declines = pm
    ? Boolean(cardOutcome(String(store.state.objects[pm.id]?.hidden?.number))?.decline)
    : false;
  const pi = createPaymentIntent(store, { amount: String(p.amount), currency: p.currency, customer });
  if (p.status === 'succeeded') {
    confirmPaymentIntent(store, pi.id, { payment_method: pm && !declines ? pm.id : 'pm_card_visa' });
  } else if (pm && declines) {
    try {
      confirmPaymentIntent(store, pi.id, { payment_method: pm.id });
    } catch (error) {
      if (!(error instanceof StripeError)) throw error;
    }
  }
}

function rename(state: StripeState, object: StripeObject, id: string): void {
  const entry = state.objects[object.id]!;
  delete state.objects[object.id];
  entry.data = { ...entry.data, id };
  setOwn(state.objects, id, entry);
}
