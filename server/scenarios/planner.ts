/**
 * The built-in prompt planner: turns a natural-language `scenario_prompt` ("3 customers, one whose card
 * declines; a repo with 2 open PRs") into a seed document per twin. Deterministic and offline: the same
 * prompt always gives the same seed. What it cannot interpret is reported in `notes`, never guessed.
 *
 * It reads counts ("3", "three", "a"), entity nouns per twin, a few states (open/closed, declining
 * cards) and names (quoted, `owner/repo`, `#channel`). Everything it matched is consumed; any leftover
 * clause that still holds words is named in a note.
 */

export interface SeedPlan {
  /** The twins the plan seeds, in catalog order. */
  twins: string[];
  /** Seed documents keyed by twin name, in the shapes of docs/twins.md ("Seeds"). */
  seed: Record<string, Record<string, unknown>>;
  /** What was not interpreted, one sentence each. Empty when everything was understood. */
  notes: string[];
}

/** Counts above this are capped (and said so): a sandbox is for tests, not load. */
export const MAX_ENTITIES = 50;

const NUMBER_WORDS: Record<string, number> = {
  a: 1,
  an: 1,
  one: 1,
  single: 1,
  two: 2,
  three: 3,
  four: 4,
  five: 5,
  six: 6,
  seven: 7,
  eight: 8,
  nine: 9,
  ten: 10,
  eleven: 11,
  twelve: 12,
  fifteen: 15,
  twenty: 20,
  couple: 2,
  few: 3,
  several: 3,
  some: 3,
  many: 10,
  dozen: 12,
};
const COUNT = String.raw`(\d{1,4}|a couple of|a few|a dozen|${Object.keys(NUMBER_WORDS).join('|')})`;

const FIRST_NAMES = [
  'Ada',
  'Grace',
  'Alan',
  'Margaret',
  'Linus',
  'Barbara',
  'Dennis',
  'Frances',
  'Ken',
  'Radia',
];
const LAST_NAMES = [
  'Lovelace',
  'Hopper',
  'Turing',
  'Hamilton',
  'Torvalds',
  'Liskov',
  'Ritchie',
  'Allen',
  'Thompson',
  'Perlman',
];

const DECLINE_KINDS: [RegExp, string][] = [
  [/insufficient funds/, 'pm_card_chargeDeclinedInsufficientFunds'],
  [/expired/, 'pm_card_chargeDeclinedExpiredCard'],
  [/stolen/, 'pm_card_chargeDeclinedStolenCard'],
  [/lost/, 'pm_card_chargeDeclinedLostCard'],
  [/(incorrect|wrong) cvc/, 'pm_card_chargeDeclinedIncorrectCvc'],
];

function countOf(word: string | undefined, fallback = 1): number {
  if (!word) return fallback;
  const text = word.trim().replace(/^a (couple|few|dozen)( of)?$/, '$1');
  const value = /^\d+$/.test(text) ? Number(text) : NUMBER_WORDS[text];
  return value ?? fallback;
}

function personName(i: number): { name: string; first: string } {
  const first = FIRST_NAMES[i % FIRST_NAMES.length]!;
  const last = LAST_NAMES[(i + Math.floor(i / FIRST_NAMES.length)) % LAST_NAMES.length]!;
  return { name: `${first} ${last}`, first };
}

const slug = (text: string) =>
  text
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '') || 'item';

/** The text of the prompt, with the spans the planner has understood blanked out as it goes. */
class Prompt {
  text: string;
  constructor(readonly original: string) {
    this.text = ` ${original.toLowerCase().replace(/\s+/g, ' ')} `;
  }

  /** Every match of `pattern` (global), each consumed once it has been read. */
  take(pattern: RegExp): RegExpExecArray[] {
    const matches: RegExpExecArray[] = [];
    const global = new RegExp(
      pattern.source,
      pattern.flags.includes('g') ? pattern.flags : `${pattern.flags}g`,
    );
    for (let match = global.exec(this.text); match; match = global.exec(this.text)) {
      matches.push(match);
      if (match[0].length === 0) global.lastIndex++;
    }
    // Blank from the end so earlier indexes stay valid.
    for (const match of [...matches].reverse()) {
      this.text =
        this.text.slice(0, match.index) +
        ' '.repeat(match[0].length) +
        this.text.slice(match.index + match[0].length);
    }
    return matches;
  }

