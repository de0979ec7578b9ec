import t from 'tap';
import { Octokit } from '@octokit/rest';
import Stripe from 'stripe';
import { WebClient } from '@slack/web-api';
import { PRESETS } from '../../server/scenarios/presets.ts';
import { builtInCatalog } from '../../server/twins/catalog.ts';
import type { TwinEntry } from '../../server/twins/instance.ts';
import { twinFactories } from '../../server/twins/registry.ts';
import type { GitHubSeed } from '../../server/twins/github/seed.ts';
import { tempHost } from '../twins/helpers.ts';

type Counts = Record<string, number>;

/** What a GitHub client sees of the seeded repositories, in the promise vocabulary of presets.ts. */
async function githubCounts(entry: TwinEntry, seed: GitHubSeed, diffs: string[]): Promise<Counts> {
  const octokit = new Octokit({ auth: entry.env_vars.GITHUB_TOKEN, baseUrl: entry.env_vars.GITHUB_API_URL });
  const c: Counts = {
    repos: 0,
    open_pulls: 0,
    closed_pulls: 0,
    open_issues: 0,
    closed_issues: 0,
    labels: 0,
    issue_comments: 0,
    pull_comments: 0,
    review_comments: 0,
  };
  for (const r of seed.repos ?? []) {
    const repo = { owner: r.owner, repo: r.name };
    await octokit.repos.get(repo);
    c.repos!++;
    const pulls = (await octokit.pulls.list({ ...repo, state: 'all', per_page: 100 })).data;
    for (const pull of pulls) {
      c[pull.state === 'open' ? 'open_pulls' : 'closed_pulls']!++;
      const number = pull.number;
      c.pull_comments! += (await octokit.issues.listComments({ ...repo, issue_number: number })).data.length;
      c.review_comments! += (
        await octokit.pulls.listReviewComments({ ...repo, pull_number: number })
      ).data.length;
      const files = (await octokit.pulls.listFiles({ ...repo, pull_number: number })).data;
      if (files.length) diffs.push(`${r.name}#${number}:${files.map((f) => f.filename).join(',')}`);
    }
    const issues = (await octokit.issues.listForRepo({ ...repo, state: 'all', per_page: 100 })).data;
    for (const issue of issues.filter((i) => !i.pull_request)) {
      c[issue.state === 'open' ? 'open_issues' : 'closed_issues']!++;
      c.issue_comments! += (
        await octokit.issues.listComments({ ...repo, issue_number: issue.number })
      ).data.length;
    }
    c.labels! += (await octokit.issues.listLabelsForRepo(repo)).data.length;
  }
  return c;
}

/** Counts, then confirms a PaymentIntent with each customer's default payment method (which adds intents). */
async function stripeCounts(entry: TwinEntry): Promise<Counts> {
  const env = entry.env_vars;
  const stripe = new Stripe(env.STRIPE_SECRET_KEY!, {
    host: env.STRIPE_API_HOST,
    port: Number(env.STRIPE_API_PORT),
    protocol: env.STRIPE_API_PROTOCOL as 'http',
    maxNetworkRetries: 0,
  });
  const customers = (await stripe.customers.list({ limit: 100 })).data;
  const c: Counts = {
    customers: customers.length,
    products: (await stripe.products.list({ limit: 100 })).data.length,
    prices: (await stripe.prices.list({ limit: 100 })).data.length,
    payment_intents: (await stripe.paymentIntents.list({ limit: 100 })).data.length,
    declining_customers: 0,
  };
  for (const customer of customers) {
    const pm = customer.invoice_settings.default_payment_method;
    if (typeof pm !== 'string') continue;
    const attached = await stripe.customers.listPaymentMethods(customer.id);
    if (!attached.data.some((p) => p.id === pm)) throw new Error(`${pm} is not attached to ${customer.id}`);
    const result = await stripe.paymentIntents
      .create({ amount: 1000, currency: 'usd', customer: customer.id, payment_method: pm, confirm: true })
      .catch((e: unknown) => e);
    if (result instanceof Stripe.errors.StripeCardError) c.declining_customers!++;
    else if (result instanceof Error) throw result;
  }
  return c;
}

