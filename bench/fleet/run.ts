/**
 * Fleet benchmark (issue 24 part 6): many sandboxes of the zero-dep example (twins github + stripe), each
 * with full isolation, running at once on this machine, one fleet size after another in the same Twinbox
 * process, so the small fleets are the baseline of the big one. Twinbox runs as its own process
 * (server/main.ts, as in production); the load generator and the GitHub twin it deploys from run in this
 * one.
 *
 * Per fleet size N (default 1, 50, 100):
 * 1. N `POST /sandboxes` at once; time until all are ready; failures with their causes and log tails.
 * 2. Every ready sandbox answers through its app URL (the router): `GET /data.json`, whose answer needs
 *    the app and both of its twins (the app reads the GitHub and Stripe twins of its own pod).
 * 3. Memory from the kernel: the cgroup of each app (named by its sandbox id) and of each pod
 *    (`pod-<slot>`): v1 `memory.usage_in_bytes` and `memory.stat` (rss, cache, shmem), v2
 *    `memory.current` and `memory.stat` (anon, file, shmem). Beside it, from /proc: the RSS and PSS
 *    (proportional: a page shared by k processes counts 1/k in each) of the processes in those cgroups,
 *    Twinbox's own RSS, and the machine's used memory (MemTotal - MemAvailable) before and after.
 * 4. All N deleted at once; the next size starts once their cgroups are gone.
 *
 *   npx tsx bench/fleet/run.ts [--sizes 1,50,100] [--api] [--ready-timeout 30]
 *   --ready-timeout: minutes a fleet may take to settle before the rest is reported as pending.
 *   --api: also measure GET /sandboxes/{id} with autocannon with 0 and with the largest fleet running.
 *   TWINBOX_* settings in the environment (TWINBOX_DEPLOY_CONCURRENCY, ...) are handed to Twinbox.
 */
import autocannon from 'autocannon';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { request } from 'node:http';
import { exampleFiles, machineUsedKb, mib, ms, pct, ratio, rssKb, sourceTwin, withSteal } from '../kit.ts';
import { instanceOf } from '../../server/deploy/confinement/leftovers.ts';

const { values } = parseArgs({
  options: {
    sizes: { type: 'string', default: process.env.FLEET_SIZES ?? '1,50,100' },
    api: { type: 'boolean', default: false },
    'ready-timeout': { type: 'string', default: '30' },
    duration: { type: 'string', default: '8' },
    connections: { type: 'string', default: '10' },
  },
});
const SIZES = values.sizes!.split(',').map(Number);
if (!SIZES.length || SIZES.some((n) => !Number.isInteger(n) || n < 1 || n > 1000))
  throw new Error(`--sizes: positive integers up to 1000, comma-separated (got ${values.sizes})`);
const duration = Number(values.duration);
const connections = Number(values.connections);
const LARGEST = Math.max(...SIZES);
const READY_TIMEOUT_MS = Number(values['ready-timeout']) * 60_000;
const root = new URL('../..', import.meta.url).pathname;

interface View {
  sandbox_id: string;
  status: string;
  error: string | null;
  app_url: string | null;
  isolation?: string | null;
}

const load = () =>
  loadavg()
    .map((n) => n.toFixed(2))
    .join(' ');
const gh = await sourceTwin({ shop: await exampleFiles('zero-dep') });
const dataDir = await mkdtemp(join(tmpdir(), 'twinbox-bench-fleet-'));
const usedBefore = await machineUsedKb();
const twinbox = spawn(process.execPath, ['--import', 'tsx', 'server/main.ts'], {
  cwd: root,
  env: {
    PATH: process.env.PATH,
    PORT: '0',
    TWINBOX_DATA_DIR: dataDir,
    LOG_LEVEL: 'warn',
    GITHUB_API_URL: gh.baseUrl,
    GITHUB_TOKEN: gh.token,
    GITHUB_OAUTH_URL: gh.baseUrl,
    // The account's plan allows 50; the machine is what is measured here, as bench/api does.
    TWINBOX_SANDBOX_QUOTA_PRO: String(Math.max(100, LARGEST * 2)),
    // Twinbox's settings given to this run (TWINBOX_DEPLOY_CONCURRENCY, TWINBOX_HEALTH_TIMEOUT_MS, ...),
    // except the ones above, which the benchmark owns.
    ...Object.fromEntries(
      Object.entries(process.env).filter(
        ([name]) =>
          name.startsWith('TWINBOX_') && !['TWINBOX_DATA_DIR', 'TWINBOX_SANDBOX_QUOTA_PRO'].includes(name),
      ),
    ),
  },
  stdio: ['ignore', 'pipe', 'inherit'],
});
const twinboxExited = new Promise((resolve) => twinbox.once('exit', resolve));