  has(pattern: RegExp): boolean {
    return pattern.test(this.text);
  }

  /** Clauses still holding words once filler is removed: what the planner did not understand. */
  leftovers(): string[] {
    const FILLER =
      /\b(a|an|the|and|with|of|in|on|for|to|from|that|which|who|whose|has|have|having|is|are|be|it|its|them|their|some|plus|also|each|per|one|sandbox|scenario|seed|setup|set up|please|create|make|add|include|including|there|data|account|workspace)\b/g;
    return this.text
      .split(/[,;.!?\n]| and | with | plus /)
      .map((clause) => clause.trim())
      .filter((clause) => clause.replace(FILLER, '').replace(/[^a-z0-9]/g, '').length > 0);
  }
}

function planStripe(prompt: Prompt, notes: string[]): Record<string, unknown> | undefined {
  // Declines first: "2 customers with declined cards" must not be read as two plain customers.
  // Customers "with declined cards" are extra customers; "one (of them) whose card declines" is one of
  // the customers counted elsewhere.
  const extraDecliners: string[] = [];
  for (const match of prompt.take(
    new RegExp(String.raw` ${COUNT} (?:customers? with )?(?:declin(?:ed|ing)|failing) (?:cards?|payments?)`),
  )) {
    for (let i = 0; i < countOf(match[1]); i++) extraDecliners.push('pm_card_chargeDeclined');
  }
  const ownDecliners: string[] = [];
  const declinePattern = new RegExp(
    String.raw`(?: ${COUNT}(?: of them)?)? (?:whose|with an?|who has an?|that has an?) (?:credit |debit )?(?:card|payment method)s? (?:that |which )?(?:declines?|is declined|gets declined|will decline|fails?)(?: (?:with|for|due to|because(?: of)?|as) ([a-z ]+?))?(?=[,;.]| and | with | ?$)`,
  );
  for (const match of prompt.take(declinePattern)) {
    const kind =
      DECLINE_KINDS.find(([pattern]) => pattern.test(match[2] ?? ''))?.[1] ?? 'pm_card_chargeDeclined';
    for (let i = 0; i < countOf(match[1]); i++) ownDecliners.push(kind);
  }

  let customerCount = 0;
  const names: string[] = [];
  for (const match of prompt.take(
    new RegExp(String.raw` ${COUNT} (?:paying |test |new |stripe )?(?:customers?|clients?|buyers?)\b`),
  )) {
    customerCount += countOf(match[1]);
  }
  for (const match of prompt.take(
    / (?:customers?|clients?) (?:named|called) ((?:"[^"]+"|[a-z]+)(?:(?:, | and )(?:"[^"]+"|[a-z]+))*)/,
  )) {
    names.push(...match[1]!.split(/, | and /).map((n) => n.replace(/"/g, '')));
  }
  customerCount = Math.max(customerCount, names.length, ownDecliners.length) + extraDecliners.length;
  const declines = [...ownDecliners, ...extraDecliners];

  let productCount = 0;
  for (const match of prompt.take(
    new RegExp(String.raw` ${COUNT} (?:subscription |saas )?(?:products?|plans?)\b`),
  )) {
    productCount += countOf(match[1]);
  }
  let priceCount = 0;
  for (const match of prompt.take(new RegExp(String.raw` ${COUNT} prices?\b`)))
    priceCount += countOf(match[1]);
  const intervals = prompt.take(
    / (monthly|yearly|annual|weekly)(?: and (monthly|yearly|annual|weekly))? (?:prices?|billing|plans?)/,
  );
  const chosenIntervals = intervals.flatMap((m) => [m[1], m[2]]).filter((x): x is string => Boolean(x));
  if (chosenIntervals.length && productCount === 0) productCount = 1;
  if (priceCount && productCount === 0) productCount = 1;

  // Words that only say what kind of business this is; they describe, they ask for nothing.
  const context =
    prompt.take(/ (?:saas|subscription business|online shop|store|billing account)\b/).length > 0;
  if (customerCount === 0 && productCount === 0) {
    if (context)
      notes.push('stripe: the prompt names a kind of business but no customers or products to create.');
    if (prompt.take(/ (stripe|payments?|billing|cards?)\b/).length) {
      notes.push(
        'stripe: the prompt mentions payments but says nothing to create (try "3 customers, one whose card declines").',
      );
    }
    return undefined;
  }
  customerCount = cap(customerCount, 'stripe customers', notes);
  productCount = cap(productCount, 'stripe products', notes);

  const customers = Array.from({ length: customerCount }, (_, i) => {
    const given = names[i];
    const { name, first } = given ? { name: capitalize(given), first: given } : personName(i);
    // Declining cards go to the last customers, so "3 customers, one declines" reads top to bottom.
    const declineIndex = i - (customerCount - declines.length);
    return {
      name,
      email: `${slug(first)}${given ? '' : i + 1}@example.com`,
      payment_method: declineIndex >= 0 ? declines[declineIndex]! : 'pm_card_visa',
    };
  });
  const intervalsToUse = chosenIntervals.length
    ? chosenIntervals.map((i) => (i === 'annual' ? 'year' : i.replace(/ly$/, '').replace('dai', 'day')))
    : ['month'];
  const pricesPerProduct = Math.max(
    intervalsToUse.length,
    priceCount ? Math.ceil(priceCount / productCount) : 1,
  );
  const products = Array.from({ length: productCount }, (_, i) => ({
    name: ['Starter', 'Pro', 'Team', 'Enterprise', 'Add-on'][i % 5]! + (i >= 5 ? ` ${i + 1}` : ''),
    prices: Array.from({ length: pricesPerProduct }, (_, j) => {
      const interval = intervalsToUse[j % intervalsToUse.length]!;
      const monthly = 900 * (i + 1);
      return {
        unit_amount:
          interval === 'year' ? monthly * 10 : interval === 'week' ? Math.round(monthly / 4) : monthly,
        currency: 'usd',
        recurring: { interval },
      };
    }),
  }));
  return { ...(customers.length ? { customers } : {}), ...(products.length ? { products } : {}) };
}

function planGitHub(prompt: Prompt, notes: string[]): Record<string, unknown> | undefined {
  let owner = 'octocat';
  let repoName = 'app';
  const named = prompt.take(
    / (?:repo(?:sitory)?|project) (?:named |called )?"?([a-z0-9-]{1,39})\/([a-z0-9._-]{1,100})"?/,
  );
  const plainNamed = named.length
    ? []
    : prompt.take(/ (?:repo(?:sitory)?|project) (?:named|called) "?([a-z0-9._-]{1,100})"?/);
  if (named[0]) [owner, repoName] = [named[0][1]!, named[0][2]!];
  else if (plainNamed[0]) repoName = plainNamed[0][1]!;
  const mentionsRepo =
    named.length +
      plainNamed.length +
      prompt.take(/ (?:a |one |the )?(?:git ?hub )?(?:repo(?:sitory)?|codebase)s?\b/).length >
    0;

  const pulls: Record<string, unknown>[] = [];
  const issues: Record<string, unknown>[] = [];
  const pullPattern = new RegExp(
    String.raw` ${COUNT} (open |closed |merged |draft )?(?:pull requests?|prs?)\b`,
  );
  for (const match of prompt.take(pullPattern)) {
    const state = match[2]?.trim() === 'closed' || match[2]?.trim() === 'merged' ? 'closed' : 'open';
    for (let i = 0; i < countOf(match[1]); i++) {
      const n = pulls.length + 1;
      pulls.push({
        title: `Feature ${n}: ${['add login page', 'fix checkout total', 'update dependencies', 'improve search', 'refactor billing'][(n - 1) % 5]}`,
        head: `feature-${n}`,
        body: `This pull request changes feature ${n}.`,
        state,
        files: { [`src/feature-${n}.js`]: `export const feature${n} = true;\n` },
      });
    }
  }
  const issuePattern = new RegExp(
    String.raw` ${COUNT} (open |closed )?(?:(bug|feature|enhancement|documentation) )?(?:issues?|bugs?|tickets?)\b(?: labell?ed "?([a-z -]+?)"?(?=[,;.]| and | with | $))?`,
  );
  for (const match of prompt.take(issuePattern)) {
    const state = match[2]?.trim() === 'closed' ? 'closed' : 'open';
    const label = match[4]?.trim() ?? match[3] ?? (/\bbugs?\b/.test(match[0]) ? 'bug' : undefined);
    for (let i = 0; i < countOf(match[1]); i++) {
      const n = issues.length + 1;
      issues.push({
        title: `${label === 'bug' ? 'Bug' : 'Issue'} ${n}: ${['login fails on Safari', 'totals are rounded wrong', 'search is slow', 'typo in README', 'dark mode flickers'][(n - 1) % 5]}`,
        body: `Steps to reproduce issue ${n}.`,
        state,
        ...(label ? { labels: [label] } : {}),
      });
    }
  }
  let commentCount = 0;
  let reviewCount = 0;
  for (const match of prompt.take(
    new RegExp(String.raw` ${COUNT} (review )?comments?\b(?: (?:each|per (?:pr|pull request|issue)))?`),
  )) {
    if (match[2]) reviewCount += countOf(match[1]);
    else commentCount += countOf(match[1]);
  }
  if (prompt.take(/ (?:with |and )?(?:some )?review comments\b/).length && reviewCount === 0) reviewCount = 2;

  if (!mentionsRepo && pulls.length === 0 && issues.length === 0) {
    if (commentCount || reviewCount)
      notes.push('github: comments need a pull request or an issue to go on; none were asked for.');
    return undefined;
  }
  cap(pulls.length, 'github pull requests', notes, pulls);
  cap(issues.length, 'github issues', notes, issues);
  // Comments go on the pull requests first, then on issues, round-robin.
  const targets = [...pulls, ...issues];
  for (let i = 0; i < Math.min(commentCount, MAX_ENTITIES); i++) {
    const target = targets[i % Math.max(targets.length, 1)];
    if (!target) break;
    ((target.comments as unknown[]) ??= []).push({
      body: `Comment ${i + 1}: looks good, one question inline.`,
    });
  }
  for (let i = 0; i < Math.min(reviewCount, MAX_ENTITIES); i++) {
    const pull = pulls[i % Math.max(pulls.length, 1)];
    if (!pull) {
      notes.push('github: review comments need a pull request; none were asked for.');
      break;
    }
    const path = Object.keys(pull.files as object)[0]!;
    ((pull.review_comments as unknown[]) ??= []).push({
      path,
      line: 1,
      body: `Review ${i + 1}: consider a test for this.`,
    });
  }
  const repo: Record<string, unknown> = {
    owner,
    name: repoName,
    files: { 'package.json': '{\n  "name": "app"\n}\n' },
  };
  if (pulls.length) repo.pulls = pulls;
  if (issues.length) repo.issues = issues;
  return {
    users: [{ login: owner, name: owner === 'octocat' ? 'The Octocat' : capitalize(owner) }],
    repos: [repo],
  };
}

function planSlack(prompt: Prompt, notes: string[]): Record<string, unknown> | undefined {
  const channelNames: string[] = prompt.take(/ (?:(?:called|named) )?#([a-z0-9_-]{1,80})/).map((m) => m[1]!);
  let channelCount = 0;
  for (const match of prompt.take(new RegExp(String.raw` ${COUNT} (?:slack )?channels?\b`)))
    channelCount += countOf(match[1]);
  const mentionsSlack =
    prompt.take(/ (?:slack|(?:team )?workspace|channels?|chatting|talking|posting)\b/).length > 0;
  let memberCount = 0;
  for (const match of prompt.take(
    new RegExp(String.raw` ${COUNT} (?:team )?(?:members?|people|teammates?|colleagues?)\b`),
  )) {
    memberCount += countOf(match[1]);
  }
  // "users" belong to Slack only when Slack is the subject; otherwise they are left for a note.
  if (mentionsSlack || channelNames.length || channelCount) {
    for (const match of prompt.take(new RegExp(String.raw` ${COUNT} users?\b`)))
      memberCount += countOf(match[1]);
  }
  let messageCount = 0;
  for (const match of prompt.take(
    new RegExp(String.raw` ${COUNT} (?:chat )?messages?\b(?: (?:each|per channel))?`),
  )) {
    messageCount += countOf(match[1]);
  }
  const history = prompt.take(/ (?:some |with |and )?(?:message |chat )?history\b/).length > 0;
  if (
    !mentionsSlack &&
    channelNames.length === 0 &&
    channelCount === 0 &&
    memberCount === 0 &&
    messageCount === 0
  ) {
    return undefined;
  }
  channelCount = cap(Math.max(channelCount, channelNames.length, 1), 'slack channels', notes);
  memberCount = cap(Math.max(memberCount, 2), 'slack members', notes);
  if (messageCount === 0 && history) messageCount = 5;
  messageCount = cap(messageCount, 'slack messages', notes);

  const users = Array.from({ length: memberCount }, (_, i) => {
    const { name, first } = personName(i);
    return {
      name: slug(first) + (i >= FIRST_NAMES.length ? i + 1 : ''),
      real_name: name,
      email: `${slug(first)}${i + 1}@example.com`,
    };
  });
  const defaults = ['general', 'random', 'engineering', 'support', 'sales'];
  const channels = Array.from({ length: channelCount }, (_, i) => ({
    name: channelNames[i] ?? defaults[i % defaults.length]! + (i >= defaults.length ? `-${i + 1}` : ''),
    members: users.map((u) => u.name),
    messages: [] as { user: string; text: string }[],
  }));
  for (let i = 0; i < messageCount; i++) {
    channels[i % channels.length]!.messages.push({
      user: users[i % users.length]!.name,
      text: [
        'Morning all!',
        'Deploy is out.',
        'Can someone review my PR?',
        'Lunch at noon?',
        'Ticket #42 is fixed.',
      ][i % 5]!,
    });
  }
  return {
    users,
    channels: channels.map((c) => (c.messages.length ? c : { name: c.name, members: c.members })),
  };
}

function cap(count: number, what: string, notes: string[], list?: unknown[]): number {
  if (count <= MAX_ENTITIES) return count;
  notes.push(`${what}: asked for ${count}, seeded ${MAX_ENTITIES} (the most a sandbox seeds).`);
  if (list) list.length = MAX_ENTITIES;
  return MAX_ENTITIES;
}

function capitalize(text: string): string {
  return text.replace(/\b[a-z]/g, (c) => c.toUpperCase());
}

const PLANNERS: [string, (prompt: Prompt, notes: string[]) => Record<string, unknown> | undefined][] = [
  ['github', planGitHub],
  ['stripe', planStripe],
  ['slack', planSlack],
];

export function planFromPrompt(text: string): SeedPlan {
  const prompt = new Prompt(text);
  const notes: string[] = [];
  const seed: Record<string, Record<string, unknown>> = {};
  for (const [twin, plan] of PLANNERS) {
    const planned = plan(prompt, notes);
    if (planned) seed[twin] = planned;
  }
  const leftovers = prompt.leftovers();
  if (Object.keys(seed).length === 0) {
    notes.push(
      `Nothing in the prompt could be interpreted as twin data: "${text.trim().slice(0, 200)}". Nothing was seeded.`,
    );
  } else {
    for (const clause of leftovers) notes.push(`Not interpreted: "${clause}".`);
  }
  return { twins: Object.keys(seed), seed, notes };
}
