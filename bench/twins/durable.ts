/**
 * What a durable twin write costs (issue 20, part 3): the same SDK write against a TwinHost whose twins
 * journal each change (fsynced) before answering, and one with `durableWrites: false`, which snapshots
 * 20 ms after the answer as twins did before. Both on the same disk (the data dir's), in one run,
 * interleaved round by round. A read is timed too: it must cost nothing more.
 * Run: BENCH_TWINS_PART=durable npx tsx bench/twins/run.ts
 * Knobs: BENCH_DURABLE_CALLS (100), BENCH_DURABLE_ROUNDS (5), BENCH_DURABLE_DIR (default: under the cwd,
 * the data dir's disk; /tmp may be a tmpfs, where fsync costs nothing), BENCH_DURABLE_LARGE (1000).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { loadavg } from 'node:os';
import { Octokit } from '@octokit/rest';
import Stripe from 'stripe';
import { TwinHost, type TwinEntry } from '../../server/twins/runtime/host.ts';
import { ratio } from '../kit.ts';
import { twinFactories } from '../../server/twins/registry.ts';

const CALLS = Number(process.env.BENCH_DURABLE_CALLS ?? 100);
const ROUNDS = Number(process.env.BENCH_DURABLE_ROUNDS ?? 5);
const WARMUP = 30;
/** Customers in the "larger state" rows: the journal record is a diff, but finding it walks the state. */
const LARGE = Number(process.env.BENCH_DURABLE_LARGE ?? 1000);
const CONCURRENT = 8;

const ghSeed = {
  users: [{ login: 'octocat', email: 'octocat@example.com' }],
  repos: [{ owner: 'octocat', name: 'app' }],
};

type Call = () => Promise<unknown>;

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}
const fmt = (n: number) => n.toFixed(2);
const median = (values: number[]) =>
  pct(
    values.toSorted((a, b) => a - b),
    50,
  );

async function timed(call: Call): Promise<{ p50: number; p99: number }> {
  for (let i = 0; i < WARMUP; i++) await call();
  const times: number[] = [];
  for (let i = 0; i < CALLS; i++) {
    const t0 = performance.now();
    await call();
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  return { p50: pct(times, 50), p99: pct(times, 99) };
}

/** Writes per second with CONCURRENT clients writing at once (their journal records share fsyncs). */
async function throughput(call: Call): Promise<number> {
  const started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENT }, async () => {
      for (let i = 0; i < CALLS / CONCURRENT; i++) await call();
    }),
  );
  return (CALLS / (performance.now() - started)) * 1000;
}

function stripeOf(entry: TwinEntry): Stripe {
  const url = new URL(entry.base_url);
  return new Stripe(entry.env_vars.STRIPE_SECRET_KEY!, {
    host: url.hostname,
    port: Number(url.port),
    protocol: 'http',
    maxNetworkRetries: 0,
  });
}

interface Side {
  /** Back to the seed (POST /_twinbox/reset): each round's small-state rows start from it. */
  reset: () => Promise<void>;
  stripeCreate: Call;
  stripeRetrieve: Call;
  githubCreate: Call;
  /** Stripe on a sandbox whose state holds LARGE customers. */
  largeCreate: Call;
}

async function side(host: TwinHost): Promise<Side> {
  const entries = await host.start('bench', ['stripe', 'github'], {
    adminToken: 'bench',
    seeds: { github: ghSeed },
  });
  const stripe = stripeOf(entries.stripe!);
  let customer = await stripe.customers.create({ email: 'read@example.com' });
  const octokit = new Octokit({
    auth: entries.github!.env_vars.GITHUB_TOKEN,
    baseUrl: entries.github!.base_url,
  });
  const large = stripeOf((await host.start('bench-large', ['stripe'], { adminToken: 'bench' })).stripe!);
  for (let i = 0; i < LARGE; i += 50)
    await Promise.all(
      Array.from({ length: Math.min(50, LARGE - i) }, (_, j) =>
        large.customers.create({ email: `seed-${i + j}@example.com`, name: `Customer ${i + j}` }),
      ),
    );
  const reset = async (entry: TwinEntry) => {
    const res = await fetch(`${entry.admin_url}/reset`, {
      method: 'POST',
      headers: { authorization: 'Bearer bench' },
    });
    if (!res.ok) throw new Error(`reset: ${res.status}`);
  };
  let n = 0;
  return {
    reset: async () => {
      await reset(entries.stripe!);
      await reset(entries.github!);
      await stripe.customers.create({ email: 'read@example.com' }).then((c) => (customer = c));
    },
    stripeCreate: () => stripe.customers.create({ email: `w${n++}@example.com` }),
    stripeRetrieve: () => stripe.customers.retrieve(customer.id),
    githubCreate: () => octokit.issues.create({ owner: 'octocat', repo: 'app', title: `issue ${n++}` }),
    largeCreate: () => large.customers.create({ email: `l${n++}@example.com` }),
  };
}