async function slackCounts(entry: TwinEntry, seed: Record<string, any>): Promise<Counts> {
  const client = new WebClient(entry.env_vars.SLACK_BOT_TOKEN, {
    slackApiUrl: entry.env_vars.SLACK_API_URL,
    retryConfig: { retries: 0 },
  });
  const userNames = new Set<string>((seed.users ?? []).map((u: { name: string }) => u.name));
  const channelNames = new Set<string>((seed.channels ?? []).map((ch: { name: string }) => ch.name));
  const users = (await client.users.list({})).members ?? [];
  const channels = (
    await client.conversations.list({ types: 'public_channel,private_channel', limit: 1000 })
  ).channels!.filter((ch) => channelNames.has(ch.name!));
  let messages = 0;
  for (const ch of channels)
    messages += (await client.conversations.history({ channel: ch.id! })).messages!.length;
  return {
    users: users.filter((u) => userNames.has(u.name!) && !u.deleted).length,
    channels: channels.length,
    messages,
  };
}

t.test('presets: well-formed, catalog twins only, seeds valid', async (t) => {
  t.ok(PRESETS.length >= 7);
  t.equal(new Set(PRESETS.map((p) => p.id)).size, PRESETS.length, 'ids are unique');
  for (const twin of ['github', 'stripe', 'slack']) {
    t.ok(PRESETS.filter((p) => p.twins.includes(twin)).length >= 2, `at least two presets use ${twin}`);
  }
  t.ok(
    PRESETS.some((p) => p.twins.length === 3),
    'one preset uses all three twins',
  );
  for (const p of PRESETS) {
    t.match(p.id, /^preset_[a-z0-9_]+$/);
    t.ok(p.name && p.description, `${p.id} has a name and description`);
    t.same(Object.keys(p.seed).sort(), [...p.twins].sort(), `${p.id}: one seed per twin`);
    t.same(Object.keys(p.promises).sort(), [...p.twins].sort(), `${p.id}: promises per twin`);
    for (const twin of p.twins) {
      t.ok(builtInCatalog.has(twin), `${p.id}: ${twin} is in the catalog`);
      t.doesNotThrow(() => twinFactories.get(twin)!.validateSeed(p.seed[twin]), `${p.id}: ${twin} seed`);
    }
  }
});

for (const preset of PRESETS) {
  t.test(
    `preset ${preset.id}: the promised counts are visible through the SDKs, before and after reset`,
    async (t) => {
      const { host } = await tempHost(t);
      const entries = await host.start(preset.id, preset.twins, { adminToken: 'admin', seeds: preset.seed });
      const check = async (when: string) => {
        for (const twin of preset.twins) {
          const entry = entries[twin]!;
          const diffs: string[] = [];
          const counts =
            twin === 'github'
              ? await githubCounts(entry, preset.seed.github as GitHubSeed, diffs)
              : twin === 'stripe'
                ? await stripeCounts(entry)
                : await slackCounts(entry, preset.seed.slack as Record<string, unknown>);
          for (const [key, promised] of Object.entries(preset.promises[twin]!)) {
            t.equal(counts[key], promised, `${when}: ${twin} ${key}`);
          }
          if (twin === 'github') {
            const withFiles = ((preset.seed.github as GitHubSeed).repos ?? []).flatMap((r) =>
              (r.pulls ?? []).filter((p) => p.files),
            );
            t.equal(diffs.length, withFiles.length, `${when}: every pull request with files has a diff`);
          }
        }
      };
      await check('after start');
      for (const twin of preset.twins) {
        const res = await fetch(`${entries[twin]!.admin_url}/reset`, {
          method: 'POST',
          headers: { authorization: 'Bearer admin' },
        });
        t.equal(res.status, 200, `${twin} reset`);
      }
      await check('after reset');
    },
  );
}
