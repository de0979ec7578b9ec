import t from 'tap';
import Stripe from 'stripe';
import { TwinAdminClient } from '../../server/twins/kit/admin-client.ts';
import { statusOf, stripeClient, tempHost, webhookReceiver, type Teardown } from './helpers.ts';
import { checked } from './vendor-schema.ts';

async function stripeTwin(t: Teardown, seeds: Record<string, unknown> = {}) {
  const { host } = await tempHost(t);
  const entry = (await host.start('sb', ['stripe'], { adminToken: 'admin', seeds })).stripe!;
  const env = entry.env_vars;
  const stripe = stripeClient(env);
  return { host, entry, env, stripe, admin: new TwinAdminClient(entry.admin_url, 'admin') };
}

t.test('stripe twin: customers, products, prices, payment methods, payment intents', async (t) => {
  const { stripe } = await stripeTwin(t, {
    stripe: {
      products: [
        { id: 'prod_pro', name: 'Pro', prices: [{ id: 'price_pro', unit_amount: 2000, currency: 'usd' }] },
      ],
    },
  });
  const customer = await stripe.customers.create({
    email: 'ada@example.com',
    name: 'Ada',
    metadata: { plan: 'pro' },
  });
  t.match(customer.id, /^cus_/);
  t.same(customer.metadata, { plan: 'pro' });
  t.equal(((await stripe.customers.retrieve(customer.id)) as Stripe.Customer).email, 'ada@example.com');
  t.equal((await stripe.customers.update(customer.id, { name: 'Ada L.' })).name, 'Ada L.');
  t.equal((await stripe.customers.list({ email: 'ada@example.com' })).data.length, 1);

  t.equal((await stripe.products.retrieve('prod_pro')).default_price, 'price_pro');
  const product = await stripe.products.create({ name: 'Team' });
  const price = await stripe.prices.create({
    product: product.id,
    unit_amount: 5000,
    currency: 'usd',
    recurring: { interval: 'month' },
  });
  t.equal(price.type, 'recurring');
  t.equal(price.recurring?.interval, 'month');
  t.equal((await stripe.prices.list({ product: product.id })).data[0]?.id, price.id);

  const pm = await stripe.paymentMethods.create({ type: 'card', card: { token: 'tok_visa' } });
  t.equal(pm.card?.last4, '4242');
  await stripe.paymentMethods.attach(pm.id, { customer: customer.id });
  t.equal((await stripe.customers.listPaymentMethods(customer.id)).data[0]?.id, pm.id);

  const pi = await stripe.paymentIntents.create({
    amount: 2000,
    currency: 'usd',
    customer: customer.id,
    payment_method: pm.id,
  });
  t.equal(pi.status, 'requires_confirmation');
  const confirmed = await stripe.paymentIntents.confirm(pi.id);
  t.equal(confirmed.status, 'succeeded');
  t.equal(confirmed.amount_received, 2000);
  const charge = await stripe.charges.retrieve(confirmed.latest_charge as string);
  t.equal(charge.status, 'succeeded');

  const quick = await stripe.paymentIntents.create({
    amount: 500,
    currency: 'eur',
    payment_method: 'pm_card_visa',
    confirm: true,
  });
  t.equal(quick.status, 'succeeded', 'pm_card_visa succeeds');

  for (const declined of ['pm_card_chargeDeclined', 'pm_card_chargeDeclinedInsufficientFunds']) {
    const error = await stripe.paymentIntents
      .create({ amount: 500, currency: 'usd', payment_method: declined, confirm: true })
      .catch((e: unknown) => e);
    t.ok(error instanceof Stripe.errors.StripeCardError, `${declined} is declined`);
    const e = error as Stripe.errors.StripeCardError;
    t.equal(e.statusCode, 402);
    t.equal(e.code, 'card_declined');
    t.equal(e.decline_code, declined.endsWith('Funds') ? 'insufficient_funds' : 'generic_decline');
    t.equal(e.payment_intent?.status, 'requires_payment_method');
  }
  const rawCard = await stripe.paymentMethods.create({
    type: 'card',
    card: { number: '4000000000000002', exp_month: 12, exp_year: 2034, cvc: '123' },
  });
  const declinedPi = await stripe.paymentIntents.create({
    amount: 900,
    currency: 'usd',
    payment_method: rawCard.id,
  });
  t.equal(await statusOf(stripe.paymentIntents.confirm(declinedPi.id)), 402, '4000000000000002 declines');
  const retried = await stripe.paymentIntents.confirm(declinedPi.id, { payment_method: 'pm_card_visa' });
  t.equal(retried.status, 'succeeded', 'a declined intent can be retried with another card');

  t.equal(await statusOf(stripe.customers.retrieve('cus_missing')), 404);
  const bad = await stripe.paymentIntents.create({ amount: -1, currency: 'usd' }).catch((e: unknown) => e);
  t.ok(bad instanceof Stripe.errors.StripeInvalidRequestError);
});

