/**
 * The API on each store: authenticated GET /sandboxes/{id}, GET /sandboxes (a page of 20) and
 * POST /sandboxes against a Twinbox process on the embedded store and one on PostgreSQL, same machine,
 * same run, interleaved. Each Twinbox runs as `npm start` does (server/main.ts, its own process); autocannon drives
 * it from this one. PostgreSQL is BENCH_DATABASE_URL (default: the test database on loopback), in a
 * schema made for the run and dropped after it. With `before`, an older tree's Twinbox on PostgreSQL
 * takes the embedded store's place (bench/store/before-after.sh).
 */
import autocannon from 'autocannon';
import pg from 'pg';
import { bossSchemaFor } from '../../server/jobs/postgres.ts';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const root = new URL('../..', import.meta.url).pathname;
const databaseUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** Which Twinbox a row measured: this tree on either store, or an older tree (`before`) on PostgreSQL. */
export type Side = 'lowdb' | 'postgres' | 'postgres before';

export interface ApiRow {
  route: string;
  round: number;
  store: Side;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
}

async function startTwinbox(
  env: Record<string, string>,
  tree = root,
): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'server/main.ts'], {
    cwd: tree,
    env: {
      PATH: process.env.PATH,
      PORT: '0',
      LOG_LEVEL: 'warn',
      TWINBOX_DEPLOY_ENGINE: 'none',
      // The POST row creates thousands of sandboxes; past the plan's quota they would be 403s.
      TWINBOX_SANDBOX_QUOTA_PRO: '100000',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match = /listening on http:\/\/[^:]+:(\d+)/.exec(out);
      if (match) resolve(Number(match[1]));
    });
    child.on('exit', (code) => reject(new Error(`server/main.ts exited with ${code}:\n${out}`)));
  });
  return { child, port };
}

async function measure(options: autocannon.Options, duration: number, connections: number) {
  await autocannon({ ...options, duration: 2, connections }); // warm-up
  const result = await autocannon({ ...options, duration, connections });
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.non2xx,
  };
}

interface Running {
  store: Side;
  base: string;
  headers: Record<string, string>;
  id: string;
  close(): Promise<void>;
}

/** A Twinbox on `store` with 20 sandboxes of the local owner's, ready to be measured. */
async function startOn(store: Side, env: Record<string, string>, tree?: string): Promise<Running> {
  const dataDir = await mkdtemp(join(tmpdir(), 'twinbox-bench-store-'));
  const twinbox = await startTwinbox({ TWINBOX_DATA_DIR: dataDir, ...env }, tree);
  const close = async () => {
    twinbox.child.kill();
    await new Promise((resolve) => twinbox.child.once('exit', resolve));
    await rm(dataDir, { recursive: true, force: true });
  };
  try {
    // The local owner's key, written by the first start outside production (server/bootstrap.ts).
    let key = '';
    for (let i = 0; i < 100 && !key; i++) {
      key = (await readFile(join(dataDir, 'dev-api-key'), 'utf8').catch(() => '')).trim();
      if (!key) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const base = `http://127.0.0.1:${twinbox.port}`;
    let id = '';
    for (let i = 0; i < 20; i++) {
      const created = await fetch(`${base}/sandboxes`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ repo: 'bench/app', branch: 'main' }),
      });
      if (created.status !== 201)
        throw new Error(`POST /sandboxes: ${created.status} ${await created.text()}`);
      id = ((await created.json()) as { sandbox_id: string }).sandbox_id;
    }
    return { store, base, headers, id, close };
  } catch (error) {
    await close();
    throw error;
  }
}

export const routes: Array<{ route: string; options: (on: Running) => autocannon.Options }> = [
  {
    route: 'GET /sandboxes/{id}',
    options: (on) => ({ url: `${on.base}/sandboxes/${on.id}`, headers: on.headers }),
  },
  {
    route: 'GET /sandboxes (20 owned)',
    options: (on) => ({ url: `${on.base}/sandboxes?limit=20`, headers: on.headers }),
  },
  {
    route: 'POST /sandboxes (durable write)',
    options: (on) => ({
      url: `${on.base}/sandboxes`,
      method: 'POST',
      headers: on.headers,
      body: JSON.stringify({ repo: 'bench/app', branch: 'main', env: { A: '1' } }),
    }),
  },
];

/**
 * `SELECT 1` round trips a second over `connections` pooled connections from this process: what the
 * database and the machine allow at best, so a reader can tell how much of a row is the store's own.
 */
async function selectOneRate(duration: number, connections: number): Promise<number> {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: connections });
  try {
    let count = 0;
    const until = performance.now() + duration * 1000;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: connections }, async () => {
        while (performance.now() < until) {
          await pool.query('SELECT 1');
          count++;
        }
      }),
    );
    return count / ((performance.now() - started) / 1000);
  } finally {
    await pool.end();
  }
}

