/**
 * Job queue benchmark: POST /sandboxes → `ready` for the zero-dep example (twins github + stripe, full
 * isolation) with the deploy job on the embedded queue (lowdb store) and on pg-boss (PostgreSQL store),
 * in one run. Warm: each deploy starts once the spare pod is up, one after the other, so what differs
 * between the two is the store and the queue (the 201 waits for the job's commit; a worker takes it
 * through NOTIFY). Also the enqueue→start latency alone: from the 201 to the deploy's `building`.
 *   node --import tsx bench/jobs/run.ts      DEPLOYS=10 by default, ISOLATION=off for bench/deploy's baseline; PostgreSQL at
 *   TWINBOX_TEST_DATABASE_URL or postgres://postgres@127.0.0.1:5432/test (a schema of its own, dropped)
 */
import '../../test/helpers/sandbox-hosts.ts';
import { cpus, totalmem } from 'node:os';
import pg from 'pg';
import type { SandboxRecord } from '../../server/store/records.ts';
import { bossSchemaFor } from '../../server/jobs/postgres.ts';
import { benchTwinbox, exampleFiles, ms, pct, ratio, sourceTwin } from '../kit.ts';

const N = Number(process.env.DEPLOYS ?? 10);
const DATABASE_URL = process.env.TWINBOX_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const payload = { repo: 'octocat/shop', branch: 'main', twins: ['github', 'stripe'] };
// ISOLATION=off: pods on the host's network, no bubblewrap (bench/deploy's baseline), for a machine too
// loaded for full isolation; the queue's share of the time is the same either way.
const isolation: Record<string, string> =
  process.env.ISOLATION === 'off' ? { TWINBOX_SANDBOX_ISOLATION: 'off' } : {};

interface Figures {
  p50: number;
  p95: number;
  pickup50: number;
  pickup95: number;
  ready: number;
}

async function measure(
  gh: Awaited<ReturnType<typeof sourceTwin>>,
  label: string,
  env: Record<string, string>,
) {
  const bt = await benchTwinbox(gh, { ...isolation, ...env });
  try {
    // When each sandbox went `building`: the job was taken by a worker.
    const building = new Map<string, number>();
    bt.tb.lifecycle.on('change', (record: SandboxRecord) => {
      if (record.status === 'building' && !building.has(record.id))
        building.set(record.id, performance.now());
    });
    const totals: number[] = [];
    const pickups: number[] = [];
    let ready = 0;
    // One deploy first, not counted: the first start of each part (pods, pg-boss's first fetch).
    await bt.del((await bt.deployWarm(payload)).id);
    for (let i = 0; i < N; i++) {
      await bt.spareReady();
      const start = performance.now();
      const run = await bt.deploy(payload);
      if (run.record.status === 'ready') {
        ready++;
        totals.push(run.ms);
        pickups.push(building.get(run.id)! - start);
      } else console.log(`    FAILED ${run.id}: ${run.record.status}: ${run.record.error}`);
      await bt.del(run.id);
    }
    const figures: Figures = {
      p50: pct(totals, 50),
      p95: pct(totals, 95),
      pickup50: pct(pickups, 50),
      pickup95: pct(pickups, 95),
      ready,
    };
    console.log(
      `  ${label}: ${ready}/${N} ready, POST→ready warm p50 ${ms(figures.p50)} p95 ${ms(figures.p95)}; ` +
        `POST→building (201 + job taken) p50 ${ms(figures.pickup50)} p95 ${ms(figures.pickup95)}`,
    );
    return figures;
  } finally {
    await bt.close();
  }
}

const admin = new pg.Client({ connectionString: DATABASE_URL });
await admin.connect();
const schema = `twinbox_bench_jobs_${process.pid}`;
await admin.query(`CREATE SCHEMA "${schema}"`);
const url = new URL(DATABASE_URL);
url.searchParams.set('options', `-c search_path=${schema}`);
const gh = await sourceTwin({ shop: await exampleFiles('zero-dep') });
try {
  console.log(
    `# Job queue benchmark: ${cpus().length} vCPU, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}, ${new Date().toISOString()}, ${N} warm deploys each, isolation ${isolation.TWINBOX_SANDBOX_ISOLATION ?? 'full'}`,
  );
  const embedded = await measure(gh, 'embedded queue (lowdb store)', {});
  const postgres = await measure(gh, 'pg-boss (PostgreSQL store)', { TWINBOX_DATABASE_URL: url.toString() });
  console.log('\n| zero-dep, warm | embedded queue | pg-boss on PostgreSQL | PostgreSQL / embedded |');
  console.log('|---|---:|---:|---:|');
  console.log(
    `| POST→ready p50 | ${ms(embedded.p50)} | ${ms(postgres.p50)} | ${ratio(postgres.p50, embedded.p50)} |`,
  );
  console.log(
    `| POST→ready p95 | ${ms(embedded.p95)} | ${ms(postgres.p95)} | ${ratio(postgres.p95, embedded.p95)} |`,
  );
  console.log(
    `| POST→building p50 | ${ms(embedded.pickup50)} | ${ms(postgres.pickup50)} | ${ratio(postgres.pickup50, embedded.pickup50)} |`,
  );
  console.log(`| ready | ${embedded.ready}/${N} | ${postgres.ready}/${N} | |`);
} finally {
  await gh.close();
  await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await admin.query(`DROP SCHEMA IF EXISTS "${bossSchemaFor(schema)}" CASCADE`);
  await admin.end();
}
