/**
 * Deploy benchmark: time from POST /sandboxes to `ready` for the zero-dep example (twins github + stripe),
 * with full isolation (own network namespace, pod, bubblewrap, cgroups) and, as the same-run baseline,
 * with TWINBOX_SANDBOX_ISOLATION=off (pod on the host's network, no bubblewrap). Per mode: the first
 * deploy on a fresh Twinbox (cold), DEPLOYS-1 sequential deploys each started once the spare pod is up
 * (warm), then DEPLOYS at once; per-step breakdown, memory of each app and pod, and every failure with
 * its cause from the sandbox's log.
 *   node --import tsx bench/deploy/run.ts            DEPLOYS=20 by default
 */
import '../../test/helpers/sandbox-hosts.ts';
import { cpus, totalmem } from 'node:os';
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
const payload = { repo: 'octocat/shop', branch: 'main', twins: ['github', 'stripe'] };
const steps = ['source', 'twins', 'profile', 'start'] as const;

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

/** The app answers through the router at its app_url (what a user opens). */
async function checkRouted(run: Deployed): Promise<string> {
  const response = await fetch(`${run.record.app_url}/healthz`);
  return `${response.status} ${await response.text()}`;
}

async function mode(
  gh: Awaited<ReturnType<typeof sourceTwin>>,
  label: 'off' | 'full',
): Promise<{ warm: Summary; cold: number; burst: Summary; burstAllMs: number }> {
  const bt = await benchTwinbox(gh, {
    TWINBOX_DEPLOY_CONCURRENCY: String(N),
    ...(label === 'off' ? { TWINBOX_SANDBOX_ISOLATION: 'off' } : {}),
  });
  try {
    console.log(`\n## isolation ${label} (${N} deploys, TWINBOX_DEPLOY_CONCURRENCY=${N})`);
    await bt.spareReady();
    const sequential: Deployed[] = [];
    for (let i = 0; i < N; i++) sequential.push(await bt.deployWarm(payload));
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
    return { warm, cold: cold.p50, burst, burstAllMs };
  } finally {
    await bt.close();
  }
}

const gh = await sourceTwin({ shop: await exampleFiles('zero-dep') });
try {
  console.log(
    `# Deploy benchmark: ${cpus().length} vCPU, ${(totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}, ${new Date().toISOString()}`,
  );
  const off = await mode(gh, 'off');
  const full = await mode(gh, 'full');
  console.log('\n| POST→ready | off (baseline) | full | full / off |');
  console.log('|---|---:|---:|---:|');
  console.log(`| cold | ${ms(off.cold)} | ${ms(full.cold)} | ${ratio(full.cold, off.cold)} |`);
  console.log(
    `| warm p50 | ${ms(off.warm.p50)} | ${ms(full.warm.p50)} | ${ratio(full.warm.p50, off.warm.p50)} |`,
  );
  console.log(
    `| warm p95 | ${ms(off.warm.p95)} | ${ms(full.warm.p95)} | ${ratio(full.warm.p95, off.warm.p95)} |`,
  );
  console.log(
    `| ${N} at once p50 | ${ms(off.burst.p50)} | ${ms(full.burst.p50)} | ${ratio(full.burst.p50, off.burst.p50)} |`,
  );
  console.log(
    `| ${N} at once p95 | ${ms(off.burst.p95)} | ${ms(full.burst.p95)} | ${ratio(full.burst.p95, off.burst.p95)} |`,
  );
  console.log(
    `| ${N} at once, all settled | ${ms(off.burstAllMs)} | ${ms(full.burstAllMs)} | ${ratio(full.burstAllMs, off.burstAllMs)} |`,
  );
  console.log(`| ${N} at once, ready | ${off.burst.ready}/${N} | ${full.burst.ready}/${N} | |`);
} finally {
  await gh.close();
}