export interface MeasureOptions {
  /**
   * Another tree (an older revision unpacked with `git archive`, sharing node_modules): its Twinbox on
   * PostgreSQL takes lowdb's place, so each pair of rows is before and after a change, same run.
   */
  before?: string;
  /** Only the routes whose name contains this (e.g. `POST`). */
  route?: string;
  /**
   * Sandboxes of the measured account written straight into each PostgreSQL schema before the first
   * round, copies of one it created: `ended` expired ones, each with 2 KB more of `env`, and `live`
   * queued ones as POST makes them. An account that has used Twinbox a while, so a create whose cost
   * grows with the account's rows shows it from round 1. (Live ones are also read by what scans every
   * live sandbox, such as the reaper's sweep each second, in every version alike.)
   */
  prefill?: { ended: number; live: number };
}

/** Sandboxes of the owner of the sandboxes already in `schema` (MeasureOptions.prefill). */
async function prefill(admin: pg.Client, schema: string, { ended, live }: { ended: number; live: number }) {
  await admin.query(
    `INSERT INTO "${schema}".sandboxes (id, data) ` +
      `SELECT 'ended-' || i, s.data || jsonb_build_object('id', 'ended-' || i, ` +
      `'status', 'expired', 'ended_at', s.data -> 'created_at', ` +
      `'env', jsonb_build_object('BLOB', repeat('x', 2048))) ` +
      `FROM (SELECT data FROM "${schema}".sandboxes LIMIT 1) s, generate_series(1, $1) i`,
    [ended],
  );
  await admin.query(
    `INSERT INTO "${schema}".sandboxes (id, data) ` +
      `SELECT 'live-' || i, s.data || jsonb_build_object('id', 'live-' || i) ` +
      `FROM (SELECT data FROM "${schema}".sandboxes WHERE data ->> 'status' = 'queued' LIMIT 1) s, ` +
      `generate_series(1, $1) i`,
    [live],
  );
  await admin.query(`ANALYZE "${schema}".sandboxes`);
}

/**
 * Two Twinboxes, running side by side: by default this tree's on each store, or with `before` an older
 * tree's and this one's, both on PostgreSQL. Each route is measured in `rounds` pairs, back to back
 * (alternating which goes first) before the next route, so a change in the machine's load touches both
 * of a pair alike. Each PostgreSQL Twinbox has a schema of its own, made for the run and dropped after it.
 */
export async function measureApiOnBothStores(
  duration: number,
  connections: number,
  rounds = 3,
  options: MeasureOptions = {},
): Promise<{ rows: ApiRow[]; selectOnePerSecond: number }> {
  const admin = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: 10_000 });
  await admin.connect().catch((error: Error) => {
    throw new Error(
      `PostgreSQL is needed for this benchmark (BENCH_DATABASE_URL=${databaseUrl}): ${error.message}`,
    );
  });
  const schemas: string[] = [];
  const newSchema = async () => {
    const schema = `twinbox_bench_${randomBytes(4).toString('hex')}`;
    schemas.push(schema);
    await admin.query(`CREATE SCHEMA "${schema}"`);
    const url = new URL(databaseUrl);
    url.searchParams.set('options', `-c search_path=${schema}`);
    return url.toString();
  };
  const running: Running[] = [];
  try {
    if (options.before)
      running.push(
        await startOn('postgres before', { TWINBOX_DATABASE_URL: await newSchema() }, options.before),
      );
    else running.push(await startOn('lowdb', {}));
    running.push(await startOn('postgres', { TWINBOX_DATABASE_URL: await newSchema() }));
    // Every PostgreSQL side has a schema: the last one, or both with `before`.
    if (options.prefill) for (const schema of schemas) await prefill(admin, schema, options.prefill);
    const rows: ApiRow[] = [];
    for (const { route, options: request } of routes) {
      if (options.route && !route.includes(options.route)) continue;
      for (let round = 1; round <= rounds; round++) {
        // Which store goes first alternates, so neither always gets the fresher machine.
        const order = round % 2 === 1 ? running : [...running].reverse();
        for (const on of order) {
          rows.push({
            route,
            round,
            store: on.store,
            ...(await measure(request(on), duration, connections)),
          });
        }
      }
    }
    return { rows, selectOnePerSecond: await selectOneRate(duration, connections) };
  } finally {
    for (const on of running) await on.close();
    // pg-boss keeps each Twinbox's jobs in a schema beside its store's (server/jobs/postgres.ts).
    for (const schema of schemas)
      await admin.query(`DROP SCHEMA IF EXISTS "${schema}", "${bossSchemaFor(schema)}" CASCADE`);
    await admin.end();
  }
}
