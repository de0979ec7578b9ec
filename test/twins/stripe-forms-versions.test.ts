import t from 'tap';
import Stripe from 'stripe';
import { stripeClient, tempHost, type Teardown } from './helpers.ts';
import { vendorFetch } from './vendor-schema.ts';

async function stripeTwin(t: Teardown) {
  const { host } = await tempHost(t);
  const env = (await host.start('sb', ['stripe'], { adminToken: 'admin' })).stripe!.env_vars;
  // Raw requests, as a client in another language sends them; every answer is checked against Stripe's description.
  const post = (path: string, form: string, headers: Record<string, string> = {}) =>
    vendorFetch('stripe')(`${env.STRIPE_API_BASE}${path}`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${env.STRIPE_SECRET_KEY}`,
        'content-type': 'application/x-www-form-urlencoded',
        ...headers,
      },
      body: form,
    });
  return { env, stripe: stripeClient(env), post };
}

t.test('stripe twin: form booleans as stripe-python sends them (True/False)', async (t) => {
  const { stripe, post, env } = await stripeTwin(t);
  const made = await post('/v1/products', 'name=Pro&active=False');
  t.equal(made.status, 200);
  const product = (await made.json()) as { id: string; active: boolean };
  t.equal(product.active, false, '`False` is false');
  const updated = await post(`/v1/products/${product.id}`, 'active=True');
  t.equal(updated.status, 200);
  t.equal(((await updated.json()) as { active: boolean }).active, true, '`True` is true');
  t.equal((await stripe.products.retrieve(product.id)).active, true);

  // In a list's query string too: stripe-python encodes GET parameters the same way.
  await stripe.products.create({ name: 'Old', active: false });
  const listed = await vendorFetch('stripe')(`${env.STRIPE_API_BASE}/v1/products?active=False`, {
    headers: { authorization: `Bearer ${env.STRIPE_SECRET_KEY}` },
  });
  const names = ((await listed.json()) as { data: { name: string }[] }).data.map((p) => p.name);
  t.same(names, ['Old']);

  const bad = await post('/v1/products', 'name=X&active=yes');
  t.equal(bad.status, 400, 'any other word is still refused');
  const error = ((await bad.json()) as { error: Record<string, string> }).error;
  t.equal(error.type, 'invalid_request_error');
  t.equal(error.param, 'active');
  t.equal(error.message, 'Invalid boolean: yes');
});

t.test('stripe twin: an unknown Stripe-Version is 400, known ones work', async (t) => {
  const { stripe, post } = await stripeTwin(t);
  for (const version of ['1999-01-01', '2022-13-01', '2024-02-30', 'latest', '2099-01-01', '2024-06-20; x']) {
    const error = await stripe.customers
      .create({ email: 'a@example.com' }, { apiVersion: version })
      .catch((e: unknown) => e);
    t.ok(error instanceof Stripe.errors.StripeInvalidRequestError, `${version}: StripeInvalidRequestError`);
    const e = error as Stripe.errors.StripeInvalidRequestError;
    t.equal(e.statusCode, 400);
    t.equal(e.type, 'StripeInvalidRequestError');
    t.equal(e.message, `Invalid Stripe API version: ${version}`);
  }
  t.equal((await stripe.customers.list()).data.length, 0, 'a refused request created nothing');

  for (const version of [
    '2020-08-27',
    '2022-11-15',
    '2024-09-30.acacia',
    '2024-06-20; embedded_connect_beta=v2',
  ]) {
    const customer = await stripe.customers.create({ email: 'a@example.com' }, { apiVersion: version });
    t.match(customer.id, /^cus_/, `${version} is served`);
  }
  const raw = await post('/v1/customers', 'email=b%40example.com', { 'stripe-version': '2022-11-15' });
  t.equal(raw.status, 200);
  t.equal(raw.headers.get('stripe-version'), '2022-11-15', 'answered in the version asked');
});
