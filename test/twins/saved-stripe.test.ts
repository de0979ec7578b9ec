import t from 'tap';
import { cp, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type Stripe from 'stripe';
import { TwinAdminClient } from '../../server/twins/kit/admin-client.ts';
import { stripeClient, tempHost, webhookReceiver } from './helpers.ts';

/**
 * A Stripe state file written by the twin of d4a1e50, before it was split into store, params and
 * resources (fixtures/saved-stripe-d4a1e50/README.md says what it holds). The saved shape did not change:
 * today's twin restores it, hands out the very same state, and serves every object in it.
 */
const FIXTURES = fileURLToPath(new URL('./fixtures/saved-stripe-d4a1e50/', import.meta.url));
const SANDBOX = 'stripe-d4a1e50';

interface SavedState {
  secret_key: string;
  state: { objects: Record<string, { data: { object: string }; hidden?: Record<string, unknown> }> };
}

async function stateOf(adminUrl: string): Promise<unknown> {
  const { text } = await new TwinAdminClient(adminUrl, 'admin').send('GET', '/state');
  return (JSON.parse(text) as { state: unknown }).state;
}

t.test('a Stripe state file of d4a1e50 restores, the same state, and serves what it holds', async (t) => {
  const file = JSON.parse(await readFile(join(FIXTURES, SANDBOX, 'stripe.json'), 'utf8')) as {
    state: SavedState;
  };
  // The Checkout Session was made with Stripe's 24-hour expiry, on 2026-11-26: it is moved to a day after
  // now, in the copy restored here, so that what the test sees does not depend on the day it runs (a
  // session past its expiry answers its page with 410, as Stripe's does).
  let sessions = 0;
  for (const object of Object.values(file.state.state.objects)) {
    if (object.data.object !== 'checkout.session') continue;
    (object.data as { expires_at?: number }).expires_at = Math.floor(Date.now() / 1000) + 86_400;
    sessions++;
  }
  t.equal(sessions, 1, 'the saved Checkout Session');
  const saved = file.state;
  const { host, dataDir } = await tempHost(t);
  await cp(join(FIXTURES, SANDBOX), join(dataDir, SANDBOX), { recursive: true });
  await writeFile(join(dataDir, SANDBOX, 'stripe.json'), JSON.stringify(file));
  await host.restore([SANDBOX]);
  const entry = host.get(SANDBOX)!.stripe!;
  t.equal(
    JSON.stringify(await stateOf(entry.admin_url)),
    JSON.stringify(saved),
    'the restored twin holds the saved state, key for key',
  );
  const env = entry.env_vars;
  t.equal(env.STRIPE_SECRET_KEY, saved.secret_key, 'the saved secret key');
  const stripe = stripeClient(env);

  const emails = (await stripe.customers.list()).data.map((c) => c.email).sort();
  t.same(emails, ['ada@example.com', 'dee@example.com', 'linus@example.com']);
  const again = await stripe.customers.create(
    { email: 'linus@example.com', name: 'Linus', metadata: { saved: 'before the move' } },
    { idempotencyKey: 'saved-key-1' },
  );
  const replayed = (again.lastResponse as unknown as Response).headers.get('idempotent-replayed');
  t.equal(replayed, 'true', 'a saved idempotency key replays');
  const linus = (await stripe.customers.list({ email: 'linus@example.com' })).data[0]!;
  t.equal(again.id, linus.id, 'the replay is the saved customer');
  t.equal(linus.metadata.saved, 'before the move');

  const [sub] = (await stripe.subscriptions.list({ customer: 'cus_ada' })).data;
  t.equal(sub?.status, 'active');
  t.equal(sub?.items.data[0]?.price.id, 'price_pro_monthly');

  const payments = await stripe.paymentIntents.list({ customer: 'cus_ada' });
  const refunded = payments.data.find((p) => p.amount === 2000)!;
  t.ok(refunded, 'the payment made through the API');
  const [refund] = (await stripe.refunds.list({ payment_intent: refunded.id })).data;
  t.equal(refund?.amount, 500);
  t.equal((await stripe.charges.retrieve(String(refunded.latest_charge))).amount_refunded, 500);

  const [session] = (await stripe.checkout.sessions.list({ status: 'open' })).data;
  const withItems = await stripe.checkout.sessions.retrieve(session!.id, { expand: ['line_items'] });
  t.equal(withItems.line_items?.data[0]?.quantity, 2, 'the session keeps its line items');
  t.equal(withItems.line_items?.data[0]?.price?.id, 'price_book');
  const page = await fetch(`${env.STRIPE_API_BASE}/c/pay/${session!.id}`);
  t.equal(page.status, 200, 'its hosted page opens');
  t.match(await page.text(), '$30.00');

  // The endpoint's signing secret is kept out of the object, in the saved state's hidden part.
  const [endpoint] = (await stripe.webhookEndpoints.list()).data;
  const secret = String(saved.state.objects[endpoint!.id]?.hidden?.secret);
  t.match(secret, /^whsec_/);
  const receiver = await webhookReceiver(t);
  await stripe.webhookEndpoints.update(endpoint!.id, { url: receiver.url });

  // Linus's finalized invoice is paid through the payment intent it was finalized with.
  const [open] = (await stripe.invoices.list({ customer: linus.id, status: 'open' })).data;
  t.equal(open?.amount_due, 1500);
  const expanded = await stripe.invoices.retrieve(open!.id, { expand: ['confirmation_secret'] });
  const clientSecret = expanded.confirmation_secret?.client_secret ?? '';
  const intentId = clientSecret.split('_secret_')[0]!;
  t.match(intentId, /^pi_/, 'the invoice still knows its payment intent');
  await stripe.paymentIntents.confirm(intentId, { payment_method: 'pm_card_visa' });
  t.equal((await stripe.invoices.retrieve(open!.id)).status, 'paid', 'and the intent knows its invoice');
  const delivery = await receiver.next(30_000);
  const event: Stripe.Event = stripe.webhooks.constructEvent(
    delivery.body,
    String(delivery.headers['stripe-signature']),
    secret,
  );
  t.equal(event.type, 'invoice.paid');
  t.equal((event.data.object as Stripe.Invoice).id, open!.id, 'signed with the saved endpoint secret');

  // Saved by today's twin, restored again: the same state once more.
  const before = JSON.stringify(await stateOf(entry.admin_url));
  await host.stop(SANDBOX);
  await host.restore([SANDBOX]);
  const next = host.get(SANDBOX)!.stripe!;
  t.equal(JSON.stringify(await stateOf(next.admin_url)), before, "saved and restored by today's twin");
  t.equal((await stripeClient(next.env_vars).invoices.retrieve(open!.id)).status, 'paid');
});
