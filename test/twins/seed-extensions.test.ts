import t from 'tap';
import Stripe from 'stripe';
import { TwinAdminClient, TwinAdminError } from '../../server/twins/kit/admin-client.ts';
import { TwinInputError } from '../../server/twins/contract.ts';
import { stripeClient, tempHost, webhookReceiver, type Teardown } from './helpers.ts';
import { githubClient, slackClient } from './vendor-schema.ts';

/** The 400 a bad seed gets from the admin API, with its `detail`. */
async function seedError(admin: TwinAdminClient, doc: unknown): Promise<{ status: number; detail: string }> {
  const error = await admin.seed(doc).catch((e: unknown) => e);
  if (!(error instanceof TwinAdminError)) throw new Error('seed was accepted');
  return { status: error.status, detail: (error.body as { detail: string }).detail };
}

/** The TwinInputError host.start refuses a bad start seed with. */
async function startError(t: Teardown, twin: string, seed: unknown): Promise<TwinInputError> {
  const { host } = await tempHost(t);
  const error = await host
    .start('bad', [twin], { adminToken: 'admin', seeds: { [twin]: seed } })
    .catch((e) => e);
  if (!(error instanceof TwinInputError)) throw new Error(`start did not fail with TwinInputError: ${error}`);
  return error;
}

