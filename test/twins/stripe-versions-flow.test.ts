/**
 * One billing flow in every Stripe API version the twin serves (issue 23), each answer checked against
 * the description of the version it was asked in (stripe-versions.ts): the shapes that changed between
 * versions (subscription periods, invoice payment links, payment intents' charges, Checkout's ui_mode,
 * ...) are asserted where they differ.
 */
import t from 'tap';
import Stripe from 'stripe';
import { type StripeApiVersion } from '../../server/twins/vendors/stripe/versions/catalog.ts';
import { stripeTwin, clientIn } from './stripe-version-clients.ts';
import { checked } from './vendor-schema.ts';
import { descriptionOf, describedVersions } from './stripe-versions.ts';

const before = (version: string, gate: string) => version < gate;

// Every version there is a description of, and two monthly releases checked against their line's last one
// (stripe-versions.test.ts sends the others).
const VERSIONS = [...describedVersions(), '2024-10-28.acacia', '2025-05-28.basil'] as StripeApiVersion[];

t.test('every served version: a billing flow, each answer valid in the version asked', async (t) => {
  const { env } = await stripeTwin(t);
  const admin = clientIn(env);
  const product = await admin.products.create({ name: 'Pro' });
  const monthly = await admin.prices.create({
    product: product.id,
    unit_amount: 2000,
    currency: 'usd',
    recurring: { interval: 'month' },
  });
  const once = await admin.prices.create({ product: product.id, unit_amount: 500, currency: 'usd' });
  let flows = 0;
  for (const version of VERSIONS) {
    const stripe = clientIn(env, version);
    const where = `${version} (checked against ${descriptionOf(version)})`;
    const customer = await stripe.customers.create({ email: `${version}@example.com` });
    const pm = await stripe.paymentMethods.attach('pm_card_visa', { customer: customer.id });
    await stripe.customers.update(customer.id, { invoice_settings: { default_payment_method: pm.id } });
    t.equal((await stripe.products.retrieve(product.id)).name, 'Pro');
    await stripe.prices.retrieve(monthly.id);

    const basil = !before(version, '2025-03-31.basil');
    const sub = (await stripe.subscriptions.create({
      customer: customer.id,
      items: [{ price: monthly.id }],
      expand: basil ? ['latest_invoice'] : ['latest_invoice.payment_intent'],
    })) as unknown as Record<string, unknown> & { items: { data: Array<Record<string, unknown>> } };
    t.equal(sub.status, 'active', `${where}: the subscription is paid`);
    const invoice = sub.latest_invoice as Record<string, unknown>;
    const item = sub.items.data[0]!;
    if (basil) {
      t.type(item.current_period_end, 'number', `${where}: the period is on the items`);
      t.notOk('current_period_end' in sub, `${where}: and not on the subscription`);
      t.notOk('payment_intent' in invoice, `${where}: an invoice has no payment_intent`);
      const refused = await stripe.subscriptions
        .retrieve(String(sub.id), { expand: ['latest_invoice.payment_intent'] })
        .catch((e: unknown) => e);
      t.ok(refused instanceof Stripe.errors.StripeInvalidRequestError, `${where}: expanding it is refused`);
      t.match((refused as Error).message, /cannot be expanded/);
    } else {
      t.type(sub.current_period_end, 'number', `${where}: the period is on the subscription`);
      t.ok(
        (sub.current_period_end as number) > (sub.current_period_start as number),
        `${where}: a month long`,
      );
      t.notOk('current_period_end' in item, `${where}: and not on the items`);
      const intent = invoice.payment_intent as Record<string, unknown>;
      t.equal(intent.object, 'payment_intent', `${where}: latest_invoice.payment_intent expands`);
      t.equal(intent.status, 'succeeded');
      t.equal(invoice.paid, true);
      t.equal(invoice.subscription, sub.id);
    }
    const invoices = await stripe.invoices.list({ customer: customer.id });
    t.equal(invoices.data.length, 1);
    const lines = await stripe.invoices.listLineItems(String(invoice.id));
    t.equal(lines.data[0]!.amount, 2000);
    if (!basil) t.equal((lines.data[0] as unknown as { price: { id: string } }).price.id, monthly.id);
    await stripe.subscriptionItems.retrieve(String(item.id));
    await stripe.subscriptions.update(String(sub.id), { metadata: { v: version } });

    // `price` (every version's SDK sends it so until basil's `pricing[price]`; the twin reads both).
    const ii = await stripe.invoiceItems.create({ customer: customer.id, price: once.id } as never);
    t.equal(ii.amount, 500);
    await stripe.invoiceItems.list({ customer: customer.id });
    const draft = await stripe.invoices.create({
      customer: customer.id,
      pending_invoice_items_behavior: 'include',
    });
    const paid = await stripe.invoices.pay(draft.id);
    t.equal(paid.status, 'paid', `${where}: a one-off invoice is paid`);

    const pi = (await stripe.paymentIntents.create({
      amount: 1000,
      currency: 'usd',
      customer: customer.id,
      payment_method: 'pm_card_visa',
      confirm: true,
    })) as unknown as Record<string, unknown>;
    t.equal(pi.status, 'succeeded');
    t.equal(
      pi.capture_method,
      before(version, '2024-06-20') ? 'automatic' : 'automatic_async',
      `${where}: the default capture method`,
    );
    let chargeId: string;
    if (before(version, '2022-11-15')) {
      const charges = pi.charges as { data: Array<{ id: string }> };
      t.equal(charges.data.length, 1, `${where}: the intent lists its charges`);
      t.notOk('latest_charge' in pi);
      chargeId = charges.data[0]!.id;
    } else {
      t.notOk('charges' in pi, `${where}: the intent names its latest charge only`);
      chargeId = String(pi.latest_charge);
    }
    t.equal((await stripe.charges.retrieve(chargeId)).amount, 1000);
    await stripe.charges.list({ customer: customer.id });
    await stripe.refunds.create({ payment_intent: String(pi.id), amount: 100 });

    const session = (await stripe.checkout.sessions.create({
      mode: 'payment',
      line_items: [{ price: once.id, quantity: 1 }],
      success_url: 'https://example.com/ok',
      cancel_url: 'https://example.com/back',
    })) as unknown as Record<string, unknown>;
    t.equal(session.ui_mode, before(version, '2026-03-25.dahlia') ? 'hosted' : 'hosted_page');
    await stripe.checkout.sessions.listLineItems(String(session.id));
    const noCancel = await stripe.checkout.sessions
      .create({
        mode: 'payment',
        line_items: [{ price: once.id, quantity: 1 }],
        success_url: 'https://e.com',
      })
      .then(() => undefined)
      .catch((e: { message?: string }) => e.message);
    t.equal(
      noCancel,
      before(version, '2022-11-15') ? 'Missing required param: cancel_url.' : undefined,
      `${where}: cancel_url is required before 2022-11-15 only`,
    );
    await stripe.events.list({ limit: 5 });
    await stripe.customers.list({ limit: 2 });
    flows++;
  }
  t.equal(flows, VERSIONS.length, 'every version ran the whole flow');
  const mine = checked.filter((c) => c.twin.startsWith('stripe'));
  t.ok(mine.length > VERSIONS.length * 20, `${mine.length} answers checked`);
  t.same(
    mine.filter((c) => !c.valid),
    [],
    'every answer matched its version',
  );
});
