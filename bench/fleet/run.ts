/**
 * Fleet benchmark: SANDBOXES (50) sandboxes of the zero-dep example (twins github + stripe) running at
 * once on this machine, each with full isolation, and how Twinbox's API answers meanwhile. Twinbox runs as
 * its own process (server/main.ts, as in production); the load generator and the GitHub twin it deploys
 * from run in this one.
 *
 * 1. Baseline, 0 sandboxes running: authenticated GET /sandboxes/{id} of an ended sandbox, with autocannon
 *    (saturating) and a bounded sequential loop (latency without queueing).
 * 2. Create SANDBOXES sandboxes at once; time until all are ready; failures with their causes.
 * 3. The same measures while all of them run (plus GET of a running sandbox, a bigger body); memory of the
 *    machine, of Twinbox, of the apps and pods.
 *
 *   npx tsx bench/fleet/run.ts [--duration 8] [--connections 10]
 *   SANDBOXES=50, TWINBOX_DEPLOY_CONCURRENCY (default: Twinbox's own, 4)
 */
import autocannon from 'autocannon';
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { cpus, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { request } from 'node:http';
import { exampleFiles, machineUsedKb, mib, ms, pct, ratio, rssKb, sourceTwin, withSteal } from '../kit.ts';

const { values } = parseArgs({
  options: { duration: { type: 'string', default: '8' }, connections: { type: 'string', default: '10' } },
});
const duration = Number(values.duration);
const connections = Number(values.connections);
const COUNT = Number(process.env.SANDBOXES ?? 50);
const READY_TIMEOUT_MS = 15 * 60_000;
const LOOP_REQUESTS = 1000;
const LOOP_MAX_MS = 30_000;
const root = new URL('../..', import.meta.url).pathname;

interface View {
  sandbox_id: string;
  status: string;
  error: string | null;
  app_url: string | null;
  isolation?: string | null;
}

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
    TWINBOX_SANDBOX_QUOTA_PRO: String(Math.max(100, COUNT * 2)),
    ...(process.env.TWINBOX_DEPLOY_CONCURRENCY
      ? { TWINBOX_DEPLOY_CONCURRENCY: process.env.TWINBOX_DEPLOY_CONCURRENCY }
      : {}),
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
await new Promise((resolve) => setTimeout(resolve, 500));
const key = (await readFile(join(dataDir, 'dev-api-key'), 'utf8')).trim();
const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
const payload = JSON.stringify({ repo: 'octocat/shop', branch: 'main', twins: ['github', 'stripe'] });

async function api<T>(method: string, path: string, body?: string): Promise<T> {
  const response = await fetch(`${base}${path}`, { method, headers, body });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${text}`);
  return (text ? JSON.parse(text) : undefined) as T;
}

/** Every sandbox of the dev account, newest first (one request: the list holds up to 100). */
async function list(): Promise<View[]> {
  return (await api<{ sandboxes: View[] }>('GET', '/sandboxes?limit=100')).sandboxes;
}

async function settle(ids: string[], onReady: (id: string, at: number) => void): Promise<Map<string, View>> {
  const settled = new Map<string, View>();
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (settled.size < ids.length && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 250));
    for (const view of await list()) {
      if (!ids.includes(view.sandbox_id) || settled.has(view.sandbox_id)) continue;
      if (view.status === 'queued' || view.status === 'building') continue;
      settled.set(view.sandbox_id, view);
      if (view.status === 'ready') onReady(view.sandbox_id, performance.now());
    }
  }
  return settled;
}

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
    const deadline = performance.now() + LOOP_MAX_MS;
    for (let i = 0; i < LOOP_REQUESTS && performance.now() < deadline; i++) times.push(await timedGet(path));
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

/** RSS (KiB) of Twinbox and of every process in its session that is not Twinbox: apps, pods, helpers. */
async function processRss(): Promise<{ twinbox: number; others: number; count: number }> {
  const twinboxKb = await rssKb(twinbox.pid!);
  let others = 0;
  let count = 0;
  for (const pid of await readdir('/proc')) {
    if (!/^\d+$/.test(pid) || Number(pid) === twinbox.pid) continue;
    try {
      const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      // Children of Twinbox's process tree: apps and pods run in their own process groups, so walk parents.
      if (!(await descendsFrom(Number(pid), twinbox.pid!, Number(fields[1])))) continue;
      others += await rssKb(Number(pid));
      count++;
    } catch {
      // exited meanwhile
    }
  }
  return { twinbox: twinboxKb, others, count };
}

async function descendsFrom(pid: number, ancestor: number, parent: number): Promise<boolean> {
  for (let depth = 0; depth < 20 && parent > 1; depth++) {
    if (parent === ancestor) return true;
    const stat = await readFile(`/proc/${parent}/stat`, 'utf8').catch(() => '');
    if (!stat) return false;
    parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  }
  return pid === ancestor;
}

/** Status of the app at its app_url through the router (Host header: Node does not resolve *.localhost). */
function routed(appUrl: string): Promise<number> {
  const url = new URL(appUrl);
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path: '/healthz', headers: { host: url.host } }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', () => resolve(0));
    req.end();
  });
}

const created: string[] = [];
try {
  console.log(
    `# Fleet benchmark: ${COUNT} sandboxes, ${cpus().length} vCPU, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}, ${new Date().toISOString()}`,
  );
  // The probe: an ended sandbox, so both measures GET the very same record and body.
  const probe = (await api<{ sandbox_id: string }>('POST', '/sandboxes', payload)).sandbox_id;
  created.push(probe);
  const [probeView] = [...(await settle([probe], () => {})).values()];
  console.log(
    `probe sandbox: ${probeView?.status} isolation=${probeView?.isolation} ${probeView?.error ?? ''}`,
  );
  await api('DELETE', `/sandboxes/${probe}`);
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const usedIdle = await machineUsedKb();
  const rssIdle = await processRss();
  const idle = await measure(`/sandboxes/${probe}`);

  const t0 = performance.now();
  const ids: string[] = [];
  for (let i = 0; i < COUNT; i++) {
    const id = (await api<{ sandbox_id: string }>('POST', '/sandboxes', payload)).sandbox_id;
    ids.push(id);
    created.push(id);
  }
  const readyAt: number[] = [];
  // While the deploys run: one timed GET every 50 ms, how the API answers a caller meanwhile.
  const during: number[] = [];
  let deploying = true;
  const probing = (async () => {
    while (deploying) {
      during.push(await timedGet(`/sandboxes/${probe}`));
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  })();
  const settled = await settle(ids, (_id, at) => readyAt.push(at - t0));
  const allSettledMs = performance.now() - t0;
  deploying = false;
  await probing;
  const views = ids.map((id) => settled.get(id));
  const ready = views.filter((v) => v?.status === 'ready') as View[];
  const failed = views.filter((v) => v && v.status !== 'ready') as View[];
  const pending = views.filter((v) => !v).length;
  console.log(
    `${ready.length}/${COUNT} ready, ${failed.length} failed, ${pending} still pending; all settled after ${ms(allSettledMs)}; ` +
      `ready p50 ${ms(pct(readyAt, 50))}, last ${ms(Math.max(...readyAt))} after the first POST; ` +
      `isolation ${JSON.stringify([...new Set(ready.map((v) => v.isolation))])}`,
  );
  console.log(
    `GET /sandboxes/{id} while the ${COUNT} deploys ran (one every 50 ms, ${during.length} requests): ` +
      `p50 ${during.length ? pct(during, 50).toFixed(2) : '-'} ms, p99 ${during.length ? pct(during, 99).toFixed(2) : '-'} ms, ` +
      `max ${during.length ? Math.max(...during).toFixed(2) : '-'} ms`,
  );
  for (const view of failed) {
    console.log(`  FAILED ${view.sandbox_id}: ${view.status}: ${view.error}`);
    const logs = await fetch(`${base}/sandboxes/${view.sandbox_id}/logs`, { headers }).then((r) => r.text());
    console.log(logs.trimEnd().split('\n').slice(-15).join('\n').replace(/^/gm, '    | '));
  }
  const answering = (await Promise.all(ready.map((v) => routed(v.app_url!)))).filter((s) => s === 200).length;
  console.log(`apps answering GET /healthz through the router: ${answering}/${ready.length}`);

  await new Promise((resolve) => setTimeout(resolve, 2000));
  const usedLoaded = await machineUsedKb();
  const rssLoaded = await processRss();
  const loaded = await measure(`/sandboxes/${probe}`);
  const loadedLive = ready[0] ? await measure(`/sandboxes/${ready[0].sandbox_id}`) : undefined;
  const stillReady = (await list()).filter((v) => ids.includes(v.sandbox_id) && v.status === 'ready').length;
  console.log(`still ready after the measures: ${stillReady}/${ready.length}`);

  // The baseline again once every sandbox has ended: a drift of the machine during the run shows here.
  const t1 = performance.now();
  await Promise.all(ids.map((id) => api('DELETE', `/sandboxes/${id}`)));
  console.log(`${ids.length} DELETEs at once, all answered after ${ms(performance.now() - t1)}`);
  await new Promise((resolve) => setTimeout(resolve, 2000));
  const rssAfter = await processRss();
  const after = await measure(`/sandboxes/${probe}`);
  const baseline = {
    rps: (idle.rps + after.rps) / 2,
    p50: (idle.p50 + after.p50) / 2,
    p99: (idle.p99 + after.p99) / 2,
    loopP50: (idle.loopP50 + after.loopP50) / 2,
    loopP99: (idle.loopP99 + after.loopP99) / 2,
  };

  console.log(
    `\n| GET /sandboxes/{id} (API key) | req/s | p50 ms | p99 ms | errors | loop p50 ms | loop p99 ms | steal |`,
  );
  console.log('|---|---:|---:|---:|---:|---:|---:|---:|');
  const row = (name: string, m: Measure) =>
    console.log(
      `| ${name} | ${Math.round(m.rps)} | ${m.p50} | ${m.p99} | ${m.errors} | ${m.loopP50.toFixed(2)} | ${m.loopP99.toFixed(2)} | ${(m.steal * 100).toFixed(0)}% |`,
    );
  row('0 sandboxes running (baseline, before), an ended sandbox', idle);
  row(`${ready.length} sandboxes running, the same ended sandbox`, loaded);
  if (loadedLive) row(`${ready.length} sandboxes running, a running sandbox (larger body)`, loadedLive);
  row('0 sandboxes running (baseline, after all ended), the same ended sandbox', after);
  console.log(
    `\nratios ${ready.length} running / 0 running (same request; baseline = mean of before and after): ` +
      `req/s ${ratio(loaded.rps, baseline.rps)}, ` +
      `p99 ${ratio(loaded.p99, baseline.p99)}, loop p50 ${ratio(loaded.loopP50, baseline.loopP50)}, ` +
      `loop p99 ${ratio(loaded.loopP99, baseline.loopP99)}`,
  );
  console.log(
    `memory in use on the machine (MemTotal - MemAvailable): before Twinbox ${mib(usedBefore)}, ` +
      `Twinbox idle ${mib(usedIdle)}, ${ready.length} running ${mib(usedLoaded)} ` +
      `(+${mib(usedLoaded - usedIdle)}, ${mib((usedLoaded - usedIdle) / Math.max(1, ready.length))} a sandbox)`,
  );
  console.log(
    `RSS: Twinbox ${mib(rssIdle.twinbox)} idle, ${mib(rssLoaded.twinbox)} with ${ready.length} running; ` +
      `its child processes (apps, pods, helpers; shared pages counted in each) ${mib(rssIdle.others)} in ${rssIdle.count} idle, ` +
      `${mib(rssLoaded.others)} in ${rssLoaded.count} with ${ready.length} running, ` +
      `${mib(rssAfter.others)} in ${rssAfter.count} after all ended (Twinbox ${mib(rssAfter.twinbox)})`,
  );
} finally {
  // Whatever an interrupted run left (a DELETE of an ended sandbox changes nothing).
  for (const id of created) await api('DELETE', `/sandboxes/${id}`).catch(() => {});
  twinbox.kill('SIGTERM');
  await Promise.race([twinboxExited, new Promise((resolve) => setTimeout(resolve, 60_000))]);
  await gh.close();
  await rm(dataDir, { recursive: true, force: true });
}
