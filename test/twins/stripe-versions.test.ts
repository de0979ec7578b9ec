/**
 * The Stripe twin answers in the API version asked for (issue 23): one store, each version's shape a
 * transform at the edge (server/twins/vendors/stripe/versions/). Every answer is checked against the
 * description of the version it was asked in (stripe-versions.ts), generated from the types of the
 * stripe-node release that pins that version.
 */
import t from 'tap';
import Stripe from 'stripe';
import {
  CURRENT_VERSION,
  type StripeApiVersion,
} from '../../server/twins/vendors/stripe/versions/catalog.ts';
import { validateStripeSeed } from '../../server/twins/vendors/stripe/descriptor.ts';
import { summarizeStripe } from '../../server/twins/vendors/stripe/summary.ts';
import { webhookReceiver } from './helpers.ts';
import { clientIn, stripeTwin } from './stripe-version-clients.ts';
import { checkResponse } from './vendor-schema.ts';
import { freshConnectionFetch, precompileStripeSchemas } from './stripe-schema.ts';
import { descriptionOf, stripeVersionFetch } from './stripe-versions.ts';

t.test('the version used: its header, unknown versions refused as Stripe refuses them', async (t) => {
  const { env } = await stripeTwin(t);
  // Compiled before the first answer: compiling mid-test would let a kept-alive connection time out.
  precompileStripeSchemas('stripe');
  const send = (version?: string) =>
    freshConnectionFetch(`${env.STRIPE_API_BASE}/v1/customers`, {
      headers: {
        authorization: `Bearer ${env.STRIPE_SECRET_KEY}`,
        ...(version ? { 'stripe-version': version } : {}),
      },
    });
  for (const version of ['2022-11-15', '2024-09-30.acacia', '2025-03-31.basil', CURRENT_VERSION]) {
    const answer = await send(version);
    t.equal(answer.status, 200);
    t.equal(answer.headers.get('stripe-version'), version, `${version} is answered in ${version}`);
  }
  const beta = await send('2024-06-20; embedded_connect_beta=v2');
  t.equal(beta.headers.get('stripe-version'), '2024-06-20', 'beta flags set aside');
  t.equal((await send()).headers.get('stripe-version'), CURRENT_VERSION, 'no header: the account default');

  // A real date that was no release (pay-rails sent 2022-08-02 for 2022-08-01), a release without its
  // name, a name on the wrong date: Stripe's own refusal.
  for (const version of ['2022-08-02', '2024-09-30', '2024-09-30.basil', '2025-03-31.acacia']) {
    const answer = await send(version);
    t.equal(answer.status, 400, `${version} is refused`);
    const body = (await answer.json()) as { error: { type: string; message: string } };
    t.equal(body.error.type, 'invalid_request_error');
    t.equal(body.error.message, `Invalid Stripe API version: ${version}`);
    t.ok(checkResponse('stripe', { method: 'GET', path: '/v1/customers', status: 400, body }).valid);
  }
  // An idempotent replay is the first answer as it was, in the version it was rendered in.
  const once = (version: string) =>
    freshConnectionFetch(`${env.STRIPE_API_BASE}/v1/customers`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${env.STRIPE_SECRET_KEY}`,
        'content-type': 'application/x-www-form-urlencoded',
        'stripe-version': version,
        'idempotency-key': 'versions-1',
      },
      body: 'email=once%40example.com',
    });
  const first = await once('2022-11-15');
  const replay = await once(CURRENT_VERSION);
  t.equal(replay.headers.get('idempotent-replayed'), 'true');
  t.equal(replay.headers.get('stripe-version'), '2022-11-15', 'a replay keeps its first version');
  t.same(await replay.json(), await first.json());

  t.throws(
    () => validateStripeSeed({ api_version: '2022-08-02' }),
    /api_version" must be a Stripe API version from 2020-08-27 to 2026-10-28\.endive/,
    'a seed names a served version',
  );
  const summary = summarizeStripe({ state: { api_version: '2022-11-15', objects: {} } });
  t.same(
    summary.tables.find((table) => table.title === 'API versions')?.rows,
    [['Account default', '2022-11-15']],
    "the summary shows the account's version",
  );

  const older = await send('2019-12-03');
  t.equal(older.status, 400, 'a release older than 2020-08-27 is not served');
  t.match(
    ((await older.json()) as { error: { message: string } }).error.message,
    /2019-12-03 is older than the oldest version this Twinbox twin serves \(2020-08-27/,
  );
});

t.test('the account default (seed api_version), and webhooks in each endpoint version', async (t) => {
  const seedHook = await webhookReceiver(t);
  const { env } = await stripeTwin(t, {
    stripe: {
      api_version: '2022-11-15',
      webhook: { url: seedHook.url, events: ['customer.subscription.created'] },
      products: [
        {
          id: 'prod_pro',
          name: 'Pro',
          prices: [{ id: 'price_pro', unit_amount: 2000, currency: 'usd', recurring: { interval: 'month' } }],
        },
      ],
    },
  });
  // No Stripe-Version (as stripe-python 5 sends, and any client that pins nothing): the account's
  // 2022-11-15, checked against that description. stripe-node always sends the version it pins.
  const checkedFetch = stripeVersionFetch('2022-11-15');
  const unpinned = async (method: string, path: string, form: Record<string, string> = {}) => {
    const answer = await checkedFetch(`${env.STRIPE_API_BASE}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${env.STRIPE_SECRET_KEY}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      ...(method === 'GET' ? {} : { body: new URLSearchParams(form).toString() }),
    });
    t.equal(answer.headers.get('stripe-version'), '2022-11-15', `${method} ${path}: the account's version`);
    return { status: answer.status, body: (await answer.json()) as Record<string, unknown> };
  };
  const oldHook = await webhookReceiver(t);
  const newHook = await webhookReceiver(t);
  const oldEndpoint = await unpinned('POST', '/v1/webhook_endpoints', {
    url: oldHook.url,
    'enabled_events[]': 'customer.subscription.created',
  });
  t.equal(oldEndpoint.body.api_version, '2022-11-15', 'an endpoint is pinned to the version it was made in');
  const newEndpoint = await unpinned('POST', '/v1/webhook_endpoints', {
    url: newHook.url,
    'enabled_events[]': 'customer.subscription.created',
    api_version: CURRENT_VERSION,
  });
  t.equal(newEndpoint.body.api_version, CURRENT_VERSION, 'or to the one it names');
  const refused = await unpinned('POST', '/v1/webhook_endpoints', {
    url: newHook.url,
    'enabled_events[]': '*',
    api_version: '2022-08-02',
  });
  t.equal(refused.status, 400, 'an endpoint version Stripe never released');
  t.match(refused.body.error, { param: 'api_version', message: 'Invalid api_version: 2022-08-02' });

  const customer = await unpinned('POST', '/v1/customers', { email: 'ada@example.com' });
  const pm = await unpinned('POST', '/v1/payment_methods/pm_card_visa/attach', {
    customer: String(customer.body.id),
  });
  const sub = await unpinned('POST', '/v1/subscriptions', {
    customer: String(customer.body.id),
    'items[0][price]': 'price_pro',
    default_payment_method: String(pm.body.id),
    'expand[]': 'latest_invoice.payment_intent',
  });
  t.type(sub.body.current_period_end, 'number', 'the unpinned request got the 2022-11-15 shape');
  t.match(sub.body.latest_invoice, { payment_intent: { object: 'payment_intent', status: 'succeeded' } });

  const cases = [
    { hook: oldHook, secret: String(oldEndpoint.body.secret), version: '2022-11-15' },
    { hook: newHook, secret: String(newEndpoint.body.secret), version: CURRENT_VERSION },
    { hook: seedHook, secret: env.STRIPE_WEBHOOK_SECRET!, version: '2022-11-15' },
  ];
  for (const { hook, secret, version } of cases) {
    const delivery = await hook.next(20_000);
    const event = new Stripe('sk_unused').webhooks.constructEvent(
      delivery.body,
      String(delivery.headers['stripe-signature']),
      secret,
    ) as unknown as { api_version: string; type: string; data: { object: Record<string, unknown> } };
    t.equal(event.type, 'customer.subscription.created');
    t.equal(event.api_version, version, `delivered in ${version}`);
    const object = event.data.object;
    if (version === CURRENT_VERSION) {
      t.notOk('current_period_end' in object, 'endive: no period on the subscription');
      const items = object.items as { data: Array<Record<string, unknown>> };
      t.type(items.data[0]!.current_period_end, 'number', 'endive: the period is on the items');
    } else t.type(object.current_period_end, 'number', `${version}: the period is on the subscription`);
    // The event as delivered, checked against its version's description of an event and a subscription.
    const description = descriptionOf(version as StripeApiVersion);
    const asEvent = checkResponse(description, {
      method: 'GET',
      path: '/v1/events/evt_x',
      status: 200,
      body: event,
    });
    t.same(asEvent.errors, [], `the ${version} event matches ${description}`);
    const asSubscription = checkResponse(description, {
      method: 'GET',
      path: '/v1/subscriptions/sub_x',
      status: 200,
      body: object,
    });
    t.same(asSubscription.errors, [], `its subscription matches ${description}`);
  }

  // Read back in endive, an event keeps the version it happened in (the account's, 2022-11-15).
  const endive = clientIn(env, CURRENT_VERSION);
  const events = await endive.events.list({ type: 'customer.subscription.created' });
  t.equal(events.data.length, 1);
  t.equal(events.data[0]!.api_version, '2022-11-15');
  t.type(
    (events.data[0]!.data.object as unknown as { current_period_end: number }).current_period_end,
    'number',
    "its data.object is in the event's version",
  );
});