export async function durableTable(): Promise<void> {
  const base = process.env.BENCH_DURABLE_DIR ?? process.cwd();
  const work = await mkdtemp(join(base, '.bench-durable-'));
  const durableHost = new TwinHost({
    factories: twinFactories,
    dataDir: join(work, 'durable'),
    publicHost: '127.0.0.1',
  });
  const plainHost = new TwinHost({
    factories: twinFactories,
    dataDir: join(work, 'snapshot'),
    publicHost: '127.0.0.1',
    durableWrites: false,
  });
  try {
    const started = new Date().toISOString();
    const load = loadavg()
      .map((l) => l.toFixed(2))
      .join(' ');
    const durable = await side(durableHost);
    const plain = await side(plainHost);
    const ops: Array<[string, keyof Side]> = [
      [`stripe \`customers.create\` (0 to ${WARMUP + CALLS} customers)`, 'stripeCreate'],
      [`github \`issues.create\` (0 to ${WARMUP + CALLS} issues)`, 'githubCreate'],
      [`stripe \`customers.create\`, ${LARGE} customers in the state`, 'largeCreate'],
      ['stripe `customers.retrieve` (a read)', 'stripeRetrieve'],
    ];
    type Latency = { p50: number; p99: number };
    const results: Record<string, Record<'d' | 'p', Latency[]>> = {};
    const rates: Record<'d' | 'p', number[]> = { d: [], p: [] };
    for (let round = 0; round < ROUNDS; round++) {
      // Alternate which goes first, so neither always gets the warmer machine.
      const order: Array<['d' | 'p', Side]> =
        round % 2
          ? [
              ['p', plain],
              ['d', durable],
            ]
          : [
              ['d', durable],
              ['p', plain],
            ];
      for (const [, key] of ops)
        for (const [name, s] of order) {
          if (key !== 'largeCreate') await s.reset();
          (results[key] ??= { d: [], p: [] })[name].push(await timed(s[key]));
        }
      for (const [name, s] of order) {
        await s.reset();
        rates[name].push(await throughput(s.stripeCreate));
      }
    }
    console.log(
      `\n## Durable twin writes (${ROUNDS} rounds of ${CALLS} sequential calls after ${WARMUP} warm-up, median of the rounds; ${started}, load average ${load}; data dir ${base})\n`,
    );
    console.log(
      '| call | journalled, answered once fsynced p50 / p99 ms | snapshot 20 ms after (before) p50 / p99 ms | p50 ratio | per round |',
    );
    console.log('|---|---|---|---:|---|');
    for (const [label, key] of ops) {
      const r = results[key]!;
      const d = { p50: median(r.d.map((x) => x.p50)), p99: median(r.d.map((x) => x.p99)) };
      const p = { p50: median(r.p.map((x) => x.p50)), p99: median(r.p.map((x) => x.p99)) };
      const rounds = r.d.map((x, i) => ratio(x.p50, r.p[i]!.p50)).join(', ');
      console.log(
        `| ${label} | ${fmt(d.p50)} / ${fmt(d.p99)} | ${fmt(p.p50)} / ${fmt(p.p99)} | ${ratio(d.p50, p.p50)} | ${rounds} |`,
      );
    }
    const [rd, rp] = [median(rates.d), median(rates.p)];
    console.log(
      `| stripe \`customers.create\`, ${CONCURRENT} clients at once: writes/s | ${rd.toFixed(0)} | ${rp.toFixed(0)} | ${ratio(rd, rp)} | ${rates.d.map((x, i) => ratio(x, rates.p[i]!)).join(', ')} |`,
    );
  } finally {
    await durableHost.close();
    await plainHost.close();
    await rm(work, { recursive: true, force: true });
  }
}