const port = await new Promise<number>((resolve, reject) => {
  let out = '';
  twinbox.stdout!.on('data', (chunk: Buffer) => {
    out += chunk.toString();
    const match = /listening on http:\/\/[^:]+:(\d+)/.exec(out);
    if (match) resolve(Number(match[1]));
  });
  twinbox.once('exit', (code) => reject(new Error(`Twinbox exited with ${code}`)));
});
const base = `http://127.0.0.1:${port}`;
// The dev key is written once the store is open, which may be after "listening" on a loaded machine.
async function devKey(): Promise<string> {
  for (const deadline = Date.now() + 120_000; ;) {
    const key = await readFile(join(dataDir, 'dev-api-key'), 'utf8').catch(() => '');
    if (key.trim()) return key.trim();
    if (Date.now() > deadline) throw new Error('Twinbox wrote no dev-api-key within 120 s');
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}
const key = await devKey().catch((error: unknown) => {
  twinbox.kill('SIGTERM');
  throw error;
});
const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
const payload = JSON.stringify({ repo: 'octocat/shop', branch: 'main', twins: ['github', 'stripe'] });

async function api<T>(method: string, path: string, body?: string): Promise<T> {
  const response = await fetch(`${base}${path}`, { method, headers, body });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text}`);
  return (text ? JSON.parse(text) : undefined) as T;
}

/** The dev account's sandboxes in `status`, newest first (the list pages by 100). */
async function list(status?: string): Promise<View[]> {
  const all: View[] = [];
  let cursor: string | undefined;
  for (;;) {
    const query = `limit=100${status ? `&status=${status}` : ''}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
    const page = await api<{ sandboxes: View[]; next_cursor?: string | null }>('GET', `/sandboxes?${query}`);
    all.push(...page.sandboxes);
    if (!page.next_cursor || !page.sandboxes.length) return all;
    cursor = page.next_cursor;
  }
}

/**
 * Waits until each of `ids` has left queued and building. Polls only the sandboxes still in those states
 * (and reads one view when a sandbox leaves them): listing every sandbox twice a second would cost
 * Twinbox, on the 2 cores the fleet is measured on, a share that grows with the fleet.
 */
async function settle(ids: string[], onReady: (id: string, at: number) => void): Promise<Map<string, View>> {
  const settled = new Map<string, View>();
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (settled.size < ids.length && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 500));
    const unsettled = new Set(
      [...(await list('queued')), ...(await list('building'))].map((v) => v.sandbox_id),
    );
    const at = performance.now();
    for (const id of ids) {
      if (settled.has(id) || unsettled.has(id)) continue;
      const view = await api<View>('GET', `/sandboxes/${id}`);
      // Between the two lists a sandbox may have moved from queued to building: not settled.
      if (view.status === 'queued' || view.status === 'building') continue;
      settled.set(id, view);
      if (view.status === 'ready') onReady(id, at);
    }
  }
  return settled;
}

// --- Memory from the kernel -------------------------------------------------------------------------

/** Twinbox's sandbox cgroups live in `<its own cgroup>/twinbox/<instance>/` (confinement/cgroups.ts). */
async function memoryParent(): Promise<{ version: 'v1' | 'v2'; dir: string } | undefined> {
  const instance = instanceOf(dataDir);
  const own = await readFile(`/proc/${twinbox.pid}/cgroup`, 'utf8');
  if (existsSync('/sys/fs/cgroup/cgroup.controllers')) {
    const path =
      own
        .split('\n')
        .find((l) => l.startsWith('0::'))
        ?.slice(3) ?? '/';
    return { version: 'v2', dir: join('/sys/fs/cgroup', path, 'twinbox', instance) };
  }
  const line = own.split('\n').find((l) => /^\d+:([^:]*,)?memory(,[^:]*)?:/.test(l));
  if (!line) return undefined;
  return { version: 'v1', dir: join('/sys/fs/cgroup/memory', line.split(':')[2]!, 'twinbox', instance) };
}

