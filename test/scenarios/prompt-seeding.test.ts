import t from 'tap';
import { planFromPrompt } from '../../server/scenarios/planner.ts';
import { tempHost } from '../twins/helpers.ts';
import { PROMPTS } from './prompts.ts';
import { countsFor, type Counts } from './sdk-counts.ts';

type Seed = Record<string, any>;

/** What a seed document says the twin will hold, in the vocabulary of sdk-counts.ts. */
function expectedCounts(twin: string, seed: Seed): Counts {
  if (twin === 'stripe') {
    const customers = seed.customers ?? [];
    return {
      customers: customers.length,
      declining_customers: customers.filter((c: Seed) => c.payment_method !== 'pm_card_visa').length,
      products: (seed.products ?? []).length,
      prices: (seed.products ?? []).reduce((n: number, p: Seed) => n + p.prices.length, 0),
    };
  }
  if (twin === 'github') {
    const repos = seed.repos ?? [];
    const pulls = repos.flatMap((r: Seed) => r.pulls ?? []);
    const issues = repos.flatMap((r: Seed) => r.issues ?? []);
    const comments = (list: Seed[]) => list.reduce((n, x) => n + (x.comments?.length ?? 0), 0);
    return {
      repos: repos.length,
      open_pulls: pulls.filter((p: Seed) => p.state !== 'closed').length,
      closed_pulls: pulls.filter((p: Seed) => p.state === 'closed').length,
      open_issues: issues.filter((i: Seed) => i.state !== 'closed').length,
      closed_issues: issues.filter((i: Seed) => i.state === 'closed').length,
      pull_comments: comments(pulls),
      issue_comments: comments(issues),
      review_comments: pulls.reduce((n: number, p: Seed) => n + (p.review_comments?.length ?? 0), 0),
    };
  }
  return {
    users: (seed.users ?? []).length,
    channels: (seed.channels ?? []).length,
    messages: (seed.channels ?? []).reduce((n: number, c: Seed) => n + (c.messages?.length ?? 0), 0),
  };
}

// The planner's twenty prompts, applied to real twin instances: what each prompt describes is what the
// official SDKs see.
for (const [prompt] of PROMPTS) {
  t.test(`"${prompt}" seeds twins whose SDKs show what it describes`, async (t) => {
    const plan = planFromPrompt(prompt);
    t.same(plan.notes, [], 'everything was understood');
    const { host } = await tempHost(t);
    const entries = await host.start('prompt', plan.twins, { adminToken: 'admin', seeds: plan.seed });
    for (const twin of plan.twins) {
      const counts = await countsFor(twin, entries[twin]!, plan.seed[twin]);
      const expected = expectedCounts(twin, plan.seed[twin]!);
      for (const [key, value] of Object.entries(expected)) t.equal(counts[key], value, `${twin} ${key}`);
    }
  });
}
