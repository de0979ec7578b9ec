import t from 'tap';
import Stripe from 'stripe';
import { statusOf, stripeClient, tempHost, webhookReceiver, type Teardown } from './helpers.ts';
import { checked } from './vendor-schema.ts';

async function stripeTwin(t: Teardown, seeds: Record<string, unknown> = {}) {
  const { host } = await tempHost(t);
  const entry = (await host.start('sb', ['stripe'], { adminToken: 'admin', seeds })).stripe!;
  const env = entry.env_vars;
  return { host, entry, env, stripe: stripeClient(env) };
}

const PRODUCTS = {
  stripe: {
    products: [
      {
        id: 'prod_pro',
        name: 'Pro',
        prices: [
          { id: 'price_pro_monthly', unit_amount: 2000, currency: 'usd', recurring: { interval: 'month' } },
        ],
      },
      { id: 'prod_book', name: 'Book', prices: [{ id: 'price_book', unit_amount: 1500, currency: 'usd' }] },
    ],
  },
};

/** A customer whose default payment method is the given test card. */
async function customerWithCard(stripe: Stripe, email: string, card = 'pm_card_visa') {
  const customer = await stripe.customers.create({ email, name: email.split('@')[0] });
  const pm = await stripe.paymentMethods.attach(card, { customer: customer.id });
  await stripe.customers.update(customer.id, { invoice_settings: { default_payment_method: pm.id } });
  return { customer, pm };
}

t.test('subscriptions: create (paid at once), retrieve, list, update, cancel', async (t) => {
  const { stripe } = await stripeTwin(t, PRODUCTS);
  const { customer } = await customerWithCard(stripe, 'ada@example.com');
  const sub = await stripe.subscriptions.create({
    customer: customer.id,
    items: [{ price: 'price_pro_monthly' }],
    metadata: { plan: 'pro' },
    expand: ['latest_invoice'],
  });
  t.match(sub.id, /^sub_/);
  t.equal(sub.status, 'active');
  t.equal(sub.items.data.length, 1);
  const item = sub.items.data[0]!;
  t.equal(item.price.id, 'price_pro_monthly');
  t.equal(item.quantity, 1);
  t.ok(item.current_period_end > item.current_period_start, 'the item has a billing period');
  const invoice = sub.latest_invoice as Stripe.Invoice;
  t.equal(invoice.status, 'paid', 'the first invoice is paid with the default card');
  t.equal(invoice.amount_paid, 2000);
  t.equal(invoice.billing_reason, 'subscription_create');
  t.equal(invoice.parent?.subscription_details?.subscription, sub.id);
  t.match(invoice.number, /^[A-F0-9]{8}-0001$/);
  t.equal(invoice.lines.data[0]?.description, '1 × Pro (at $20.00 / month)');

  t.equal((await stripe.subscriptions.retrieve(sub.id)).metadata.plan, 'pro');
  t.same(
    (await stripe.subscriptions.list({ customer: customer.id })).data.map((s) => s.id),
    [sub.id],
  );
  t.equal((await stripe.subscriptionItems.list({ subscription: sub.id })).data[0]?.id, item.id);
  const payments = await stripe.paymentIntents.list({ customer: customer.id });
  t.equal(payments.data[0]?.amount, 2000, 'the invoice was charged through a payment intent');

  const updated = await stripe.subscriptions.update(sub.id, {
    items: [{ id: item.id, quantity: 3 }],
    cancel_at_period_end: true,
  });
  t.equal(updated.items.data[0]?.quantity, 3);
  t.equal(updated.cancel_at_period_end, true);
  t.equal(updated.cancel_at, item.current_period_end);

  const canceled = await stripe.subscriptions.cancel(sub.id, {
    cancellation_details: { comment: 'too expensive' },
  });
  t.equal(canceled.status, 'canceled');
  t.ok(canceled.ended_at);
  t.equal(canceled.cancellation_details?.comment, 'too expensive');
  t.equal(
    (await stripe.subscriptions.list({ customer: customer.id })).data.length,
    0,
    'canceled: not listed by default',
  );
  t.equal((await stripe.subscriptions.list({ status: 'canceled' })).data.length, 1);
  t.equal(await statusOf(stripe.subscriptions.update(sub.id, { description: 'x' })), 400);
  t.equal(await statusOf(stripe.subscriptions.cancel(sub.id)), 400);
});

