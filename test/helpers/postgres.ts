/**
 * PostgreSQL for tests: a fresh schema per store in the `test` database, so test files run in parallel
 * without seeing each other's rows. Schemas are dropped when the test process's tests end; those left
 * by a process that died are dropped by the next one.
 */
import pg from 'pg';
import tap from 'tap';
import { inCI } from './ci.ts';
import { bossSchemaFor } from '../../server/jobs/postgres.ts';
import { QUEUES } from '../../server/jobs/queue.ts';
import { randomBytes } from 'node:crypto';

/** The database tests use: TWINBOX_TEST_DATABASE_URL, or the machines' own (docs/store.md). */
export const TEST_DATABASE_URL =
  process.env.TWINBOX_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

const PREFIX = 'twinbox_test_';

let admin: pg.Pool | undefined;
const created = new Set<string>();

function adminPool(): pg.Pool {
  if (!admin) {
    admin = new pg.Pool({ connectionString: TEST_DATABASE_URL, max: 2, connectionTimeoutMillis: 10_000 });
    admin.on('error', () => {});
    // After every test of this process: by then each Twinbox and store of it has stopped.
    tap.teardown(async () => {
      const pool = admin!;
      admin = undefined;
      // pg-boss keeps its jobs in a schema beside the store's (server/jobs/postgres.ts bossSchemaFor).
      for (const schema of created)
        await pool.query(`DROP SCHEMA IF EXISTS "${schema}", "${schema}_pgboss" CASCADE`);
      created.clear();
      await pool.end();
    });
  }
  return admin;
}

/**
 * Why PostgreSQL cannot be used here, or undefined when it can. */
export async function postgresMissing(): Promise<string | undefined> {
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL, connectionTimeoutMillis: 10_000 });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.query('SELECT 1');
    return undefined;
  } catch (error) {
    return `PostgreSQL at ${TEST_DATABASE_URL} is not reachable: ${(error as Error).message}`;
  } finally {
    await client.end().catch(() => {});
  }
}

/**
 * The `skip` option of a PostgreSQL test: a developer without PostgreSQL skips; CI has it (.ci/run
 * starts or installs it), so there a missing database fails the test instead.
 */
export async function postgresSkip(): Promise<string | false> {
  if (inCI()) return false;
  return (await postgresMissing()) ?? false;
}

/** The URL of `schema` in the test database: the connection's search_path names it. */
export function schemaUrl(schema: string): string {
  const url = new URL(TEST_DATABASE_URL);
  url.searchParams.set('options', `-c search_path=${schema}`);
  return url.toString();
}

/** Creates a new empty schema and answers its URL; dropped once this process's tests end. */
export async function freshSchema(): Promise<{ schema: string; url: string }> {
  const pool = adminPool();
  if (created.size === 0) await dropOrphans(pool);
  const schema = `${PREFIX}${process.pid}_${randomBytes(4).toString('hex')}`;
  await pool.query(`CREATE SCHEMA "${schema}"`);
  created.add(schema);
  return { schema, url: schemaUrl(schema) };
}

const byDataDir = new Map<string, Promise<string>>();

/**
 * The database URL of a test Twinbox on `dataDir` under TWINBOX_TEST_STORE=postgres: one schema per
 * data directory, so a Twinbox restarted on the same directory finds what the first one wrote.
 */
export function schemaForDataDir(dataDir: string): Promise<string> {
  let url = byDataDir.get(dataDir);
  if (!url) byDataDir.set(dataDir, (url = freshSchema().then((fresh) => fresh.url)));
  return url;
}

/** Runs `sql` in the test database outside any store (to break a schema on purpose, say). */
export async function adminQuery(sql: string): Promise<pg.QueryResult> {
  return adminPool().query(sql);
}

/** Schemas of test processes that no longer run (killed before their teardown). */
async function dropOrphans(pool: pg.Pool): Promise<void> {
  const { rows } = await pool.query<{ name: string }>(
    `SELECT nspname AS name FROM pg_namespace WHERE nspname LIKE '${PREFIX}%'`,
  );
  for (const { name } of rows) {
    const pid = Number(/^twinbox_test_(\d+)_/.exec(name)?.[1]);
    if (!pid || isRunning(pid)) continue;
    await pool.query(`DROP SCHEMA IF EXISTS "${name}" CASCADE`).catch(() => {});
  }
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * The pg-boss job of a GitHub delivery in `schema`: how often it was started (pg-boss counts runs after
 * the first in retry_count) and its state; undefined when no job has that delivery's key.
 */
export async function deliveryJob(
  connectionString: string,
  schema: string,
  deliveryId: string,
): Promise<{ runs: number; state: string } | undefined> {
  const client = new pg.Client({ connectionString });
  await client.connect();
  try {
    const { rows } = await client.query<{ state: string; retry_count: number; started: boolean }>(
      `SELECT j.state, j.retry_count, j.started_on IS NOT NULL AS started
         FROM job_keys k JOIN ${bossSchemaFor(schema)}.job j ON j.name = k.queue AND j.id = k.job_id
        WHERE k.queue = $1 AND k.key = $2`,
      [QUEUES.githubDelivery, deliveryId],
    );
    const job = rows[0];
    if (!job) return undefined;
    return { runs: job.started ? job.retry_count + 1 : 0, state: job.state };
  } finally {
    await client.end();
  }
}