t.test('github seed: issues and pulls with labels, comments, review comments and diffs', async (t) => {
  const receiver = await webhookReceiver(t);
  const { host } = await tempHost(t);
  const seed = {
    users: [{ login: 'octocat' }, { login: 'hubot' }],
    webhook: { url: receiver.url, secret: 's' },
    repos: [
      {
        owner: 'octocat',
        name: 'shop',
        files: { 'src/a.js': 'a\n' },
        branches: { develop: { 'dev.txt': 'dev\n' } },
        issues: [
          {
            title: 'Bug',
            body: 'It breaks',
            labels: ['bug', 'p1'],
            comments: [{ body: 'me too', user: 'mona' }],
          },
          { title: 'Old', state: 'closed', labels: ['bug'] },
        ],
        pulls: [
          {
            title: 'Feature',
            head: 'feature',
            body: 'Adds b',
            files: { 'src/b.js': 'b\nb\n', 'src/a.js': 'a2\n' },
            comments: [{ body: 'LGTM' }],
            review_comments: [
              { path: 'src/b.js', line: 2, body: 'nit', user: 'hubot' },
              { path: 'src/a.js', body: 'whole file' },
            ],
          },
          { title: 'Into develop', head: 'topic', base: 'develop' },
          { title: 'Abandoned', head: 'old', state: 'closed' },
        ],
      },
    ],
  };
  const entry = (await host.start('sb', ['github'], { adminToken: 'admin', seeds: { github: seed } }))
    .github!;
  const octokit = githubClient({ auth: entry.env_vars.GITHUB_TOKEN, baseUrl: entry.env_vars.GITHUB_API_URL });
  const admin = new TwinAdminClient(entry.admin_url, 'admin');
  const repo = { owner: 'octocat', repo: 'shop' };

  const check = async (when: string) => {
    const issues = (await octokit.issues.listForRepo({ ...repo, state: 'all' })).data.filter(
      (i) => !i.pull_request,
    );
    t.same(
      issues.map((i) => [
        i.number,
        i.title,
        i.state,
        i.labels.map((l) => (typeof l === 'string' ? l : l.name)),
      ]),
      [
        [2, 'Old', 'closed', ['bug']],
        [1, 'Bug', 'open', ['bug', 'p1']],
      ],
      `${when}: issues, numbered in seed order, with states and labels`,
    );
    const comments = (await octokit.issues.listComments({ ...repo, issue_number: 1 })).data;
    t.same(
      comments.map((c) => [c.user?.login, c.body]),
      [['mona', 'me too']],
      `${when}: an unknown comment author becomes a user`,
    );

    const pulls = (await octokit.pulls.list({ ...repo, state: 'all' })).data;
    t.same(
      pulls
        .map((p) => [p.number, p.title, p.state, p.head.ref, p.base.ref])
        .sort((a, b) => Number(a[0]) - Number(b[0])),
      [
        [3, 'Feature', 'open', 'feature', 'main'],
        [4, 'Into develop', 'open', 'topic', 'develop'],
        [5, 'Abandoned', 'closed', 'old', 'main'],
      ],
      `${when}: pulls after the issues, with head, base and state`,
    );
    const feature = (await octokit.pulls.get({ ...repo, pull_number: 3 })).data;
    t.equal(feature.body, 'Adds b');
    t.equal(feature.changed_files, 2, `${when}: the pull request has the seeded diff`);
    t.equal(feature.additions, 3);
    const files = (await octokit.pulls.listFiles({ ...repo, pull_number: 3 })).data;
    t.same(
      files.map((f) => [f.filename, f.status]),
      [
        ['src/a.js', 'modified'],
        ['src/b.js', 'added'],
      ],
    );
    const onHead = await octokit.repos.getContent({ ...repo, path: 'src/b.js', ref: 'feature' });
    t.equal(Buffer.from((onHead.data as { content: string }).content, 'base64').toString(), 'b\nb\n');
    t.same(
      (await octokit.issues.listComments({ ...repo, issue_number: 3 })).data.map((c) => [
        c.user?.login,
        c.body,
      ]),
      [['octocat', 'LGTM']],
      `${when}: issue comments on the pull request, by the owner by default`,
    );
    t.same(
      (await octokit.pulls.listReviewComments({ ...repo, pull_number: 3 })).data.map((c) => [
        c.user?.login,
        c.path,
        c.line ?? null,
        c.body,
        c.commit_id,
      ]),
      [
        ['hubot', 'src/b.js', 2, 'nit', feature.head.sha],
        ['octocat', 'src/a.js', null, 'whole file', feature.head.sha],
      ],
      `${when}: review comments on the diff`,
    );
    t.same((await octokit.pulls.listFiles({ ...repo, pull_number: 4 })).data, [], 'no files: no diff');
    const topic = await octokit.repos.getBranch({ ...repo, branch: 'topic' });
    const main = await octokit.repos.getBranch({ ...repo, branch: 'main' });
    t.equal(
      topic.data.commit.sha,
      main.data.commit.sha,
      `${when}: a missing head is created from the default branch`,
    );
  };

  await check('after start');
  t.same(await admin.deliveries(), [], 'seeding sends no webhooks');

  await octokit.issues.create({ ...repo, title: 'Created later' });
  await admin.reset();
  await check('after reset');

  await admin.seed({ repos: [{ owner: 'octocat', name: 'shop', issues: [{ title: 'Seeded later' }] }] });
  const later = (await octokit.issues.listForRepo({ ...repo, state: 'all' })).data;
  t.equal(later[0]?.title, 'Seeded later', 'POST /seed adds issues to an existing repository');
  t.equal(later[0]?.number, 6);

  let bad = await seedError(admin, {
    repos: [{ owner: 'octocat', name: 'shop', pulls: [{ title: 'x', head: 'y', base: 'nope' }] }],
  });
  t.equal(bad.status, 400);
  t.match(bad.detail, 'github seed: "repos[0].pulls[0].base" branch "nope" does not exist');
  bad = await seedError(admin, {
    repos: [{ owner: 'octocat', name: 'shop', pulls: [{ title: 'x', base: 'main' }] }],
  });
  t.equal(bad.status, 400);
  t.match(bad.detail, 'github seed: "repos[0].pulls[0].head" is required');
  bad = await seedError(admin, {
    repos: [{ owner: 'octocat', name: 'shop', issues: [{ title: 'x', state: 'merged' }] }],
  });
  t.match(bad.detail, '"repos[0].issues[0].state" must be one of [open, closed]');

  const refused = await startError(t, 'github', {
    users: [{ login: 'octocat' }],
    repos: [
      {
        owner: 'octocat',
        name: 'a',
        pulls: [{ title: 'x', head: 'f', review_comments: [{ body: 'no path' }] }],
      },
    ],
  });
  t.equal(refused.status, 400);
  t.match(refused.message, 'github seed: "repos[0].pulls[0].review_comments[0].path" is required');
});