t.test('subscriptions: trials, price_data, missing card, declines, bad input', async (t) => {
  const { stripe } = await stripeTwin(t, PRODUCTS);
  const { customer } = await customerWithCard(stripe, 'trial@example.com');
  const trial = await stripe.subscriptions.create({
    customer: customer.id,
    items: [{ price: 'price_pro_monthly' }],
    trial_period_days: 14,
  });
  t.equal(trial.status, 'trialing');
  t.ok(trial.trial_end! - trial.trial_start! === 14 * 86400, 'a 14-day trial');
  const trialInvoice = await stripe.invoices.retrieve(trial.latest_invoice as string);
  t.equal(trialInvoice.amount_due, 0);
  t.equal(trialInvoice.status, 'paid', 'a trial starts with a $0 paid invoice');
  t.equal(trialInvoice.lines.data[0]?.description, 'Trial period for Pro');
  const ended = await stripe.subscriptions.update(trial.id, { trial_end: 'now' });
  t.equal(ended.status, 'active');

  const inline = await stripe.subscriptions.create({
    customer: customer.id,
    items: [
      {
        price_data: {
          currency: 'usd',
          product: 'prod_pro',
          unit_amount: 999,
          recurring: { interval: 'year' },
        },
        quantity: 2,
      },
    ],
  });
  t.equal(inline.items.data[0]?.price.unit_amount, 999);
  t.equal(inline.items.data[0]?.plan.interval, 'year');
  t.equal((await stripe.invoices.retrieve(inline.latest_invoice as string)).amount_paid, 1998);

  const bare = await stripe.customers.create({ email: 'nocard@example.com' });
  const incomplete = await stripe.subscriptions.create({
    customer: bare.id,
    items: [{ price: 'price_pro_monthly' }],
  });
  t.equal(incomplete.status, 'incomplete', 'no payment method: incomplete with an open invoice');
  const open = await stripe.invoices.retrieve(incomplete.latest_invoice as string);
  t.equal(open.status, 'open');
  const paid = await stripe.invoices.pay(open.id, { payment_method: 'pm_card_visa' });
  t.equal(paid.status, 'paid');
  t.equal(
    (await stripe.subscriptions.retrieve(incomplete.id)).status,
    'active',
    'paying the invoice activates it',
  );

  const { customer: declining } = await customerWithCard(
    stripe,
    'declines@example.com',
    'pm_card_chargeDeclined',
  );
  const refused = await stripe.subscriptions
    .create({
      customer: declining.id,
      items: [{ price: 'price_pro_monthly' }],
      payment_behavior: 'error_if_incomplete',
    })
    .catch((e: unknown) => e);
  t.ok(refused instanceof Stripe.errors.StripeCardError, 'error_if_incomplete: the decline is the answer');
  t.equal((refused as Stripe.errors.StripeCardError).decline_code, 'generic_decline');
  t.equal(
    (await stripe.subscriptions.list({ customer: declining.id })).data.length,
    0,
    'and nothing was created',
  );
  const allowed = await stripe.subscriptions.create({
    customer: declining.id,
    items: [{ price: 'price_pro_monthly' }],
  });
  t.equal(allowed.status, 'incomplete', 'allow_incomplete: the subscription waits for payment');
  const failed = await stripe.invoices.retrieve(allowed.latest_invoice as string);
  t.equal(failed.attempt_count, 1);
  t.equal(failed.status, 'open');

  t.equal(
    await statusOf(stripe.subscriptions.create({ customer: customer.id, items: [{ price: 'price_book' }] })),
    400,
    'a one-time price',
  );
  t.equal(await statusOf(stripe.subscriptions.create({ customer: customer.id, items: [] })), 400, 'no items');
  t.equal(
    await statusOf(
      stripe.subscriptions.create({ customer: 'cus_missing', items: [{ price: 'price_pro_monthly' }] }),
    ),
    400,
  );
  t.equal(await statusOf(stripe.subscriptions.retrieve('sub_missing')), 404);
});