t.test('stripe twin: list pagination with starting_after and has_more', async (t) => {
  const { stripe } = await stripeTwin(t);
  const ids: string[] = [];
  for (let i = 0; i < 7; i++) ids.push((await stripe.customers.create({ email: `c${i}@example.com` })).id);
  const page1 = await stripe.customers.list({ limit: 3 });
  t.equal(page1.has_more, true);
  t.same(
    page1.data.map((c) => c.id),
    ids.slice().reverse().slice(0, 3),
    'newest first',
  );
  const page2 = await stripe.customers.list({ limit: 3, starting_after: page1.data.at(-1)!.id });
  t.same(
    page2.data.map((c) => c.id),
    ids.slice().reverse().slice(3, 6),
  );
  const all = await stripe.customers.list({ limit: 2 }).autoPagingToArray({ limit: 100 });
  t.equal(all.length, 7, 'auto-pagination walks every page');
  const last = await stripe.customers.list({ limit: 5, starting_after: page2.data.at(-1)!.id });
  t.equal(last.has_more, false);
  t.equal(last.data.length, 1);
});

t.test('stripe twin: the same Idempotency-Key twice returns the same object and creates one', async (t) => {
  const { stripe, admin } = await stripeTwin(t);
  const a = await stripe.customers.create({ email: 'once@example.com' }, { idempotencyKey: 'key-1' });
  const b = await stripe.customers.create({ email: 'once@example.com' }, { idempotencyKey: 'key-1' });
  t.equal(a.id, b.id);
  // Through a fetch client (the schema check), lastResponse is the fetch Response.
  const replayed = (b.lastResponse as unknown as Response).headers.get('idempotent-replayed');
  t.equal(replayed, 'true');
  t.equal((await stripe.customers.list()).data.length, 1, 'one customer was created');
  const pi1 = await stripe.paymentIntents.create(
    { amount: 100, currency: 'usd', payment_method: 'pm_card_visa', confirm: true },
    { idempotencyKey: 'pay-1' },
  );
  const pi2 = await stripe.paymentIntents.create(
    { amount: 100, currency: 'usd', payment_method: 'pm_card_visa', confirm: true },
    { idempotencyKey: 'pay-1' },
  );
  t.equal(pi1.id, pi2.id);
  t.equal((await stripe.charges.list()).data.length, 1, 'one charge');
  const conflict = await stripe.customers
    .create({ email: 'other@example.com' }, { idempotencyKey: 'key-1' })
    .catch((e: unknown) => e);
  t.ok(
    conflict instanceof Stripe.errors.StripeIdempotencyError,
    'other parameters with the same key are refused',
  );
  t.ok((await admin.requests()).some((r) => r.path === '/v1/customers' && r.status === 200));
});

t.test('stripe twin: webhooks accepted by stripe.webhooks.constructEvent', async (t) => {
  const receiver = await webhookReceiver(t);
  const { stripe, env, admin } = await stripeTwin(t, {
    stripe: { webhook: { url: receiver.url, events: ['payment_intent.succeeded'] } },
  });
  const pi = await stripe.paymentIntents.create({
    amount: 4200,
    currency: 'usd',
    payment_method: 'pm_card_visa',
    confirm: true,
  });
  const delivery = await receiver.next();
  const event = stripe.webhooks.constructEvent(
    delivery.body,
    delivery.headers['stripe-signature'] as string,
    env.STRIPE_WEBHOOK_SECRET!,
  );
  t.equal(event.type, 'payment_intent.succeeded');
  t.equal((event.data.object as Stripe.PaymentIntent).id, pi.id);
  t.equal((await stripe.events.retrieve(event.id)).type, 'payment_intent.succeeded');
  t.throws(() =>
    stripe.webhooks.constructEvent(
      delivery.body,
      delivery.headers['stripe-signature'] as string,
      'whsec_wrong',
    ),
  );

  const [first] = await admin.deliveries();
  await admin.redeliver(first!.id);
  const again = await receiver.next();
  t.equal(
    stripe.webhooks.constructEvent(
      again.body,
      again.headers['stripe-signature'] as string,
      env.STRIPE_WEBHOOK_SECRET!,
    ).id,
    event.id,
  );
});

