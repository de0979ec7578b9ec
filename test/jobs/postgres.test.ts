import t, { type Test } from 'tap';
import { spawn } from 'node:child_process';
import pg from 'pg';
import { openPostgresStore } from '../../server/store/postgres/store.ts';
import { bossSchemaFor, PostgresJobQueue, type PostgresJobQueueOptions } from '../../server/jobs/postgres.ts';
import type { Job, JobData } from '../../server/jobs/queue.ts';
import { REPO_ROOT } from '../helpers/process.ts';
import { freshSchema, postgresSkip } from '../helpers/postgres.ts';
import { gate, jobQueueContract, silent, until, type Place } from './contract.ts';

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

// A lease as long as production's: a job run again before it ran out was taken back, not expired.
const LONG_LEASE_SECONDS = 60;

type Extra = Partial<Omit<PostgresJobQueueOptions, 'url' | 'logger'>>;

/** A Store and a PostgresJobQueue on `url`, as a Twinbox process opens them; closed at the test's end. */
async function openOn(t: Test, url: string, extra: Extra = {}) {
  const store = await openPostgresStore({ url });
  const queue = await PostgresJobQueue.open({
    url,
    logger: silent,
    leaseSeconds: LONG_LEASE_SECONDS,
    ...extra,
  }).catch(async (error: unknown) => {
    await store.close();
    throw error;
  });
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await queue.stop();
    await store.close();
  };
  t.teardown(close);
  return { store, queue, close };
}

async function sql(t: Test, url: string) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  t.teardown(() => client.end());
  return client;
}

/** test/jobs/worker.ts in a child process under `identity`: it starts the jobs of `queue`, never ends them. */
async function startWorker(t: Test, url: string, queue: string, identity: string) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/jobs/worker.ts'], {
    cwd: REPO_ROOT,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      TWINBOX_DATABASE_URL: url,
      TWINBOX_JOB_LEASE_SECONDS: String(LONG_LEASE_SECONDS),
      JOB_QUEUE: queue,
      JOB_IDENTITY: identity,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise((resolve) => child.on('exit', resolve));
  t.teardown(() => {
    child.kill('SIGKILL');
    return exited;
  });
  await until('the child to start a job', () => /^started /m.test(output), 30_000);
  return {
    output: () => output,
    async kill() {
      child.kill('SIGKILL');
      await exited;
    },
  };
}

/** The pg-boss state of job `id` and the holder job_runs records for it. */
async function jobState(client: pg.Client, schema: string, id: string) {
  const { rows } = await client.query<{ state: string; retry_count: number; worker: string | null }>(
    `SELECT j.state::text AS state, j.retry_count, r.worker
       FROM ${bossSchemaFor(schema)}.job j LEFT JOIN job_runs r ON r.queue = j.name AND r.job_id = j.id
      WHERE j.id = $1`,
    [id],
  );
  return rows[0];
}