t.test(
  "subscriptions: default_incomplete, paid by confirming the invoice's confirmation_secret",
  async (t) => {
    const { stripe } = await stripeTwin(t, PRODUCTS);
    const customer = await stripe.customers.create({ email: 'elements@example.com' });
    const sub = await stripe.subscriptions.create({
      customer: customer.id,
      items: [{ price: 'price_pro_monthly' }],
      payment_behavior: 'default_incomplete',
      expand: ['latest_invoice.confirmation_secret'],
    });
    t.equal(sub.status, 'incomplete');
    const invoice = sub.latest_invoice as Stripe.Invoice;
    t.equal(invoice.status, 'open');
    t.equal(invoice.confirmation_secret?.type, 'payment_intent');
    const intentId = invoice.confirmation_secret!.client_secret.split('_secret_')[0]!;
    const intent = await stripe.paymentIntents.retrieve(intentId);
    t.equal(intent.amount, 2000, 'the intent is for the amount due');
    await stripe.paymentIntents.confirm(intentId, { payment_method: 'pm_card_visa' });
    t.equal((await stripe.invoices.retrieve(invoice.id)).status, 'paid', 'confirming it pays the invoice');
    t.equal((await stripe.subscriptions.retrieve(sub.id)).status, 'active', 'and activates the subscription');
    const types = (await stripe.events.list({ limit: 100 })).data.map((e) => e.type).reverse();
    t.ok(types.indexOf('customer.subscription.created') < types.indexOf('invoice.paid'));
    t.ok(types.includes('customer.subscription.updated'));
    const subscriptionEvents = await stripe.events.list({ type: 'customer.subscription.*', limit: 100 });
    t.ok(subscriptionEvents.data.length >= 2);
    t.ok(
      subscriptionEvents.data.every((e) => e.type.startsWith('customer.subscription.')),
      'type takes a * wildcard',
    );
    const two = await stripe.events.list({ types: ['invoice.paid', 'invoice.finalized'], limit: 100 });
    t.same([...new Set(two.data.map((e) => e.type))].sort(), ['invoice.finalized', 'invoice.paid']);

    const { customer: paying } = await customerWithCard(stripe, 'events@example.com');
    await stripe.subscriptions.create({ customer: paying.id, items: [{ price: 'price_pro_monthly' }] });
    const created = await stripe.events.list({ type: 'customer.subscription.created', limit: 1 });
    t.equal(
      (created.data[0]!.data.object as Stripe.Subscription).status,
      'active',
      'paid at creation: announced as active',
    );
  },
);