t.test('stripe twin: fault injection, auth, reset', async (t) => {
  const { stripe, admin, env, host, entry } = await stripeTwin(t, {
    stripe: { customers: [{ id: 'cus_seeded', email: 's@example.com' }] },
  });
  await admin.addFault({ rate_limit: true, count: 1 });
  const limited = await stripe.customers.list().catch((e: unknown) => e);
  t.ok(limited instanceof Stripe.errors.StripeRateLimitError, 'the SDK sees a rate-limit error');
  await admin.addFault({ status: 500, count: 1 });
  t.ok((await stripe.customers.list().catch((e: unknown) => e)) instanceof Stripe.errors.StripeAPIError);
  t.equal((await stripe.customers.list()).data.length, 1, 'then it stops');

  const wrong = stripeClient(env, 'sk_test_wrong');
  t.ok(
    (await wrong.customers.list().catch((e: unknown) => e)) instanceof
      Stripe.errors.StripeAuthenticationError,
  );

  await stripe.customers.create({ email: 'new@example.com' });
  await admin.reset();
  t.same(
    (await stripe.customers.list()).data.map((c) => c.id),
    ['cus_seeded'],
  );
  t.same(host.get('sb')?.stripe, entry, 'same URLs and keys after reset');
  const log = await admin.requests();
  t.notMatch(JSON.stringify(log), env.STRIPE_SECRET_KEY!, 'the secret key never appears in the log');
});

// The twin keeps a stored object's JSON while the store holds that very object (StripeTwin.storedJson):
// every write in turn must be seen by the next retrieve of the same object.
t.test('stripe twin: a retrieve after any write sees the write', async (t) => {
  const { stripe, admin } = await stripeTwin(t, {
    stripe: { customers: [{ id: 'cus_seeded', email: 's@example.com' }] },
  });
  const email = async (id = 'cus_seeded') => ((await stripe.customers.retrieve(id)) as Stripe.Customer).email;
  t.equal(await email(), 's@example.com');
  t.equal(await email(), 's@example.com', 'the same retrieve again');
  await stripe.customers.update('cus_seeded', { email: 'changed@example.com' });
  t.equal(await email(), 'changed@example.com', 'an update is read at once');
  await stripe.customers.update('cus_seeded', { metadata: { plan: 'pro' } });
  const updated = (await stripe.customers.retrieve('cus_seeded')) as Stripe.Customer;
  t.same([updated.email, updated.metadata], ['changed@example.com', { plan: 'pro' }], 'and the next one');

  const product = await stripe.products.create({ name: 'Pro' });
  t.equal((await stripe.products.retrieve(product.id)).name, 'Pro');
  await stripe.products.update(product.id, { name: 'Pro Plus' });
  t.equal((await stripe.products.retrieve(product.id)).name, 'Pro Plus', 'another type alike');

  const other = await stripe.customers.create({ email: 'other@example.com' });
  t.equal(await email(other.id), 'other@example.com');
  await stripe.customers.del(other.id);
  const gone = await stripe.customers.retrieve(other.id).catch((e: unknown) => e);
  t.ok(gone instanceof Stripe.errors.StripeInvalidRequestError, 'a deleted customer is not found');

  await admin.reset();
  t.equal(await email(), 's@example.com', 'a reset is read at once');
});

t.test('every Stripe response in these tests matched the vendored description', async (t) => {
  const stripeChecks = checked.filter((r) => r.twin === 'stripe');
  t.ok(stripeChecks.length > 40, `${stripeChecks.length} responses checked`);
  t.same(
    stripeChecks.filter((r) => !r.valid).map((r) => `${r.operation} ${r.status}: ${r.errors.join('; ')}`),
    [],
  );
});
