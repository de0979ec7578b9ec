/**
 * Deploy benchmark: time from POST /sandboxes to `ready` for the zero-dep example (twins github + stripe),
 * with full isolation (own network namespace, pod, bubblewrap, cgroups) and with
 * TWINBOX_SANDBOX_ISOLATION=off (pod on the host's network, no bubblewrap). The baseline, in the same run:
 * the same app as `node server.js` on the host, timed from spawn to its first HTTP answer, one bare start
 * before each warm deploy (rounds alternating). Per mode: the first deploy on a fresh Twinbox, posted as
 * soon as it listens (cold: it waits for the first pod), DEPLOYS-1 sequential deploys each started once the
 * spare pod is up (warm), then DEPLOYS at once; per-step breakdown, memory of each app and pod, and every
 * failure with its cause from the sandbox's log.
 *   node --import tsx bench/deploy/run.ts            DEPLOYS=20 by default; MODES=full to skip `off`;
 *   HEALTH_PATH=/healthz to have the sandbox checked on the path the baseline is timed on;
 *   POD_BUNDLE=reused to start Twinbox with its pod bundle already made (as every start but a data
 *   directory's first), else each fresh data directory's start bundles the pod first
 */
import '../../test/helpers/sandbox-hosts.ts';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { request } from 'node:http';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../../server/deploy/ports.ts';
import { bundlePod } from '../../server/deploy/pods/pod-bundle.ts';
import {
  benchTwinbox,
  exampleFiles,
  groupRssKb,
  logTail,
  mib,
  ms,
  pct,
  ratio,
  sourceTwin,
  type BenchTwinbox,
  type Deployed,
} from '../kit.ts';

const N = Number(process.env.DEPLOYS ?? 20);
const MODES = (process.env.MODES ?? 'off,full').split(',') as Array<'off' | 'full'>;
const ZERO_DEP = fileURLToPath(new URL('../../examples/zero-dep/', import.meta.url));
const payload = { repo: 'octocat/shop', branch: 'main', twins: ['github', 'stripe'] };
// `health` is part of `start`: from the app's spawn to its first answer.
const steps = ['source', 'twins', 'profile', 'start', 'health'] as const;

interface Summary {
  p50: number;
  p95: number;
  ready: number;
  failed: number;
}

function report(bt: BenchTwinbox, label: string, runs: Deployed[]): Summary {
  const ready = runs.filter((r) => r.record.status === 'ready');
  const times = ready.map((r) => r.ms);
  const summary = {
    p50: times.length ? pct(times, 50) : NaN,
    p95: times.length ? pct(times, 95) : NaN,
    ready: ready.length,
    failed: runs.length - ready.length,
  };
  console.log(
    `  ${label}: ${ready.length}/${runs.length} ready, POST→ready p50=${ms(summary.p50)} p95=${ms(summary.p95)} max=${ms(Math.max(...times))}`,
  );
  const timing = (id: string) => bt.tb.engine!.deployer.timings.get(id) ?? {};
  const line = steps.map((step) => {
    const values = ready.map((r) => timing(r.id)[step] ?? 0);
    return `${step} ${pct(values, 50)}/${pct(values, 95)}`;
  });
  // Queueing, taking a pod, making the workspace and the store writes: everything outside the steps.
  const outside = ready.map((r) => r.ms - (timing(r.id).total ?? 0));
  console.log(
    `    steps p50/p95 ms: ${line.join(' | ')} | outside the steps ${pct(outside, 50).toFixed(0)}/${pct(outside, 95).toFixed(0)}`,
  );
  return summary;
}

async function explainFailures(bt: BenchTwinbox, runs: Deployed[]): Promise<void> {
  for (const run of runs.filter((r) => r.record.status !== 'ready')) {
    console.log(`    FAILED ${run.id}: ${run.record.status}: ${run.record.error}`);
    console.log((await logTail(bt.tb, run.id, 15)).replace(/^/gm, '      | '));
  }
}

/** Resolves once http://127.0.0.1:port/healthz answers (any status), rejects on a refused connection. */
function answers(port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/healthz', agent: false }, (res) => {
      res.resume();
      resolve();
    });
    req.on('error', reject);
    req.end();
  });
}

/**
 * The baseline: the zero-dep app as `node server.js` on the host, from spawn to its first HTTP answer,
 * probed every millisecond (no isolation, no pod, no twins: what the app itself costs to start).
 */