t.test('a restart takes back its own runs, and only its own', { skip }, async (t) => {
  t.test(
    'kill -9, then the same identity starts again: the job runs again long before its lease ends',
    async (t) => {
      const { url, schema } = await freshSchema();
      const sender = await openOn(t, url);
      const sent = await sender.queue.send('cut', { n: 1 }, { key: 'cut-1' });
      const identity = 'host-a:/var/lib/twinbox';
      const child = await startWorker(t, url, 'cut', identity);
      t.match(child.output(), `started ${sent.id} 1`, 'the child ran it as attempt 1');
      const client = await sql(t, url);
      t.match(await jobState(client, schema, sent.id), { state: 'active', retry_count: 0, worker: identity });
      await child.kill();

      const restarted = await openOn(t, url, { identity });
      const again: Array<Job<JobData>> = [];
      await restarted.queue.work('cut', { concurrency: 1 }, async (job) => {
        again.push(job);
      });
      // Well within the 60 s lease: only the take-back at start can have made it available.
      await until('the job to run again', () => again.length > 0, 30_000);
      await restarted.queue.idle('cut');
      t.equal(again.length, 1, 'run again, once');
      t.equal(again[0]!.id, sent.id);
      t.equal(again[0]!.attempt, 2, 'as attempt 2');
      t.match(
        await jobState(client, schema, sent.id),
        { state: 'completed', worker: null },
        'its holder record went with its end',
      );
      t.same(await restarted.queue.send('cut', { n: 2 }, { key: 'cut-1' }), { id: sent.id, duplicate: true });
    },
  );

  t.test("a live process's running job is not taken: not by another identity, nor by its own", async (t) => {
    const { url, schema } = await freshSchema();
    const sender = await openOn(t, url);
    const sent = await sender.queue.send('live', { n: 1 });
    const identity = 'host-a:/var/lib/twinbox';
    const child = await startWorker(t, url, 'live', identity);
    const client = await sql(t, url);

    const other = await openOn(t, url, { identity: 'host-b:/var/lib/twinbox' });
    t.same(
      await other.queue.reclaim(),
      { reclaimed: 0, held: 0 },
      'another identity has nothing to take back',
    );
    // Two live processes under one identity (a misconfiguration): the running one's lock is held.
    const twin = await openOn(t, url, { identity });
    t.same(
      await twin.queue.reclaim(),
      { reclaimed: 0, held: 1 },
      'the same identity sees it held by a live incarnation',
    );
    const runs: Array<Job<JobData>> = [];
    await other.queue.work('live', { concurrency: 1 }, async (job) => {
      runs.push(job);
    });
    await twin.queue.work('live', { concurrency: 1 }, async (job) => {
      runs.push(job);
    });
    t.match(
      await jobState(client, schema, sent.id),
      { state: 'active', retry_count: 0, worker: identity },
      "still the child's run",
    );
    t.equal(child.output().match(/^started /gm)?.length, 1, 'the child runs it, alone');

    // Once that process is dead, its twin takes it back (at its next look, or here).
    await child.kill();
    await until(
      "the dead incarnation's lock to be free",
      async () => (await twin.queue.reclaim()).held === 0,
      30_000,
    );
    await until('the job to run again', () => runs.length > 0, 30_000);
    await twin.queue.idle('live');
    t.equal(runs.length, 1, 'run again once, by one of the two');
    t.equal(runs[0]!.attempt, 2);
  });

  t.test('a run taken back from an incarnation that lost its lock cannot complete the job', async (t) => {
    const { url, schema } = await freshSchema();
    const identity = 'host-a:/var/lib/twinbox';
    // A long poll: the first queue does not reopen its presence connection during the test.
    const first = await openOn(t, url, { identity, pollSeconds: 600 });
    const client = await sql(t, url);
    const firstRun = gate();
    const firstStarted = gate();
    let firstRuns = 0;
    await first.queue.work('fenced', { concurrency: 1 }, async () => {
      firstRuns++;
      firstStarted.open();
      await firstRun.promise;
    });
    const sent = await first.queue.send('fenced', { n: 1 });
    await firstStarted.promise;
    // What PostgreSQL sees when a process dies: its sessions end, the incarnation's lock is freed.
    const { rows } = await client.query<{ pid: number }>(
      `SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 1
          AND ((classid::bigint << 32) | objid::bigint) = $1::bigint`,
      [first.queue.incarnation],
    );
    t.equal(rows.length, 1, 'the first incarnation holds its lock');
    await client.query('SELECT pg_terminate_backend($1)', [rows[0]!.pid]);

    const second = await openOn(t, url, { identity });
    await until(
      'the run to be taken back',
      async () => {
        await second.queue.reclaim();
        return (await jobState(client, schema, sent.id))?.state === 'retry';
      },
      30_000,
    );
    const secondRun = gate();
    const secondRuns: Array<Job<JobData>> = [];
    await second.queue.work('fenced', { concurrency: 1 }, async (job) => {
      secondRuns.push(job);
      await secondRun.promise;
    });
    await until('the second run to start', () => secondRuns.length === 1, 30_000);
    t.equal(secondRuns[0]!.attempt, 2);

    // The first run ends now and tries to complete the job: refused, the second run holds it.
    firstRun.open();
    await first.close();
    t.match(await jobState(client, schema, sent.id), { state: 'active', retry_count: 1, worker: identity });
    secondRun.open();
    await second.queue.idle('fenced');
    t.match(await jobState(client, schema, sent.id), { state: 'completed', retry_count: 1 });
    t.equal(secondRuns.length, 1);
    t.equal(firstRuns, 1);
  });
});

