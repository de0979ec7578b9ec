import t from 'tap';
import pg from 'pg';
import { openPostgresStore } from '../../server/store/postgres/store.ts';
import { bossSchemaFor, PostgresJobQueue } from '../../server/jobs/postgres.ts';
import { freshSchema, postgresSkip } from '../helpers/postgres.ts';
import { jobQueueContract, silent, type Place } from './contract.ts';

// Short leases, so a killed worker's job is handed out again within seconds.
const LEASE_SECONDS = 2;
const skip = await postgresSkip();

async function freshPlace(): Promise<Place & { url: string; schema: string }> {
  const { url, schema } = await freshSchema();
  return {
    url,
    schema,
    env: { TWINBOX_DATABASE_URL: url, TWINBOX_JOB_LEASE_SECONDS: String(LEASE_SECONDS) },
    async open() {
      const store = await openPostgresStore({ url });
      try {
        const queue = await PostgresJobQueue.open({ url, logger: silent, leaseSeconds: LEASE_SECONDS });
        return {
          store,
          queue,
          async close() {
            await queue.stop();
            await store.close();
          },
        };
      } catch (error) {
        await store.close();
        throw error;
      }
    },
  };
}

t.test('the JobQueue contract on PostgreSQL (pg-boss)', { skip }, async (t) => {
  jobQueueContract(t, { oneProcessAtATime: false, fresh: () => freshPlace() });
});

t.test('pg-boss beside the Store', { skip }, async (t) => {
  t.test('its own schema beside the migrated one; two processes starting at once on it', async (t) => {
    const place = await freshPlace();
    const [first, second] = await Promise.all([place.open(), place.open()]);
    t.teardown(async () => {
      await first.close();
      await second.close();
    });
    const client = new pg.Client({ connectionString: place.url });
    await client.connect();
    t.teardown(() => client.end());
    const boss = bossSchemaFor(place.schema);
    t.equal(boss, `${place.schema}_pgboss`);
    const { rows } = await client.query<{ table_schema: string; table_name: string }>(
      `SELECT table_schema, table_name FROM information_schema.tables
        WHERE table_schema IN ($1, $2) AND table_name IN ('job', 'version', 'job_keys', 'jobs', 'sandboxes')`,
      [place.schema, boss],
    );
    t.same(
      rows.map((row) => `${row.table_schema === boss ? 'pg-boss' : 'twinbox'}.${row.table_name}`).sort(),
      ['pg-boss.job', 'pg-boss.version', 'twinbox.job_keys', 'twinbox.jobs', 'twinbox.sandboxes'],
    );
    const sent = await first.queue.send('both', { n: 1 });
    const seen: string[] = [];
    await second.queue.work('both', { concurrency: 1 }, async (job) => {
      seen.push(job.id);
    });
    await second.queue.idle('both');
    t.same(seen, [sent.id], 'a job one sends, the other works');
  });

  t.test('schema names pg-boss accepts', async (t) => {
    t.equal(bossSchemaFor('public'), 'pgboss');
    t.equal(bossSchemaFor('twinbox'), 'twinbox_pgboss');
    t.match(bossSchemaFor('Twin-Box'), /^pgboss_[0-9a-f]{16}$/);
    t.match(bossSchemaFor('x'.repeat(50)), /^pgboss_[0-9a-f]{16}$/);
  });

  t.test('many processes on one queue: each job is worked by exactly one of them', async (t) => {
    const place = await freshPlace();
    const processes = await Promise.all([place.open(), place.open(), place.open()]);
    t.teardown(async () => {
      for (const each of processes) await each.close();
    });
    const runs = new Map<string, number>();
    const byProcess = [0, 0, 0];
    for (const [n, each] of processes.entries()) {
      await each.queue.work('shared', { concurrency: 2 }, async (job) => {
        runs.set(job.id, (runs.get(job.id) ?? 0) + 1);
        byProcess[n]!++;
        await new Promise((resolve) => setTimeout(resolve, 20));
      });
    }
    const sent = [];
    for (let n = 0; n < 30; n++) sent.push(await processes[n % 3]!.queue.send('shared', { n }));
    await processes[0]!.queue.idle('shared');
    t.equal(runs.size, 30, 'every job ran');
    t.ok(
      [...runs.values()].every((count) => count === 1),
      'none twice',
    );
    t.equal(
      byProcess.reduce((a, b) => a + b),
      30,
    );
  });

  t.test('a job running longer than its lease keeps it (heartbeats) and runs once', async (t) => {
    const place = await freshPlace();
    const a = await place.open();
    const b = await place.open();
    t.teardown(async () => {
      await a.close();
      await b.close();
    });
    let runs = 0;
    const handler = async () => {
      runs++;
      // Three leases: without renewal pg-boss would expire the job and the other process take it.
      await new Promise((resolve) => setTimeout(resolve, LEASE_SECONDS * 3 * 1000));
    };
    await a.queue.work('slow', { concurrency: 1 }, handler);
    await a.queue.send('slow', { n: 1 });
    await new Promise((resolve) => setTimeout(resolve, 200));
    await b.queue.work('slow', { concurrency: 1 }, handler);
    await a.queue.idle('slow');
    t.equal(runs, 1);
  });
});
