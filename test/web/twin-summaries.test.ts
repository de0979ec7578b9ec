import t from 'tap';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Stripe from 'stripe';
import { Octokit } from '@octokit/rest';
import { WebClient } from '@slack/web-api';
import { TwinHost } from '../../server/twins/runtime/host.ts';
import { TwinAdminClient } from '../../server/twins/kit/admin-client.ts';
import { twinFactories } from '../../server/twins/registry.ts';
import type { TwinSummary } from '../../server/twins/contract.ts';
import { SUMMARY_ROWS } from '../../server/twins/kit/summary.ts';

/** Real twins, changed through the vendors' SDKs, then summarised from what the admin API's GET /state returns. */
async function twins(t: { teardown(fn: () => unknown): void }, seeds: Record<string, unknown>) {
  const dir = await mkdtemp(join(tmpdir(), 'twinbox-summary-'));
  const host = new TwinHost({ factories: twinFactories, dataDir: dir, publicHost: '127.0.0.1' });
  t.teardown(async () => {
    await host.close();
    await rm(dir, { recursive: true, force: true });
  });
  const entries = await host.start('sb', Object.keys(seeds), { adminToken: 'adm', seeds });
  const summary = async (name: string): Promise<TwinSummary> => {
    const { state } = await new TwinAdminClient(entries[name]!.admin_url, 'adm').state();
    return twinFactories.get(name)!.summarize!(state);
  };
  return { entries, summary };
}

const table = (summary: TwinSummary, title: string) => {
  const found = summary.tables.find((tb) => tb.title === title);
  if (!found) throw new Error(`no table ${title}`);
  return found;
};

t.test(
  'stripe: customers, payment intents and products as readable rows, newest first, no keys',
  async (t) => {
    const { entries, summary } = await twins(t, {
      stripe: {
        customers: [{ email: 'ann@example.com', name: 'Ann', payment_method: 'pm_card_visa' }],
        products: [
          { name: 'Pro', prices: [{ unit_amount: 1500, currency: 'usd', recurring: { interval: 'month' } }] },
        ],
      },
    });
    const env = entries.stripe!.env_vars;
    const url = new URL(entries.stripe!.base_url);
    const stripe = new Stripe(env.STRIPE_SECRET_KEY!, {
      host: url.hostname,
      port: Number(url.port),
      protocol: 'http',
    });
    const bob = await stripe.customers.create({ email: 'bob@example.com' });
    await stripe.paymentIntents.create({ amount: 2599, currency: 'eur', customer: bob.id });
    const s = await summary('stripe');
    const customers = table(s, 'Customers');
    t.equal(customers.rows.length, 2);
    t.equal(customers.rows[0]![0], bob.id, 'the newest customer first');
    t.equal(customers.rows[1]![1], 'ann@example.com');
    t.match(customers.rows[1]![3], /^pm_/, 'the seeded card is the default payment method');
    t.same(table(s, 'Payment intents').rows[0]!.slice(1, 4), [
      '25.99 EUR',
      'requires_payment_method',
      bob.id,
    ]);
    t.same(table(s, 'Subscriptions').rows, [], 'an empty table, still shown');
    t.match(table(s, 'Products').rows[0]!, [/^prod_/, 'Pro', '15.00 USD / month', 'yes']);
    t.notMatch(JSON.stringify(s), env.STRIPE_SECRET_KEY!, 'no secret key');
    t.notMatch(JSON.stringify(s), '4242424242424242', 'no card number');
  },
);

t.test('github: repositories, issues and pull requests with their authors', async (t) => {
  const { entries, summary } = await twins(t, {
    github: {
      users: [{ login: 'acme' }],
      repos: [
        {
          owner: 'acme',
          name: 'web',
          issues: [{ title: 'Seeded bug' }],
          pulls: [{ title: 'Add x', head: 'feat' }],
        },
      ],
    },
  });
  const octokit = new Octokit({
    auth: entries.github!.env_vars.GITHUB_TOKEN,
    baseUrl: entries.github!.base_url,
  });
  await octokit.issues.create({ owner: 'acme', repo: 'web', title: 'Made by the app' });
  const s = await summary('github');
  t.match(table(s, 'Repositories').rows, [['acme/web', 'public', 'main']]);
  const issues = table(s, 'Issues').rows;
  t.equal(issues.length, 2, 'pull requests are not listed as issues');
  t.match(issues[0]!, ['acme/web#3', 'Made by the app', 'open']);
  t.match(issues[1]!, ['acme/web#1', 'Seeded bug', 'open', 'acme']);
  t.match(table(s, 'Pull requests').rows, [['acme/web#2', 'Add x', 'open', 'feat → main', 'acme']]);
});

t.test('slack: channels and messages, with names instead of ids', async (t) => {
  const { entries, summary } = await twins(t, {
    slack: {
      users: [{ name: 'ann' }],
      channels: [
        { name: 'general', messages: [{ text: 'hello' }] },
        { name: 'dev', topic: 'code talk' },
      ],
    },
  });
  const slack = new WebClient(entries.slack!.env_vars.SLACK_BOT_TOKEN, {
    slackApiUrl: `${entries.slack!.base_url}/api/`,
  });
  await slack.chat.postMessage({ channel: 'general', text: 'from the app' });
  const s = await summary('slack');
  const channels = table(s, 'Channels').rows;
  t.ok(
    channels.some((row) => row[0] === '#dev' && row[1] === 'code talk'),
    channels.map(String).join(' | '),
  );
  const messages = table(s, 'Messages').rows;
  t.match(messages[0]!, ['#general', 'twinbox-bot', 'from the app']);
  t.match(messages[1]!, ['#general', 'ann', 'hello']);
  t.match(messages[0]![3]!, /^\d{4}-\d\d-\d\dT/);
});

t.test('summaries never throw on a state of another shape, and cap long tables', async (t) => {
  for (const [name, factory] of twinFactories) {
    for (const odd of [
      null,
      42,
      'text',
      [],
      { engine: { collections: { 'github.repos': { items: 'x' } } } },
    ]) {
      t.doesNotThrow(() => factory.summarize!(odd), `${name} on ${JSON.stringify(odd)}`);
    }
  }
  const objects: Record<string, unknown> = {};
  for (let i = 0; i < SUMMARY_ROWS + 7; i++) {
    objects[`cus_${i}`] = {
      seq: i,
      data: { id: `cus_${i}`, object: 'customer', email: `c${i}@example.com` },
    };
  }
  const customers = table(twinFactories.get('stripe')!.summarize!({ state: { objects } }), 'Customers');
  t.equal(customers.rows.length, SUMMARY_ROWS);
  t.equal(customers.omitted, 7);
  t.equal(customers.rows[0]![0], `cus_${SUMMARY_ROWS + 6}`, 'the newest kept');
});