async function bareStart(): Promise<number> {
  const port = await freePort();
  const began = performance.now();
  const child = spawn(process.execPath, ['server.js'], {
    cwd: ZERO_DEP,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', PORT: String(port) },
    stdio: 'ignore',
  });
  const exited = once(child, 'exit');
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`node server.js exited with ${child.exitCode}`);
      try {
        await answers(port);
        return performance.now() - began;
      } catch {
        await new Promise((resolve) => setTimeout(resolve, 1));
      }
    }
  } finally {
    child.kill();
    await exited;
  }
}

/** The app answers through the router at its app_url (what a user opens). */
async function checkRouted(run: Deployed): Promise<string> {
  const response = await fetch(`${run.record.app_url}/healthz`);
  return `${response.status} ${await response.text()}`;
}

async function mode(
  gh: Awaited<ReturnType<typeof sourceTwin>>,
  label: 'off' | 'full',
): Promise<{
  warm: Summary;
  bare: Summary;
  cold: number;
  startMs: number;
  burst: Summary;
  burstAllMs: number;
}> {
  const began = performance.now();
  const bt = await benchTwinbox(gh, {
    ...(podBundleDir ? { TWINBOX_POD_BUNDLE_DIR: podBundleDir } : {}),
    TWINBOX_DEPLOY_CONCURRENCY: String(N),
    ...(label === 'off' ? { TWINBOX_SANDBOX_ISOLATION: 'off' } : {}),
  });
  const startMs = performance.now() - began;
  try {
    console.log(`\n## isolation ${label} (${N} deploys, TWINBOX_DEPLOY_CONCURRENCY=${N})`);
    console.log(`  Twinbox start (createTwinbox to listening, an account and a key): ${ms(startMs)}`);
    // Posted at once: the first deploy waits for the first pod, as after any Twinbox start.
    const sequential: Deployed[] = [await bt.deploy(payload)];
    const bare: number[] = [];
    for (let i = 1; i < N; i++) {
      await bt.spareReady();
      // The spare is up and warmed; what that left running (the pod's collection of its warm-up garbage)
      // is given a moment, so that the baseline does not share the CPU with it (it did, by 7-10 ms).
      await new Promise((resolve) => setTimeout(resolve, 300));
      bare.push(await bareStart());
      sequential.push(await bt.deployWarm(payload));
    }
    const bareSummary = { p50: pct(bare, 50), p95: pct(bare, 95), ready: bare.length, failed: 0 };
    console.log(
      `  baseline, \`node server.js\` on the host, spawn to first answer (${bare.length}, alternating with the warm deploys): p50=${ms(bareSummary.p50)} p95=${ms(bareSummary.p95)}`,
    );
    const isolations = [...new Set(sequential.map((r) => r.record.isolation))];
    console.log(`  sandbox records: isolation ${JSON.stringify(isolations)}`);
    const cold = report(bt, 'cold (first deploy on a fresh Twinbox)', sequential.slice(0, 1));
    const warm = report(bt, 'warm, sequential (spare pod up)', sequential.slice(1));
    await explainFailures(bt, sequential);
    const first = sequential.find((r) => r.record.status === 'ready');
    if (first) console.log(`  GET app_url/healthz through the router: ${await checkRouted(first)}`);

    const live = sequential.filter((r) => r.record.status === 'ready');
    const apps = await Promise.all(live.map((r) => groupRssKb(bt.tb.engine!.deployer.appPid(r.id)!)));
    const pods = await Promise.all(
      live.map((r) => groupRssKb(bt.tb.engine!.deployer.podOf(r.id)!.process!.pid)),
    );
    console.log(
      `  memory per sandbox (RSS of the process group): app p50 ${mib(pct(apps, 50))} max ${mib(Math.max(...apps))}; ` +
        `pod (twins) p50 ${mib(pct(pods, 50))} max ${mib(Math.max(...pods))}; ` +
        `Twinbox itself ${mib(process.memoryUsage().rss / 1024)}`,
    );
    // DELETE answers once the sandbox is torn down (app, pod, namespace, workspace).
    const deletes: number[] = [];
    for (const run of sequential) {
      const t = performance.now();
      await bt.del(run.id);
      deletes.push(performance.now() - t);
    }
    console.log(
      `  DELETE (sequential, one ready sandbox each): p50 ${ms(pct(deletes, 50))} max ${ms(Math.max(...deletes))}`,
    );

    await bt.spareReady();
    const t0 = performance.now();
    const parallel = await Promise.all(Array.from({ length: N }, () => bt.deploy(payload)));
    const burstAllMs = performance.now() - t0;
    const burst = report(bt, `${N} at once (per deploy)`, parallel);
    console.log(`    all ${N} settled after ${ms(burstAllMs)}`);
    await explainFailures(bt, parallel);
    await Promise.all(parallel.map((r) => bt.del(r.id)));
    return { warm, bare: bareSummary, cold: cold.p50, startMs, burst, burstAllMs };
  } finally {
    await bt.close();
  }
}

