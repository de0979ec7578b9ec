/**
 * An app on stripe-node 12, pinned to 2022-11-15 as its SDK is (issue 23, part 3): it reads a
 * subscription's `current_period_end`, expands `latest_invoice.payment_intent` to confirm the first
 * payment, pages, retries with an idempotency key, catches a declined card as StripeCardError and
 * verifies a webhook with its own constructEvent. The same twin answers a current stripe-node
 * (2026-10-28.endive) in the new shape. Each answer is checked against its own version's description.
 */
import t from 'tap';
import Stripe from 'stripe';
import { CURRENT_VERSION } from '../../server/twins/vendors/stripe/versions/catalog.ts';
import { webhookReceiver } from './helpers.ts';
import { clientIn, stripeTwin } from './stripe-version-clients.ts';
import { checked } from './vendor-schema.ts';
import { stripeVersionFetch } from './stripe-versions.ts';

/**
 * stripe-node 12 ships types that declare `module 'stripe'`, which would replace the current stripe-node's
 * for the whole project: it is imported by a name the compiler does not follow, and typed as an app in
 * JavaScript sees it.
 */
const V12_PACKAGE = 'stripe-v12';
const StripeV12 = ((await import(V12_PACKAGE)) as { default: any }).default;

const SEED = {
  stripe: {
    products: [
      {
        id: 'prod_pro',
        name: 'Pro',
        prices: [{ id: 'price_pro', unit_amount: 2000, currency: 'usd', recurring: { interval: 'month' } }],
      },
    ],
  },
};

t.test('stripe-node 12 (2022-11-15) and stripe-node 23 (endive) against one twin', async (t) => {
  const { env } = await stripeTwin(t, SEED);
  // As an app of the time writes it: its SDK's pinned version, spelled out; the twin's variables.
  const stripe = new StripeV12(env.STRIPE_SECRET_KEY!, {
    apiVersion: '2022-11-15',
    host: env.STRIPE_API_HOST,
    port: Number(env.STRIPE_API_PORT),
    protocol: env.STRIPE_API_PROTOCOL as 'http',
    maxNetworkRetries: 0,
    httpClient: StripeV12.createFetchHttpClient(stripeVersionFetch()),
  });
  const hooks = await webhookReceiver(t);
  const endpoint = await stripe.webhookEndpoints.create({
    url: hooks.url,
    enabled_events: ['customer.subscription.created'],
  });
  t.equal(endpoint.api_version, '2022-11-15', 'pinned to the version the app speaks');

  // The classic subscription quickstart: default_incomplete, then the first invoice's payment intent.
  const customer = await stripe.customers.create({ email: 'ada@example.com' });
  const pm = await stripe.paymentMethods.attach('pm_card_visa', { customer: customer.id });
  const sub = await stripe.subscriptions.create({
    customer: customer.id,
    items: [{ price: 'price_pro' }],
    payment_behavior: 'default_incomplete',
    expand: ['latest_invoice.payment_intent'],
  });
  t.equal(sub.status, 'incomplete');
  const invoice = sub.latest_invoice as { id: string; payment_intent: { id: string; client_secret: string } };
  const intent = invoice.payment_intent;
  t.match(intent.client_secret, /^pi_\w+_secret_\w+$/, 'latest_invoice.payment_intent expands');
  const paid = await stripe.paymentIntents.confirm(intent.id, { payment_method: pm.id });
  t.equal(paid.status, 'succeeded');
  t.type(paid.latest_charge, 'string', '2022-11-15: the intent names its latest charge');

  const active = await stripe.subscriptions.retrieve(sub.id);
  t.equal(active.status, 'active', 'paying the first invoice activates the subscription');
  t.type(active.current_period_end, 'number', 'current_period_end is on the subscription');
  t.ok(active.current_period_end > active.current_period_start, 'a month-long period');
  t.equal(
    ((await stripe.invoices.retrieve(invoice.id)) as { paid: boolean }).paid,
    true,
    'the invoice says it is paid',
  );

  const delivery = await hooks.next(20_000);
  const event = stripe.webhooks.constructEvent(
    delivery.body,
    String(delivery.headers['stripe-signature']),
    endpoint.secret!,
  );
  t.equal(event.api_version, '2022-11-15', 'the event is in the endpoint version');
  t.type((event.data.object as { current_period_end: number }).current_period_end, 'number');

  for (let i = 0; i < 4; i++) await stripe.customers.create({ email: `c${i}@example.com` });
  const emails: string[] = [];
  await stripe.customers.list({ limit: 2 }).autoPagingEach((c: { email: string }) => {
    emails.push(String(c.email));
  });
  t.equal(emails.length, 5, 'autoPagingEach walks every page');
  const once = await stripe.customers.create({ email: 'once@example.com' }, { idempotencyKey: 'k-1' });
  const again = await stripe.customers.create({ email: 'once@example.com' }, { idempotencyKey: 'k-1' });
  t.equal(again.id, once.id, 'an idempotency key replays the first answer');
  const declined = await stripe.paymentIntents
    .create({ amount: 1000, currency: 'usd', payment_method: 'pm_card_chargeDeclined', confirm: true })
    .catch((e: unknown) => e);
  t.ok(declined instanceof StripeV12.errors.StripeCardError, 'a declined card is a StripeCardError');
  t.equal((declined as { decline_code: string }).decline_code, 'generic_decline');

  // The same subscription read by a current stripe-node: endive's shape.
  const current = clientIn(env, CURRENT_VERSION);
  const now = await current.subscriptions.retrieve(sub.id);
  t.notOk('current_period_end' in now, 'endive: no period on the subscription');
  t.type(
    (now.items.data[0] as unknown as { current_period_end: number }).current_period_end,
    'number',
    'endive: the period is on the item',
  );
  const refused = await current.subscriptions
    .retrieve(sub.id, { expand: ['latest_invoice.payment_intent'] })
    .catch((e: unknown) => e);
  t.ok(refused instanceof Stripe.errors.StripeInvalidRequestError, 'endive refuses that expansion');
  t.match((refused as Error).message, /cannot be expanded/);
  const latest = await current.invoices.retrieve(invoice.id, { expand: ['confirmation_secret'] });
  t.equal(latest.status, 'paid');

  const mine = checked.filter((c) => c.twin.startsWith('stripe'));
  t.ok(
    mine.some((c) => c.twin === 'stripe@2022-11-15'),
    'answers checked against 2022-11-15',
  );
  t.ok(
    mine.some((c) => c.twin === 'stripe'),
    'and against the current description',
  );
  t.same(
    mine.filter((c) => !c.valid),
    [],
    'every answer matched its version',
  );
});
