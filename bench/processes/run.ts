/**
 * Two API processes vs one (issue 14, docs/scaling.md): requests per second of authenticated
 * GET /sandboxes/{id} on PostgreSQL, served by one Twinbox API process, then by two on the same
 * database with the load spread evenly over both (one autocannon per process, half the connections
 * each, run at the same time). Each Twinbox is server/main.ts with TWINBOX_ROLE=api, its own process.
 * Rounds alternate one and two processes so drift of the machine's load hits both alike.
 *
 * Each API process is a host of its own with `--cpus` cores (default 0.25): a cgroup of its own with a
 * hard CPU quota (server/deploy/confinement/cgroups.ts, v1 or v2), as a VM or container of that size would be. On a
 * 2-core machine this is what makes the figure one of scaling: unbounded, one Node process already
 * takes a core and a second one can only take CPU from PostgreSQL and the load generator, which share
 * the rest. `--cpus 0` runs them unbounded.
 *
 *   npx tsx bench/processes/run.ts [--duration 10] [--connections 20] [--rounds 6] [--cpus 0.25]
 */
import autocannon from 'autocannon';
import pg from 'pg';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cpus, loadavg } from 'node:os';
import { writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Cgroups } from '../../server/deploy/confinement/cgroups.ts';

const { values } = parseArgs({
  options: {
    duration: { type: 'string', default: '10' },
    connections: { type: 'string', default: '20' },
    rounds: { type: 'string', default: '6' },
    cpus: { type: 'string', default: '0.25' },
  },
});
const duration = Number(values.duration);
const connections = Number(values.connections);
const rounds = Number(values.rounds);
const cpuQuota = Number(values.cpus);
const root = new URL('../..', import.meta.url).pathname;
const databaseUrl = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const adminToken = randomBytes(24).toString('hex');
// One cgroup per API process ("host"), CPU-capped; memory and pids generous, they are not measured.
const cgroups =
  cpuQuota > 0
    ? Cgroups.open(
        { cpus: cpuQuota, pids: 4096, memoryBytes: 4 * 1024 ** 3 },
        { instance: `bench-processes-${process.pid}` },
      )
    : undefined;
if (cgroups?.version === 'none')
  throw new Error(`--cpus ${cpuQuota} needs cgroups, and they cannot be used here: ${cgroups.reason}`);
let hosts = 0;

async function startApi(url: string): Promise<{ child: ChildProcess; base: string; dataDir: string }> {
  const dataDir = await mkdtemp(join(tmpdir(), 'twinbox-bench-processes-'));
  const child = spawn(process.execPath, ['--import', 'tsx', 'server/main.ts'], {
    cwd: root,
    env: {
      PATH: process.env.PATH,
      PORT: '0',
      LOG_LEVEL: 'warn',
      // development: production wants a GitHub connection per account, beside the point here.
      NODE_ENV: 'development',
      TWINBOX_ROLE: 'api',
      TWINBOX_DATABASE_URL: url,
      TWINBOX_ADMIN_TOKEN: adminToken,
      TWINBOX_DATA_DIR: dataDir,
      TWINBOX_JWT_SECRET: 'bench-processes-jwt-secret-0123456789abcdef',
      TWINBOX_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
      TWINBOX_SANDBOX_QUOTA_PRO: '100000',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  // Joined before it has read a file: all its threads are in the cgroup (cgroup.procs moves the group).
  if (cgroups) for (const procs of cgroups.create(`api-${++hosts}`)) writeFileSync(procs, String(child.pid));
  const base = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match = /listening on (http:\/\/\S+)/.exec(out);
      if (match) resolve(match[1]!);
    });
    child.on('exit', (code) => reject(new Error(`server/main.ts exited with ${code}:\n${out}`)));
  });
  return { child, base, dataDir };
}

async function stop(api: { child: ChildProcess; dataDir: string }): Promise<void> {
  api.child.kill();
  await new Promise((resolve) => api.child.once('exit', resolve));
  await rm(api.dataDir, { recursive: true, force: true });
}