// HEALTH_PATH=/healthz: the sandbox is declared ready on the path the bare baseline is timed on (the
// example's `/healthz` answers without calling anything), through the repository's own .github/twinbox.yml.
// By default Twinbox checks `/`, which in this example calls both twins three times before it answers.
const healthPath = process.env.HEALTH_PATH;
// The pod's bundle made once before any Twinbox starts, in a directory of its own (TWINBOX_POD_BUNDLE_DIR).
const podBundleDir =
  process.env.POD_BUNDLE === 'reused' ? await mkdtemp(join(tmpdir(), 'twinbox-bench-bundle-')) : undefined;
if (podBundleDir) {
  await bundlePod(podBundleDir, { shared: true });
  console.log(`pod bundle: made before the start (POD_BUNDLE=reused), in ${podBundleDir}`);
}
const shopFiles = await exampleFiles('zero-dep');
if (healthPath) shopFiles['.github/twinbox.yml'] = `health_path: ${JSON.stringify(healthPath)}\n`;
const gh = await sourceTwin({ shop: shopFiles });
if (healthPath) console.log(`health path: ${healthPath} (.github/twinbox.yml), not \`/\``);
try {
  console.log(
    `# Deploy benchmark: ${cpus().length} vCPU, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}, ${new Date().toISOString()}`,
  );
  const results: Partial<Record<'off' | 'full', Awaited<ReturnType<typeof mode>>>> = {};
  for (const label of MODES) results[label] = await mode(gh, label);
  console.log(
    `\nload average ${loadavg()
      .map((n) => n.toFixed(2))
      .join(' ')}`,
  );
  console.log('\n| POST→ready | bare `node server.js` (baseline) | off | full | full / bare | target |');
  console.log('|---|---:|---:|---:|---:|---|');
  const { off, full } = results;
  const cell = (value: number | undefined) => (value === undefined ? '-' : ms(value));
  const bare = full?.bare.p50 ?? off?.bare.p50 ?? NaN;
  console.log(
    `| warm p50 | ${ms(bare)} | ${cell(off?.warm.p50)} | ${cell(full?.warm.p50)} | ${full ? ratio(full.warm.p50, bare) : '-'} | ≤ 3x |`,
  );
  const bare95 = full?.bare.p95 ?? off?.bare.p95 ?? NaN;
  console.log(
    `| warm p95 | ${ms(bare95)} | ${cell(off?.warm.p95)} | ${cell(full?.warm.p95)} | ${full ? ratio(full.warm.p95, bare95) : '-'} | |`,
  );
  console.log(
    `| first deploy after a Twinbox start | | ${cell(off?.cold)} | ${cell(full?.cold)} | ${full ? ratio(full.cold, bare) : '-'} | < 1 s |`,
  );
  console.log(`| Twinbox start | | ${cell(off?.startMs)} | ${cell(full?.startMs)} | | |`);
  console.log(`| ${N} at once p50 | | ${cell(off?.burst.p50)} | ${cell(full?.burst.p50)} | | |`);
  console.log(`| ${N} at once p95 | | ${cell(off?.burst.p95)} | ${cell(full?.burst.p95)} | | |`);
  console.log(`| ${N} at once, all settled | | ${cell(off?.burstAllMs)} | ${cell(full?.burstAllMs)} | | |`);
  console.log(
    `| ${N} at once, ready | | ${off ? `${off.burst.ready}/${N}` : '-'} | ${full ? `${full.burst.ready}/${N}` : '-'} | | |`,
  );
} finally {
  await gh.close();
  if (podBundleDir) await rm(podBundleDir, { recursive: true, force: true });
}