interface GroupMemory {
  name: string;
  /** What the kernel charges the cgroup (v1 usage_in_bytes, v2 memory.current), KiB. */
  chargedKb: number;
  /** Anonymous memory (v1 rss, v2 anon), KiB. */
  anonKb: number;
  /** Page cache, tmpfs included (v1 cache, v2 file), KiB. */
  fileKb: number;
  /** tmpfs and shared memory, part of fileKb, KiB. */
  shmemKb: number;
  rssKb: number;
  pssKb: number;
  processes: number;
}

function stat(text: string, key: string): number {
  return Number(new RegExp(`^${key} (\\d+)$`, 'm').exec(text)?.[1] ?? 0) / 1024;
}

/** Pss of one process in KiB (smaps_rollup), 0 when it is gone. */
async function pssKb(pid: number): Promise<number> {
  try {
    return Number(/^Pss:\s+(\d+)/m.exec(await readFile(`/proc/${pid}/smaps_rollup`, 'utf8'))?.[1] ?? 0);
  } catch {
    return 0;
  }
}

async function groupMemory(version: 'v1' | 'v2', dir: string, name: string): Promise<GroupMemory> {
  const path = join(dir, name);
  const memStat = await readFile(join(path, 'memory.stat'), 'utf8').catch(() => '');
  const charged =
    version === 'v1'
      ? Number(await readFile(join(path, 'memory.usage_in_bytes'), 'utf8').catch(() => '0')) / 1024
      : Number(await readFile(join(path, 'memory.current'), 'utf8').catch(() => '0')) / 1024;
  // A process's threads are listed in `tasks`, its processes in `cgroup.procs`.
  const pids = (await readFile(join(path, 'cgroup.procs'), 'utf8').catch(() => ''))
    .split('\n')
    .filter((l) => /^\d+$/.test(l))
    .map(Number);
  let rss = 0;
  let pss = 0;
  for (const pid of pids) {
    rss += await rssKb(pid);
    pss += await pssKb(pid);
  }
  return {
    name,
    chargedKb: charged,
    anonKb: stat(memStat, version === 'v1' ? 'rss' : 'anon'),
    fileKb: stat(memStat, version === 'v1' ? 'cache' : 'file'),
    shmemKb: stat(memStat, 'shmem'),
    rssKb: rss,
    pssKb: pss,
    processes: pids.length,
  };
}

/** The processes of one cgroup: what each is and where its memory is (smaps_rollup), for the write-up. */
async function breakdown(group: string): Promise<string[]> {
  const parent = await memoryParent();
  if (!parent) return [];
  const pids = (await readFile(join(parent.dir, group, 'cgroup.procs'), 'utf8').catch(() => ''))
    .split('\n')
    .filter((l) => /^\d+$/.test(l));
  const lines: string[] = [];
  for (const pid of pids) {
    const rollup = await readFile(`/proc/${pid}/smaps_rollup`, 'utf8').catch(() => '');
    const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(rollup)?.[1] ?? 0);
    const cmdline = (await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => ''))
      .split('\0')
      .filter(Boolean)
      .map((arg) => arg.replace(/^.*\/(?=[^/]+$)/, ''))
      .slice(0, 3)
      .join(' ');
    lines.push(
      `${cmdline.padEnd(40)} RSS ${mib(field('Rss'))}, PSS ${mib(field('Pss'))} ` +
        `(anon ${mib(field('Pss_Anon'))}, file ${mib(field('Pss_File'))}, shmem ${mib(field('Pss_Shmem'))})`,
    );
  }
  return lines;
}

async function sandboxCgroups(): Promise<{ apps: GroupMemory[]; pods: GroupMemory[] }> {
  const parent = await memoryParent();
  if (!parent) throw new Error('no memory cgroup of Twinbox found: this benchmark needs cgroups in use');
  const names = (await readdir(parent.dir, { withFileTypes: true }))
    .filter((e) => e.isDirectory())
    .map((e) => e.name);
  const groups = await Promise.all(names.map((name) => groupMemory(parent.version, parent.dir, name)));
  return {
    apps: groups.filter((g) => !g.name.startsWith('pod-')),
    pods: groups.filter((g) => g.name.startsWith('pod-')),
  };
}

