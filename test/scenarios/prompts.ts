/**
 * Twenty prompts over every catalog twin, each with the twins it must seed and what its seed must hold
 * (measured on the seed document by the function beside it).
 */
type Seed = Record<string, any>;
const customers = (seed: Seed) => seed.stripe?.customers ?? [];
const declining = (seed: Seed) => customers(seed).filter((c: any) => c.payment_method !== 'pm_card_visa');
const products = (seed: Seed) => seed.stripe?.products ?? [];
const prices = (seed: Seed) => products(seed).flatMap((p: any) => p.prices);
const repo = (seed: Seed) => seed.github?.repos?.[0];
const pulls = (seed: Seed, state?: string) =>
  (repo(seed)?.pulls ?? []).filter((p: any) => !state || p.state === state);
const issues = (seed: Seed, state?: string) =>
  (repo(seed)?.issues ?? []).filter((i: any) => !state || i.state === state);
const comments = (seed: Seed) =>
  [...pulls(seed), ...issues(seed)].reduce((n: number, x: any) => n + (x.comments?.length ?? 0), 0);
const reviews = (seed: Seed) =>
  pulls(seed).reduce((n: number, p: any) => n + (p.review_comments?.length ?? 0), 0);
const channels = (seed: Seed) => seed.slack?.channels ?? [];
const members = (seed: Seed) => seed.slack?.users ?? [];
const messages = (seed: Seed) =>
  channels(seed).reduce((n: number, c: any) => n + (c.messages?.length ?? 0), 0);

export const PROMPTS: [string, string[], (seed: Seed) => Record<string, unknown>, Record<string, unknown>][] =
  [
    [
      '3 customers, one whose card declines',
      ['stripe'],
      (s) => ({ c: customers(s).length, d: declining(s).length }),
      { c: 3, d: 1 },
    ],
    ['a repo with 2 open PRs', ['github'], (s) => ({ p: pulls(s, 'open').length }), { p: 2 }],
    [
      'five customers, two of them with a card that declines with insufficient funds',
      ['stripe'],
      (s) => ({ c: customers(s).length, kinds: declining(s).map((c: any) => c.payment_method) }),
      { c: 5, kinds: ['pm_card_chargeDeclinedInsufficientFunds', 'pm_card_chargeDeclinedInsufficientFunds'] },
    ],
    [
      'customers named alice and bob',
      ['stripe'],
      (s) => ({ names: customers(s).map((c: any) => c.name) }),
      { names: ['Alice', 'Bob'] },
    ],
    [
      '2 products with monthly and yearly prices',
      ['stripe'],
      (s) => ({ p: products(s).length, pr: prices(s).length }),
      { p: 2, pr: 4 },
    ],
    [
      'a SaaS with 3 plans and 10 paying customers',
      ['stripe'],
      (s) => ({ p: products(s).length, c: customers(s).length }),
      { p: 3, c: 10 },
    ],
    [
      '2 customers with declined cards and 1 customer',
      ['stripe'],
      (s) => ({ c: customers(s).length, d: declining(s).length }),
      { c: 3, d: 2 },
    ],
    [
      'a customer whose card declines because it is expired',
      ['stripe'],
      (s) => ({ kinds: declining(s).map((c: any) => c.payment_method) }),
      { kinds: ['pm_card_chargeDeclinedExpiredCard'] },
    ],
    [
      'a repository named acme/shop with 3 open issues',
      ['github'],
      (s) => ({ owner: repo(s).owner, name: repo(s).name, i: issues(s, 'open').length }),
      { owner: 'acme', name: 'shop', i: 3 },
    ],
    [
      'a repo with 2 open pull requests and 4 comments',
      ['github'],
      (s) => ({ p: pulls(s).length, c: comments(s) }),
      { p: 2, c: 4 },
    ],
    [
      'a repo with 1 closed PR and 2 closed issues',
      ['github'],
      (s) => ({ p: pulls(s, 'closed').length, i: issues(s, 'closed').length }),
      { p: 1, i: 2 },
    ],
    [
      'a PR with 3 review comments',
      ['github'],
      (s) => ({ p: pulls(s).length, r: reviews(s) }),
      { p: 1, r: 3 },
    ],
    [
      '2 bug issues labeled "needs triage"',
      ['github'],
      (s) => ({ i: issues(s).length, labels: issues(s)[0].labels }),
      { i: 2, labels: ['needs triage'] },
    ],
    [
      'a team workspace with 3 channels, 4 members and 10 messages',
      ['slack'],
      (s) => ({ ch: channels(s).length, m: members(s).length, msg: messages(s) }),
      { ch: 3, m: 4, msg: 10 },
    ],
    [
      'slack channels #support and #sales with some history',
      ['slack'],
      (s) => ({ names: channels(s).map((c: any) => c.name), msg: messages(s) > 0 }),
      { names: ['support', 'sales'], msg: true },
    ],
    [
      'a slack workspace with 6 users',
      ['slack'],
      (s) => ({ m: members(s).length, ch: channels(s).length }),
      { m: 6, ch: 1 },
    ],
    [
      'a channel called #incidents with 5 messages',
      ['slack'],
      (s) => ({ names: channels(s).map((c: any) => c.name), msg: messages(s) }),
      { names: ['incidents'], msg: 5 },
    ],
    [
      '3 customers, a repo with 2 open PRs and a workspace with 2 channels',
      ['github', 'stripe', 'slack'],
      (s) => ({ c: customers(s).length, p: pulls(s).length, ch: channels(s).length }),
      { c: 3, p: 2, ch: 2 },
    ],
    [
      'a repository with twelve issues and a dozen customers',
      ['github', 'stripe'],
      (s) => ({ i: issues(s).length, c: customers(s).length }),
      { i: 12, c: 12 },
    ],
    [
      '20 team members chatting in 2 channels with 8 messages',
      ['slack'],
      (s) => ({ m: members(s).length, ch: channels(s).length, msg: messages(s) }),
      { m: 20, ch: 2, msg: 8 },
    ],
  ];