t.test('invoices and invoice items: draft, finalize, pay, void, lines, delete', async (t) => {
  const { stripe } = await stripeTwin(t, PRODUCTS);
  const { customer } = await customerWithCard(stripe, 'inv@example.com');
  const draft = await stripe.invoices.create({
    customer: customer.id,
    description: 'Consulting',
    metadata: { po: '42' },
  });
  t.equal(draft.status, 'draft');
  t.equal(draft.total, 0);
  const hours = await stripe.invoiceItems.create({
    customer: customer.id,
    invoice: draft.id,
    amount: 12000,
    currency: 'usd',
    description: 'Hours',
  });
  t.match(hours.id, /^ii_/);
  const book = await stripe.invoiceItems.create({
    customer: customer.id,
    invoice: draft.id,
    pricing: { price: 'price_book' },
    quantity: 2,
  });
  t.equal(book.amount, 3000);
  t.equal(book.description, 'Book');
  const pending = await stripe.invoiceItems.create({ customer: customer.id, amount: 500, currency: 'usd' });
  t.equal(pending.invoice, null);
  t.same(
    (await stripe.invoiceItems.list({ pending: true, customer: customer.id })).data.map((i) => i.id),
    [pending.id],
  );
  const withItems = await stripe.invoices.retrieve(draft.id);
  t.equal(withItems.total, 15000);
  t.equal(withItems.lines.data.length, 2);
  t.equal((await stripe.invoices.listLineItems(draft.id, { limit: 1 })).has_more, true);
  await stripe.invoiceItems.del(hours.id);
  t.equal(
    (await stripe.invoices.retrieve(draft.id)).total,
    3000,
    'deleting an item takes its line off the draft',
  );
  t.equal((await stripe.invoices.update(draft.id, { metadata: { po: '43' } })).metadata?.po, '43');

  const finalized = await stripe.invoices.finalizeInvoice(draft.id);
  t.equal(finalized.status, 'open');
  t.ok(finalized.number);
  t.ok(finalized.status_transitions.finalized_at);
  t.equal(await statusOf(stripe.invoices.finalizeInvoice(draft.id)), 400, 'finalized once');
  t.equal(await statusOf(stripe.invoiceItems.del(book.id)), 400, 'items of a finalized invoice stay');
  const paid = await stripe.invoices.pay(draft.id);
  t.equal(paid.status, 'paid');
  t.equal(paid.amount_paid, 3000);
  t.equal(paid.amount_remaining, 0);
  t.equal(await statusOf(stripe.invoices.pay(draft.id)), 400, 'paid once');
  t.equal(await statusOf(stripe.invoices.voidInvoice(draft.id)), 400, 'a paid invoice cannot be voided');

  const second = await stripe.invoices.create({
    customer: customer.id,
    pending_invoice_items_behavior: 'include',
    collection_method: 'send_invoice',
    days_until_due: 30,
  });
  t.equal(second.total, 500, 'pending items are pulled in when asked');
  const sent = await stripe.invoices.finalizeInvoice(second.id);
  t.ok(sent.due_date! >= sent.created + 30 * 86400 - 5, 'due in 30 days');
  const voided = await stripe.invoices.voidInvoice(second.id);
  t.equal(voided.status, 'void');
  t.same(
    (await stripe.invoices.list({ customer: customer.id, status: 'void' })).data.map((i) => i.id),
    [second.id],
  );

  const declining = await customerWithCard(
    stripe,
    'inv-decline@example.com',
    'pm_card_chargeDeclinedInsufficientFunds',
  );
  const unpaid = await stripe.invoices.create({ customer: declining.customer.id });
  await stripe.invoiceItems.create({
    customer: declining.customer.id,
    invoice: unpaid.id,
    amount: 700,
    currency: 'usd',
  });
  const declined = await stripe.invoices.pay(unpaid.id).catch((e: unknown) => e);
  t.ok(declined instanceof Stripe.errors.StripeCardError);
  t.equal((declined as Stripe.errors.StripeCardError).decline_code, 'insufficient_funds');
  const after = await stripe.invoices.retrieve(unpaid.id);
  t.equal(after.status, 'open', 'a declined payment leaves the invoice open');
  t.equal(after.attempt_count, 1);
  t.equal(
    await statusOf(stripe.invoices.create({ customer: customer.id, collection_method: 'send_invoice' })),
    400,
  );
  t.equal(await statusOf(stripe.invoiceItems.create({ customer: customer.id, currency: 'usd' })), 400);
});