t.test('stripe seed: customers with a default payment method and payment intents', async (t) => {
  const { host } = await tempHost(t);
  const seed = {
    customers: [
      { id: 'cus_ok', email: 'ok@example.com', payment_method: 'pm_card_visa' },
      {
        id: 'cus_broke',
        email: 'broke@example.com',
        payment_method: '4000000000009995',
        payment_intents: [
          { amount: 1500, currency: 'usd' },
          { amount: 700, currency: 'eur', status: 'succeeded' },
        ],
      },
      { id: 'cus_nocard', email: 'nocard@example.com', payment_intents: [{ amount: 100, currency: 'usd' }] },
    ],
  };
  const entry = (await host.start('sb', ['stripe'], { adminToken: 'admin', seeds: { stripe: seed } }))
    .stripe!;
  const env = entry.env_vars;
  const stripe = stripeClient(env);
  const admin = new TwinAdminClient(entry.admin_url, 'admin');

  const check = async (when: string) => {
    const ok = (await stripe.customers.retrieve('cus_ok')) as Stripe.Customer;
    const okPm = ok.invoice_settings.default_payment_method as string;
    t.match(okPm, /^pm_/, `${when}: default payment method set`);
    const pm = await stripe.paymentMethods.retrieve(okPm);
    t.equal(pm.customer, 'cus_ok', 'attached to the customer');
    t.equal(pm.card?.last4, '4242');
    const paid = await stripe.paymentIntents.create({
      amount: 1000,
      currency: 'usd',
      customer: 'cus_ok',
      payment_method: okPm,
      confirm: true,
    });
    t.equal(paid.status, 'succeeded');

    const broke = (await stripe.customers.retrieve('cus_broke')) as Stripe.Customer;
    const brokePm = broke.invoice_settings.default_payment_method as string;
    t.equal((await stripe.paymentMethods.retrieve(brokePm)).card?.last4, '9995', 'a card number works too');
    const declined = await stripe.paymentIntents
      .create({
        amount: 1000,
        currency: 'usd',
        customer: 'cus_broke',
        payment_method: brokePm,
        confirm: true,
      })
      .catch((e: unknown) => e);
    t.ok(declined instanceof Stripe.errors.StripeCardError, `${when}: the customer's card declines`);
    t.equal((declined as Stripe.errors.StripeCardError).decline_code, 'insufficient_funds');

    const seeded = (await stripe.paymentIntents.list({ customer: 'cus_broke', limit: 100 })).data.filter(
      (p) => p.amount !== 1000,
    );
    t.same(
      seeded.map((p) => [p.amount, p.currency, p.status]),
      [
        [700, 'eur', 'succeeded'],
        [1500, 'usd', 'requires_payment_method'],
      ],
      `${when}: seeded payment intents`,
    );
    t.equal(
      seeded[1]?.last_payment_error?.decline_code,
      'insufficient_funds',
      'a declining card left its error',
    );
    const none = (await stripe.paymentIntents.list({ customer: 'cus_nocard' })).data;
    t.same(
      none.map((p) => [p.status, p.payment_method]),
      [['requires_payment_method', null]],
    );
  };

  t.same((await stripe.events.list()).data, [], 'seeding records no events');
  await check('after start');
  await admin.reset();
  await check('after reset');

  const bad = await seedError(admin, {
    customers: [{ email: 'a@example.com' }, { email: 'b@example.com', payment_method: 'pm_card_nonsense' }],
  });
  t.equal(bad.status, 400);
  t.match(bad.detail, 'stripe seed: "customers[1].payment_method" must be a test card number');
  const badAmount = await seedError(admin, {
    customers: [{ payment_intents: [{ amount: 0, currency: 'usd' }] }],
  });
  t.match(badAmount.detail, '"customers[0].payment_intents[0].amount" must be greater than or equal to 1');
  const refused = await startError(t, 'stripe', { customers: [{ payment_method: '1234' }] });
  t.equal(refused.status, 400);
  t.match(refused.message, '"customers[0].payment_method" must be');
});

