/**
 * 1. Cost of one durable write to the embedded store as the number of stored sandboxes grows: 100 vs
 *    10,000 records. It keeps one file per record, so the cost should not grow with the count.
 * 2. The authenticated API on the embedded store vs PostgreSQL (api.ts), same run.
 *
 *   npx tsx bench/store/run.ts [--writes 300] [--duration 10] [--connections 10] [--rounds 3] [--api-only]
 *                              [--route POST] [--before <tree>] [--prefill-ended 20000] [--prefill-live 5000]
 *
 * --route keeps the routes whose name contains it. --before <tree>: an older revision's tree (unpacked
 * with `git archive`, node_modules shared) runs on PostgreSQL in the embedded store's place, so each
 * pair of rows is before / after on PostgreSQL, same run, alternating (bench/store/before-after.sh).
 * Rounds run one after another on the same Twinbox: POST rows show whether creates slow as the
 * account fills. --prefill-ended N / --prefill-live N write N ended sandboxes of the measured account
 * (each with 2 KB more JSON) / N queued ones into each PostgreSQL schema before round 1 (bench/store/api.ts).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { openLowdbStore } from '../../server/store/lowdb-store.ts';
import type { SandboxRecord } from '../../server/store/records.ts';
import { measureApiOnBothStores } from './api.ts';

const { values } = parseArgs({
  options: {
    writes: { type: 'string', default: '300' },
    duration: { type: 'string', default: '10' },
    connections: { type: 'string', default: '10' },
    rounds: { type: 'string', default: '3' },
    'api-only': { type: 'boolean', default: false },
    route: { type: 'string' },
    before: { type: 'string' },
    'prefill-ended': { type: 'string', default: '0' },
    'prefill-live': { type: 'string', default: '0' },
  },
});
const writes = Number(values.writes);
const duration = Number(values.duration);
const connections = Number(values.connections);

function sandbox(i: number): SandboxRecord {
  const now = new Date().toISOString();
  return {
    id: crypto.randomUUID(),
    owner_id: `acct-${i % 50}`,
    status: 'queued',
    repo: 'bench/app',
    branch: 'main',
    pr_url: null,
    twin_names: ['github', 'stripe'],
    scenario_id: null,
    scenario_prompt: null,
    ttl_minutes: 60,
    twin_admin_token: 'twinadm_bench',
    seed: null,
    seed_notes: [],
    env: { FEATURE: 'on' },
    app_url: null,
    twins: {},
    env_vars: {},
    error: null,
    created_at: now,
    updated_at: now,
    expires_at: now,
    ended_at: null,
  };
}

async function measureAt(count: number) {
  const dir = await mkdtemp(join(tmpdir(), 'twinbox-store-bench-'));
  try {
    const store = await openLowdbStore(dir);
    for (let i = 0; i < count; i += 200) {
      await Promise.all(
        Array.from({ length: Math.min(200, count - i) }, (_, j) => store.sandboxes.insert(sandbox(i + j))),
      );
    }
    const samples: number[] = [];
    for (let i = 0; i < writes; i++) {
      const record = sandbox(i);
      const started = performance.now();
      await store.sandboxes.insert(record);
      samples.push(performance.now() - started);
    }
    const started = performance.now();
    const reopened = await openLowdbStore(dir);
    const loadMs = performance.now() - started;
    await reopened.close();
    samples.sort((a, b) => a - b);
    const at = (q: number) => samples[Math.min(samples.length - 1, Math.floor(q * samples.length))]!;
    return {
      count,
      p50: at(0.5),
      p99: at(0.99),
      mean: samples.reduce((a, b) => a + b, 0) / samples.length,
      loadMs,
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

if (!values['api-only']) {
  await measureAt(100); // warm-up: JIT and file-system caches, discarded
  const small = await measureAt(100);
  const large = await measureAt(10_000);
  console.log(`\nStore benchmark: ${writes} sequential durable inserts each, ${new Date().toISOString()}\n`);
  console.log('| stored sandboxes | mean ms/write | p50 ms | p99 ms | load all at start, ms |');
  console.log('|---:|---:|---:|---:|---:|');
  for (const row of [small, large]) {
    console.log(
      `| ${row.count} | ${row.mean.toFixed(3)} | ${row.p50.toFixed(3)} | ${row.p99.toFixed(3)} | ${row.loadMs.toFixed(0)} |`,
    );
  }
  console.log(`\nmean write cost at 10,000 / at 100: ${(large.mean / small.mean).toFixed(2)}x`);
}

const { rows: api, selectOnePerSecond } = await measureApiOnBothStores(
  duration,
  connections,
  Number(values.rounds),
  {
    before: values.before,
    route: values.route,
    prefill: { ended: Number(values['prefill-ended']), live: Number(values['prefill-live']) },
  },
);
/** The side each PostgreSQL row is compared with. */
const base = values.before ? 'postgres before' : 'lowdb';
const compared = values.before ? 'after / before' : 'PostgreSQL / lowdb';
console.log(
  `\nAPI on each store: ${duration}s per row, ${connections} connections, API key, ${new Date().toISOString()}\n`,
);
console.log(`| route | round | store | req/s | p50 ms | p99 ms | errors | ${compared} req/s |`);
console.log('|---|---:|---|---:|---:|---:|---:|---:|');
const ratios = new Map<string, number[]>();
for (const row of api) {
  const other = api.find((o) => o.route === row.route && o.round === row.round && o.store === base)!;
  const ratio = row.store === 'postgres' ? row.rps / other.rps : undefined;
  if (ratio !== undefined) ratios.set(row.route, [...(ratios.get(row.route) ?? []), ratio]);
  console.log(
    `| ${row.route} | ${row.round} | ${row.store} | ${Math.round(row.rps)} | ${row.p50} | ${row.p99} | ${row.errors} | ${ratio === undefined ? '' : `${ratio.toFixed(2)}x`} |`,
  );
}
console.log('');
for (const [route, list] of ratios) {
  const sorted = [...list].sort((a, b) => a - b);
  console.log(
    `${route}: ${compared} per round ${list.map((r) => r.toFixed(2)).join(', ')}; median ${sorted[Math.floor(sorted.length / 2)]!.toFixed(2)}x`,
  );
}
// Rounds follow one another on one Twinbox: a rate that falls round over round grows with what is stored.
for (const route of new Set(api.map((row) => row.route))) {
  for (const side of new Set(api.map((row) => row.store))) {
    const list = api.filter((row) => row.route === route && row.store === side);
    console.log(
      `${route}, ${side}: each round / round 1: ${list.map((row) => (row.rps / list[0]!.rps).toFixed(2)).join(', ')}`,
    );
  }
}
console.log(
  `\nBaseline, same run: ${Math.round(selectOnePerSecond)} PostgreSQL round trips a second (SELECT 1 over ${connections} pooled connections); load average ${loadavg()
    .map((n) => n.toFixed(2))
    .join(' ')} at the end`,
);