async function cgroupCount(): Promise<number> {
  const parent = await memoryParent();
  if (!parent) return 0;
  return (await readdir(parent.dir, { withFileTypes: true })).filter((e) => e.isDirectory()).length;
}

/**
 * Memory per sandbox: its app's cgroup and its pod's. The spare pods (started ahead of demand, not yet a
 * sandbox's) are left out by counting the pods' mean once per app.
 */
function perSandbox(f: { apps: GroupMemory[]; pods: GroupMemory[] }, field: 'chargedKb' | 'pssKb'): number {
  if (!f.apps.length) return 0;
  return sum(f.apps, field) / f.apps.length + sum(f.pods, field) / Math.max(1, f.pods.length);
}

const sum = (groups: GroupMemory[], field: keyof Omit<GroupMemory, 'name'>) =>
  groups.reduce((total, g) => total + g[field], 0);
const p50 = (groups: GroupMemory[], field: keyof Omit<GroupMemory, 'name'>) =>
  groups.length
    ? pct(
        groups.map((g) => g[field]),
        50,
      )
    : 0;

// --- The API under load (--api) ---------------------------------------------------------------------

interface Measure {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  loopP50: number;
  loopP99: number;
  steal: number;
}

/** A GET through a fresh keep-alive-less request, timed: latency of one request on an idle client. */
function timedGet(path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const req = request(`${base}${path}`, { headers }, (res) => {
      res.resume();
      res.on('end', () =>
        res.statusCode === 200 ? resolve(performance.now() - t0) : reject(new Error(`${res.statusCode}`)),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

async function measure(path: string): Promise<Measure> {
  const { result, steal } = await withSteal(async () => {
    await autocannon({ url: `${base}${path}`, headers, duration: 3, connections }); // warm-up
    const run = await autocannon({ url: `${base}${path}`, headers, duration, connections });
    const times: number[] = [];
    const deadline = performance.now() + 30_000;
    for (let i = 0; i < 1000 && performance.now() < deadline; i++) times.push(await timedGet(path));
    return { run, times };
  });
  return {
    rps: result.run.requests.average,
    p50: result.run.latency.p50,
    p99: result.run.latency.p99,
    errors: result.run.errors + result.run.non2xx,
    loopP50: pct(result.times, 50),
    loopP99: pct(result.times, 99),
    steal,
  };
}

/**
 * `GET /data.json` of the app through the router (Host header: Node does not resolve *.localhost): true
 * when the app answered with what it read from both of its twins.
 */
function answers(appUrl: string): Promise<boolean> {
  const url = new URL(appUrl);
  return new Promise((resolve) => {
    const req = request(
      { host: '127.0.0.1', port, path: '/data.json', headers: { host: url.host } },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => {
          try {
            const data = JSON.parse(body) as {
              github?: { login?: string };
              stripe?: { customers?: unknown[] };
            };
            resolve(
              res.statusCode === 200 &&
                data.github?.login === 'octocat' &&
                Array.isArray(data.stripe?.customers),
            );
          } catch {
            resolve(false);
          }
        });
      },
    );
    req.setTimeout(30_000, () => req.destroy());
    req.on('error', () => resolve(false));
    req.end();
  });
}

interface Fleet {
  size: number;
  ready: number;
  failed: number;
  pending: number;
  answering: number;
  allReadyMs: number;
  readyP50Ms: number;
  apps: GroupMemory[];
  pods: GroupMemory[];
  twinboxRssKb: number;
  machineBeforeKb: number;
  machineLoadedKb: number;
  machineAfterKb: number;
  deleteMs: number;
  load: string;
  api?: Measure;
}

async function runFleet(size: number): Promise<Fleet> {
  const machineBeforeKb = await machineUsedKb();
  const t0 = performance.now();
  const ids = await Promise.all(
    Array.from(
      { length: size },
      async () => (await api<{ sandbox_id: string }>('POST', '/sandboxes', payload)).sandbox_id,
    ),
  );
  created.push(...ids);
  const readyAt: number[] = [];
  const settled = await settle(ids, (_id, at) => readyAt.push(at - t0));
  const allReadyMs = performance.now() - t0;
  const views = ids.map((id) => settled.get(id));
  const ready = views.filter((v) => v?.status === 'ready') as View[];
  const failed = views.filter((v) => v && v.status !== 'ready') as View[];
  const pending = views.filter((v) => !v).length;
  console.log(
    `\n## ${size} at once: ${ready.length}/${size} ready, ${failed.length} failed, ${pending} pending; ` +
      `all settled after ${ms(allReadyMs)}, ready p50 ${ms(pct(readyAt.length ? readyAt : [0], 50))}; ` +
      `isolation ${JSON.stringify([...new Set(ready.map((v) => v.isolation))])}; load ${load()}`,
  );
  for (const view of failed) {
    console.log(`  FAILED ${view.sandbox_id}: ${view.status}: ${view.error}`);
    const logs = await fetch(`${base}/sandboxes/${view.sandbox_id}/logs`, { headers }).then((r) => r.text());
    console.log(logs.trimEnd().split('\n').slice(-15).join('\n').replace(/^/gm, '    | '));
  }
  // Sequentially: each answer is the app's and its twins', not a queue of 100 at the router.
  let answering = 0;
  const answerMs: number[] = [];
  for (const view of ready) {
    const t = performance.now();
    if (await answers(view.app_url!)) answering++;
    answerMs.push(performance.now() - t);
  }
  console.log(
    `apps answering GET /data.json (app + both twins) through the router: ${answering}/${ready.length}, ` +
      `p50 ${pct(answerMs.length ? answerMs : [0], 50).toFixed(1)} ms, max ${Math.max(0, ...answerMs).toFixed(1)} ms`,
  );

  await new Promise((resolve) => setTimeout(resolve, 3000));
  const machineLoadedKb = await machineUsedKb();
  const { apps, pods } = await sandboxCgroups();
  const twinboxRssKb = await rssKb(twinbox.pid!);
  const busiestPod = [...pods].sort((a, b) => b.chargedKb - a.chargedKb)[0];
  for (const [label, group] of [
    ['an app', apps[0]?.name],
    ['the largest pod', busiestPod?.name],
  ] as const) {
    if (!group) continue;
    console.log(`processes of ${label} (${group}):`);
    for (const line of await breakdown(group)) console.log(`  ${line}`);
  }
  const loadNow = load();
  const apiMeasure = values.api && size === LARGEST ? await measure(`/sandboxes/${ids[0]}`) : undefined;
  const stillReady = (await list('ready')).filter((v) => ids.includes(v.sandbox_id)).length;
  console.log(`still ready after the measures: ${stillReady}/${ready.length}`);

  const t1 = performance.now();
  await Promise.all(ids.map((id) => api('DELETE', `/sandboxes/${id}`)));
  const deleteMs = performance.now() - t1;
  // The cleanup finishes after the answers: wait until only the spare pods' cgroups are left.
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline && (await cgroupCount()) > pods.length - ready.length) {
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  await new Promise((resolve) => setTimeout(resolve, 2000));
  const machineAfterKb = await machineUsedKb();
  return {
    size,
    ready: ready.length,
    failed: failed.length,
    pending,
    answering,
    allReadyMs,
    readyP50Ms: pct(readyAt.length ? readyAt : [0], 50),
    apps,
    pods,
    twinboxRssKb,
    machineBeforeKb,
    machineLoadedKb,
    machineAfterKb,
    deleteMs,
    load: loadNow,
    api: apiMeasure,
  };
}

const created: string[] = [];
try {
  console.log(
    `# Fleet benchmark: sizes ${SIZES.join(', ')}, ${cpus().length} vCPU, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, ` +
      `Node ${process.version}, ${new Date().toISOString()}, load ${load()}`,
  );
  const parent = await memoryParent();
  console.log(`sandbox cgroups: ${parent?.version} ${parent?.dir}`);
  // Twinbox idle, its spare pod started: what every fleet's memory is counted from.
  const spareDeadline = Date.now() + 60_000;
  while (Date.now() < spareDeadline && (await cgroupCount()) < 1)
    await new Promise((resolve) => setTimeout(resolve, 250));
  await new Promise((resolve) => setTimeout(resolve, 2000));
  const machineIdleKb = await machineUsedKb();
  const twinboxIdleKb = await rssKb(twinbox.pid!);
  const idleApi = values.api
    ? await (async () => {
        const probe = (await api<{ sandbox_id: string }>('POST', '/sandboxes', payload)).sandbox_id;
        created.push(probe);
        await settle([probe], () => {});
        return measure(`/sandboxes/${probe}`);
      })()
    : undefined;

  const fleets: Fleet[] = [];
  for (const size of SIZES) fleets.push(await runFleet(size));

  console.log(
    `\nmachine used memory (MemTotal - MemAvailable): before Twinbox ${mib(usedBefore)}, Twinbox idle with its spare pod ${mib(machineIdleKb)}; ` +
      `Twinbox RSS idle ${mib(twinboxIdleKb)}`,
  );
  console.log(
    '\n| sandboxes at once | ready | answering | all ready after | ready p50 | per sandbox: app + pod cgroups (charged) | app p50 | pod p50 | pod anon / file / shmem p50 | per sandbox PSS (app + pod) | machine used +, per sandbox | Twinbox RSS | load |',
  );
  console.log('|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|');
  for (const f of fleets) {
    const perSandboxCharged = perSandbox(f, 'chargedKb');
    const perSandboxPss = perSandbox(f, 'pssKb');
    const machineDelta = f.machineLoadedKb - f.machineBeforeKb;
    console.log(
      `| ${f.size} | ${f.ready}/${f.size} | ${f.answering}/${f.ready} | ${ms(f.allReadyMs)} | ${ms(f.readyP50Ms)} | ` +
        `${mib(perSandboxCharged)} | ${mib(p50(f.apps, 'chargedKb'))} | ${mib(p50(f.pods, 'chargedKb'))} | ` +
        `${mib(p50(f.pods, 'anonKb'))} / ${mib(p50(f.pods, 'fileKb'))} / ${mib(p50(f.pods, 'shmemKb'))} | ` +
        `${mib(perSandboxPss)} | +${mib(machineDelta)}, ${mib(machineDelta / Math.max(1, f.ready))} | ${mib(f.twinboxRssKb)} | ${f.load} |`,
    );
  }
  console.log(
    '\n| sandboxes | cgroups (apps / pods) | app: charged / anon / file / RSS / PSS p50 | pod: charged / anon / file / RSS / PSS p50 | processes per app / pod | DELETE all answered after | machine used after the DELETEs |',
  );
  console.log('|---:|---|---|---|---|---:|---:|');
  for (const f of fleets) {
    const row = (g: GroupMemory[]) =>
      ['chargedKb', 'anonKb', 'fileKb', 'rssKb', 'pssKb'].map((k) => mib(p50(g, k as 'rssKb'))).join(' / ');
    console.log(
      `| ${f.size} | ${f.apps.length} / ${f.pods.length} | ${row(f.apps)} | ${row(f.pods)} | ${p50(f.apps, 'processes')} / ${p50(f.pods, 'processes')} | ${ms(f.deleteMs)} | ${mib(f.machineAfterKb)} |`,
    );
  }
  const small = fleets[0]!;
  const big = fleets[fleets.length - 1]!;
  console.log(
    `\nratios ${big.size} / ${small.size} at once (same run): per-sandbox charged memory ${ratio(perSandbox(big, 'chargedKb'), perSandbox(small, 'chargedKb'))}, ` +
      `time until all ready ${ratio(big.allReadyMs, small.allReadyMs)} for ${big.size / small.size}x the sandboxes`,
  );
  if (idleApi && big.api) {
    console.log(
      `GET /sandboxes/{id} (autocannon, ${connections} connections): 0 running ${Math.round(idleApi.rps)} req/s p99 ${idleApi.p99} ms, ` +
        `${big.ready} running ${Math.round(big.api.rps)} req/s p99 ${big.api.p99} ms (${ratio(big.api.rps, idleApi.rps)}); ` +
        `single requests p50 ${idleApi.loopP50.toFixed(2)} vs ${big.api.loopP50.toFixed(2)} ms`,
    );
  }
} finally {
  // Whatever an interrupted run left (a DELETE of an ended sandbox changes nothing).
  for (const id of created) await api('DELETE', `/sandboxes/${id}`).catch(() => {});
  twinbox.kill('SIGTERM');
  await Promise.race([twinboxExited, new Promise((resolve) => setTimeout(resolve, 60_000))]);
  await gh.close();
  await rm(dataDir, { recursive: true, force: true });
}