t.test('refunds: full, partial, list, update; charges carry billing_details and disputed', async (t) => {
  const { stripe } = await stripeTwin(t);
  const pm = await stripe.paymentMethods.create({
    type: 'card',
    card: { token: 'tok_visa' },
    billing_details: { name: 'Ada Lovelace', email: 'ada@example.com' },
  });
  const pi = await stripe.paymentIntents.create({
    amount: 5000,
    currency: 'usd',
    payment_method: pm.id,
    confirm: true,
  });
  const charge = await stripe.charges.retrieve(pi.latest_charge as string);
  t.equal(charge.billing_details.name, 'Ada Lovelace');
  t.equal(charge.billing_details.email, 'ada@example.com');
  t.equal(charge.disputed, false);
  t.equal(charge.payment_method_details?.card?.last4, '4242');

  const partial = await stripe.refunds.create({
    payment_intent: pi.id,
    amount: 1500,
    reason: 'requested_by_customer',
  });
  t.match(partial.id, /^re_/);
  t.equal(partial.status, 'succeeded');
  t.equal(partial.charge, charge.id);
  let after = await stripe.charges.retrieve(charge.id);
  t.equal(after.amount_refunded, 1500);
  t.equal(after.refunded, false);
  const tooMuch = await stripe.refunds.create({ charge: charge.id, amount: 4000 }).catch((e: unknown) => e);
  t.ok(tooMuch instanceof Stripe.errors.StripeInvalidRequestError);
  t.equal((tooMuch as Stripe.errors.StripeInvalidRequestError).code, 'amount_too_large');
  const rest = await stripe.refunds.create({ charge: charge.id });
  t.equal(rest.amount, 3500, 'the rest of the charge by default');
  after = await stripe.charges.retrieve(charge.id);
  t.equal(after.refunded, true);
  const again = await stripe.refunds.create({ charge: charge.id }).catch((e: unknown) => e);
  t.equal((again as Stripe.errors.StripeInvalidRequestError).code, 'charge_already_refunded');
  t.equal((await stripe.refunds.retrieve(partial.id)).amount, 1500);
  t.equal((await stripe.refunds.update(partial.id, { metadata: { ticket: 'T-1' } })).metadata?.ticket, 'T-1');
  t.same(
    (await stripe.refunds.list({ payment_intent: pi.id })).data.map((r) => r.id),
    [rest.id, partial.id],
  );
  const unpaid = await stripe.paymentIntents.create({ amount: 100, currency: 'usd' });
  t.equal(await statusOf(stripe.refunds.create({ payment_intent: unpaid.id })), 400);
  t.equal(await statusOf(stripe.refunds.create({})), 400);
  t.equal(await statusOf(stripe.refunds.retrieve('re_missing')), 404);
});

t.test('customers.search: exact, substring, metadata, AND/OR, negation, pages, bad queries', async (t) => {
  const { stripe } = await stripeTwin(t);
  const ada = await stripe.customers.create({
    email: 'ada@example.com',
    name: 'Ada Lovelace',
    metadata: { plan: 'pro' },
  });
  const grace = await stripe.customers.create({
    email: 'grace@navy.mil',
    name: 'Grace Hopper',
    metadata: { plan: 'free' },
  });
  const alan = await stripe.customers.create({
    email: 'alan@example.com',
    name: 'Alan Turing',
    metadata: { plan: 'pro' },
  });
  const ids = async (query: string) =>
    (await stripe.customers.search({ query })).data.map((c) => c.id).sort();
  t.same(await ids("email:'ada@example.com'"), [ada.id]);
  t.same(await ids("email:'ADA@example.com'"), [ada.id], 'exact match ignores case');
  t.same(await ids("name~'hop'"), [grace.id]);
  t.same(await ids("metadata['plan']:'pro'"), [ada.id, alan.id].sort());
  t.same(await ids('metadata["plan"]:"pro" AND name~"tur"'), [alan.id]);
  t.same(await ids("email:'ada@example.com' OR email:'grace@navy.mil'"), [ada.id, grace.id].sort());
  t.same(await ids("metadata['plan']:'pro' -name~'ada'"), [alan.id], 'a space is AND; - negates');
  t.same(await ids(`created>0 AND email~'example.com'`), [ada.id, alan.id].sort());
  t.same(await ids("email:'nobody@example.com'"), []);

  const page1 = await stripe.customers.search({ query: "email~'example'", limit: 1 });
  t.equal(page1.has_more, true);
  t.ok(page1.next_page);
  const page2 = await stripe.customers.search({ query: "email~'example'", limit: 1, page: page1.next_page! });
  t.equal(page2.has_more, false);
  t.not(page2.data[0]?.id, page1.data[0]?.id);
  const all = await stripe.customers
    .search({ query: "email~'example'", limit: 1 })
    .autoPagingToArray({ limit: 10 });
  t.equal(all.length, 2, 'auto-pagination follows next_page');

  for (const bad of [
    'email:ada@example.com',
    "name~'ab'",
    "email:'a' AND name:'b' OR name:'c'",
    "bogus:'x'",
    "email:'open",
  ]) {
    const error = await stripe.customers.search({ query: bad }).catch((e: unknown) => e);
    t.ok(error instanceof Stripe.errors.StripeInvalidRequestError, `refused: ${bad}`);
    t.equal((error as Stripe.errors.StripeInvalidRequestError).param, 'query');
  }
  t.equal((await stripe.customers.retrieve(ada.id)).id, ada.id, 'search is not read as a customer id');
});