t.test('slack seed: channel members and message history', async (t) => {
  const { host } = await tempHost(t);
  const seed = {
    users: [
      { name: 'ada', real_name: 'Ada Lovelace', email: 'ada@example.com' },
      { name: 'grace', real_name: 'Grace Hopper', email: 'grace@example.com' },
      { name: 'linus', real_name: 'Linus Torvalds', email: 'linus@example.com' },
    ],
    channels: [
      { name: 'general', topic: 'Company', messages: [{ text: 'hello' }, { user: 'grace', text: 'hi ada' }] },
      {
        name: 'support',
        is_private: true,
        members: ['grace', 'linus'],
        messages: [
          { user: 'linus', text: 'first' },
          { user: 'grace', text: 'second' },
          { user: 'linus', text: 'third' },
        ],
      },
    ],
  };
  const entry = (await host.start('sb', ['slack'], { adminToken: 'admin', seeds: { slack: seed } })).slack!;
  const client = slackClient(entry.env_vars.SLACK_BOT_TOKEN, { slackApiUrl: entry.env_vars.SLACK_API_URL });
  const admin = new TwinAdminClient(entry.admin_url, 'admin');
  // The Slack engine generates new user and channel ids when it re-seeds on reset: look them up each time.
  let ids = new Map<string, string>();
  const loadIds = async () => {
    ids = new Map(((await client.users.list({})).members ?? []).map((u) => [u.name!, u.id!]));
  };

  const channel = async (name: string) =>
    (await client.conversations.list({ types: 'public_channel,private_channel' })).channels!.find(
      (c) => c.name === name,
    )!;
  const history = async (id: string) =>
    ((await client.conversations.history({ channel: id })).messages ?? [])
      .map((m) => [m.user, m.text])
      .reverse();

  const check = async (when: string) => {
    await loadIds();
    const general = await channel('general');
    t.equal(general.topic?.value, 'Company', `${when}: the seed's topic applies to the engine's #general`);
    t.same(
      await history(general.id!),
      [
        [ids.get('ada'), 'hello'],
        [ids.get('grace'), 'hi ada'],
      ],
      `${when}: history oldest first; the author defaults to the first user`,
    );
    const support = await channel('support');
    t.ok(support, `${when}: the bot sees the private channel it was added to`);
    t.same(
      ((await client.conversations.members({ channel: support.id! })).members ?? []).sort(),
      [ids.get('grace'), ids.get('linus'), ids.get('twinbox-bot')].sort(),
      `${when}: members are the listed users plus the bot`,
    );
    t.same(
      (await history(support.id!)).map((m) => m[1]),
      ['first', 'second', 'third'],
    );
  };

  await check('after start');
  const general = await channel('general');
  await client.chat.postMessage({ channel: general.id!, text: 'posted later' });
  const latest = (await client.conversations.history({ channel: general.id! })).messages![0]!;
  t.equal(latest.text, 'posted later', 'new messages come after the seeded history');
  await admin.reset();
  await check('after reset');

  await admin.seed({
    channels: [{ name: 'support', messages: [{ user: 'ada', text: 'added by POST /seed' }] }],
  });
  const after = await history((await channel('support')).id!);
  t.same(after.at(-1), [ids.get('ada'), 'added by POST /seed'], 'POST /seed appends history');

  let bad = await seedError(admin, { channels: [{ name: 'x', messages: [{ user: 'ada' }] }] });
  t.equal(bad.status, 400);
  t.match(bad.detail, 'slack seed: "channels[0].messages[0].text" is required');
  bad = await seedError(admin, {
    channels: [{ name: 'y', messages: [{ text: 'a' }, { user: 'bob', text: 'b' }] }],
  });
  t.equal(bad.status, 400);
  t.match(bad.detail, 'slack seed: "channels[0].messages[1].user" "bob" is not a seeded user');
  const refused = await startError(t, 'slack', {
    users: [{ name: 'ada' }],
    channels: [{ name: 'z', members: ['nobody'] }],
  });
  t.equal(refused.status, 400);
  t.match(refused.message, '"channels[0].members[0]" "nobody" is not a seeded user');
});