/** The columns pg-boss 10 moves from `job` to `archive` (its plans.js `archive`). */
const ARCHIVED =
  'id, name, priority, data, state, retry_limit, retry_count, retry_delay, retry_backoff, start_after, ' +
  'started_on, singleton_key, singleton_on, expire_in, created_on, completed_on, keep_until, dead_letter, ' +
  'policy, output';

t.test('job_keys retention', { skip }, async (t) => {
  const { url, schema } = await freshSchema();
  const { queue } = await openOn(t, url, { keyRetentionDays: 30 });
  const client = await sql(t, url);
  const boss = bossSchemaFor(schema);
  await queue.work('kept', { concurrency: 2 }, async () => {});
  const ids: Record<string, string> = {};
  for (const key of ['old-gone', 'old-completed', 'old-archived', 'fresh-gone'])
    ids[key] = (await queue.send('kept', { key }, { key })).id;
  await queue.idle('kept');
  // Never worked: waits in the queue (no worker for it here).
  ids['old-waiting'] = (await queue.send('waiting', {}, { key: 'old-waiting' })).id;
  await client.query(
    `UPDATE job_keys SET created_at = now() - interval '40 days' WHERE key = ANY($1::text[])`,
    [['old-gone', 'old-completed', 'old-archived', 'old-waiting']],
  );
  // What pg-boss's retention does: completed jobs go to its archive, then are deleted.
  await client.query(
    `WITH moved AS (DELETE FROM ${boss}.job WHERE id = $1 RETURNING *)
     INSERT INTO ${boss}.archive (${ARCHIVED}) SELECT ${ARCHIVED} FROM moved`,
    [ids['old-archived']],
  );
  await client.query(`DELETE FROM ${boss}.job WHERE id = ANY($1::uuid[])`, [
    [ids['old-gone'], ids['fresh-gone']],
  ]);

  const { keysPruned } = await queue.maintain();
  t.equal(keysPruned, 1, 'one key pruned');
  const left = await client.query<{ key: string }>('SELECT key FROM job_keys ORDER BY key');
  t.same(
    left.rows.map((row) => row.key),
    ['fresh-gone', 'old-archived', 'old-completed', 'old-waiting'],
    'only the key older than the retention whose job pg-boss deleted',
  );
  t.same(
    await queue.send('kept', {}, { key: 'fresh-gone' }),
    { id: ids['fresh-gone'], duplicate: true },
    'a fresh duplicate is still refused',
  );
  t.same(await queue.send('kept', {}, { key: 'old-completed' }), {
    id: ids['old-completed'],
    duplicate: true,
  });
  t.same(await queue.send('kept', {}, { key: 'old-archived' }), { id: ids['old-archived'], duplicate: true });
  t.same(await queue.send('waiting', {}, { key: 'old-waiting' }), {
    id: ids['old-waiting'],
    duplicate: true,
  });
  const again = await queue.send('kept', {}, { key: 'old-gone' });
  t.equal(again.duplicate, false, 'past the retention, the key is accepted as new');
  await queue.idle('kept');
  t.same(await queue.maintain(), { keysPruned: 0, runsSwept: 0 }, 'nothing more to prune');
});