t.test('webhook endpoints: CRUD, and events signed with the endpoint secret', async (t) => {
  const receiver = await webhookReceiver(t);
  const { stripe } = await stripeTwin(t);
  const endpoint = await stripe.webhookEndpoints.create({
    url: receiver.url,
    enabled_events: ['customer.created', 'invoice.paid'],
    description: 'app',
  });
  t.match(endpoint.id, /^we_/);
  t.match(endpoint.secret, /^whsec_/);
  t.equal(endpoint.status, 'enabled');
  const fetched = await stripe.webhookEndpoints.retrieve(endpoint.id);
  t.equal(fetched.secret, undefined, 'the secret is shown once, at creation');
  t.same(fetched.enabled_events, ['customer.created', 'invoice.paid']);

  const customer = await stripe.customers.create({ email: 'hook@example.com' });
  const delivery = await receiver.next(15_000);
  const event = stripe.webhooks.constructEvent(
    delivery.body,
    delivery.headers['stripe-signature'] as string,
    endpoint.secret!,
  );
  t.equal(event.type, 'customer.created');
  t.equal((event.data.object as Stripe.Customer).id, customer.id);
  t.equal(event.api_version, '2026-10-28.endive');

  const disabled = await stripe.webhookEndpoints.update(endpoint.id, {
    disabled: true,
    enabled_events: ['*'],
  });
  t.equal(disabled.status, 'disabled');
  t.same(disabled.enabled_events, ['*']);
  t.equal((await stripe.webhookEndpoints.list()).data.length, 1);
  const deleted = await stripe.webhookEndpoints.del(endpoint.id);
  t.equal(deleted.deleted, true);
  t.equal(await statusOf(stripe.webhookEndpoints.retrieve(endpoint.id)), 404);
  t.equal(await statusOf(stripe.webhookEndpoints.create({ url: 'ftp://x', enabled_events: ['*'] })), 400);
  t.equal(await statusOf(stripe.webhookEndpoints.create({ url: receiver.url, enabled_events: [] })), 400);
});

t.test('expand, and unknown or revoked keys fail the way Stripe fails them', async (t) => {
  const { stripe, env } = await stripeTwin(t, PRODUCTS);
  const { customer } = await customerWithCard(stripe, 'expand@example.com');
  const pi = await stripe.paymentIntents.create({
    amount: 700,
    currency: 'usd',
    customer: customer.id,
    payment_method: 'pm_card_visa',
    confirm: true,
    expand: ['latest_charge', 'customer'],
  });
  t.equal((pi.latest_charge as Stripe.Charge).object, 'charge');
  t.equal((pi.customer as Stripe.Customer).email, 'expand@example.com');
  const listed = await stripe.subscriptions.list({ expand: ['data.customer'] });
  t.equal(listed.data.length, 0);
  t.equal(
    await statusOf(stripe.paymentIntents.retrieve(pi.id, { expand: ['amount'] })),
    400,
    'not expandable',
  );

  for (const key of ['sk_test_unknown0000000000001234', `${env.STRIPE_SECRET_KEY!.slice(0, -2)}xx`]) {
    const error = await stripeClient(env, key)
      .customers.list()
      .catch((e: unknown) => e);
    t.ok(error instanceof Stripe.errors.StripeAuthenticationError);
    const e = error as Stripe.errors.StripeAuthenticationError;
    t.equal(e.statusCode, 401);
    t.equal(e.type, 'StripeAuthenticationError');
    t.equal(e.raw && (e.raw as { type?: string }).type, 'invalid_request_error');
    t.match(e.message, /^Invalid API Key provided: sk_test_\*+[A-Za-z0-9_-]{4}$/);
    t.notMatch(e.message, key.slice(8, -4), 'the key is masked');
  }
});

t.test('every Stripe response in these tests matched the vendored description', async (t) => {
  const stripeChecks = checked.filter((r) => r.twin === 'stripe');
  t.ok(stripeChecks.length > 100, `${stripeChecks.length} responses checked`);
  t.same(
    stripeChecks.filter((r) => !r.valid).map((r) => `${r.operation} ${r.status}: ${r.errors.join('; ')}`),
    [],
  );
});