/** Requests per second over `bases` at once, `connections` split evenly among them. */
async function load(bases: string[], path: string, key: string, seconds: number) {
  const results = await Promise.all(
    bases.map((base) =>
      autocannon({
        url: `${base}${path}`,
        headers: { authorization: `Bearer ${key}` },
        connections: Math.max(1, Math.round(connections / bases.length)),
        duration: seconds,
      }),
    ),
  );
  return {
    rps: results.reduce((sum, r) => sum + r.requests.average, 0),
    p50: Math.max(...results.map((r) => r.latency.p50)),
    errors: results.reduce((sum, r) => sum + r.errors + r.non2xx, 0),
  };
}

const schema = `twinbox_bench_processes_${process.pid}`;
const admin = new pg.Pool({ connectionString: databaseUrl, max: 1 });
await admin.query(`CREATE SCHEMA "${schema}"`);
const url = new URL(databaseUrl);
url.searchParams.set('options', `-c search_path=${schema}`);
const apis: Array<{ child: ChildProcess; base: string; dataDir: string }> = [];
try {
  // One after the other: the first applies the migrations.
  apis.push(await startApi(url.toString()));
  apis.push(await startApi(url.toString()));
  const [a, b] = apis as [(typeof apis)[0], (typeof apis)[0]];
  const asAdmin = { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' };
  const account = (await (
    await fetch(`${a.base}/admin/accounts`, {
      method: 'POST',
      headers: asAdmin,
      body: JSON.stringify({ email: `bench-${process.pid}@example.com`, plan: 'pro' }),
    })
  ).json()) as { id: string };
  const { key } = (await (
    await fetch(`${b.base}/admin/accounts/${account.id}/api-keys`, {
      method: 'POST',
      headers: asAdmin,
      body: '{}',
    })
  ).json()) as { key: string };
  let id = '';
  for (let i = 0; i < 20; i++) {
    const created = await fetch(`${a.base}/sandboxes`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ repo: 'bench/app', branch: 'main' }),
    });
    if (created.status !== 201) throw new Error(`POST /sandboxes: ${created.status} ${await created.text()}`);
    id = ((await created.json()) as { sandbox_id: string }).sandbox_id;
  }
  const path = `/sandboxes/${id}`;
  // Warm-up of both (JIT, connection pools): a first measurement without it came out at half speed.
  await load([a.base], path, key, 5);
  await load([b.base], path, key, 5);
  const one: number[] = [];
  const two: number[] = [];
  const rows: string[] = [];
  for (let round = 1; round <= rounds; round++) {
    const single = await load([a.base], path, key, duration);
    const double = await load([a.base, b.base], path, key, duration);
    one.push(single.rps);
    two.push(double.rps);
    rows.push(
      `| ${round} | ${Math.round(single.rps)} (p50 ${single.p50} ms, ${single.errors} errors) | ` +
        `${Math.round(double.rps)} (p50 ${double.p50} ms, ${double.errors} errors) | ${(double.rps / single.rps).toFixed(2)}x |`,
    );
  }
  const best = (values: number[]) => Math.max(...values);
  console.log(
    `\nTwo API processes vs one: authenticated GET /sandboxes/{id} on PostgreSQL, ${connections} connections, ` +
      `${duration} s a measurement, ${cpus().length} CPUs, ` +
      `${cgroups ? `each API process capped at ${cpuQuota} CPU (cgroup ${cgroups.version})` : 'API processes unbounded'}, load average ${loadavg()
        .map((n) => n.toFixed(2))
        .join(' ')}\n`,
  );
  console.log('| round | one process, req/s | two processes, req/s | ratio |');
  console.log('| --- | --- | --- | --- |');
  for (const row of rows) console.log(row);
  // Paired rounds: the median of their ratios is the figure least moved by one disturbed round.
  const ratios = one.map((rps, i) => two[i]! / rps).sort((x, y) => x - y);
  const median = ratios[Math.floor((ratios.length - 1) / 2)]!;
  const sum = (values: number[]) => values.reduce((total, v) => total + v, 0);
  console.log(
    `\nmedian of the rounds' ratios ${median.toFixed(2)}x; all rounds together ${Math.round(sum(one) / rounds)} vs ` +
      `${Math.round(sum(two) / rounds)} req/s, ${(sum(two) / sum(one)).toFixed(2)}x; best of each ` +
      `${Math.round(best(one))} vs ${Math.round(best(two))} req/s, ${(best(two) / best(one)).toFixed(2)}x (goal 1.6x)`,
  );
} finally {
  for (const api of apis) await stop(api).catch(() => {});
  await cgroups?.close();
  await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await admin.end();
}
