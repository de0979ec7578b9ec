/**
 * Deploy benchmark: time from POST /sandboxes to `ready` for the zero-dep example (twins github + stripe),
 * 20 sequential deploys (the first is cold: fresh data dir and Twinbox), then 20 at once, with the per-step
 * breakdown the deployer records, and the memory (RSS) of each running app's processes.
 *   node --import tsx bench/deploy/run.ts
 */
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { loadConfig } from '../../server/config.ts';
import { createLogger } from '../../server/logger.ts';
import { createTwinbox } from '../../server/twinbox.ts';
import { startGitHubTwin } from '../../server/twins/github/standalone.ts';

const N = Number(process.env.DEPLOYS ?? 20);

async function exampleFiles(dir: string): Promise<Record<string, string>> {
  const files: Record<string, string> = {};
  for (const name of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (!name.isFile()) continue;
    const path = join(name.parentPath, name.name);
    files[relative(dir, path)] = await readFile(path, 'utf8');
  }
  return files;
}

const pct = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
};

/** RSS of every process in a process group, in KiB (from /proc). */
async function groupRssKb(pgid: number): Promise<number> {
  let total = 0;
  for (const pid of await readdir('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[2]) !== pgid) continue;
      const status = await readFile(`/proc/${pid}/status`, 'utf8');
      total += Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
    } catch {
      // exited meanwhile
    }
  }
  return total;
}

const gh = await startGitHubTwin({ seed: { users: [{ login: 'octocat' }] } });
await gh.createRepo({
  owner: 'octocat',
  name: 'shop',
  files: await exampleFiles(new URL('../../examples/zero-dep', import.meta.url).pathname),
});
const dataDir = await mkdtemp(join(tmpdir(), 'twinbox-bench-deploy-'));
const config = loadConfig({
  NODE_ENV: 'test',
  PORT: '0',
  TWINBOX_DATA_DIR: dataDir,
  LOG_LEVEL: 'silent',
  GITHUB_API_URL: gh.baseUrl,
  GITHUB_TOKEN: gh.token,
  GITHUB_OAUTH_URL: gh.baseUrl,
  TWINBOX_DEPLOY_CONCURRENCY: String(N),
});
const tb = await createTwinbox(config, { logger: createLogger('silent') });
const account = await tb.accounts.create(`bench-${Date.now()}@example.com`, 'pro');
const { key } = await tb.apiKeys.issue(account.id);

async function deployOne(): Promise<{ id: string; ms: number }> {
  const start = performance.now();
  const created = await tb.server.inject({
    method: 'POST',
    url: '/sandboxes',
    headers: { authorization: `Bearer ${key}` },
    payload: { repo: 'octocat/shop', branch: 'main', twins: ['github', 'stripe'] },
  });
  const id = JSON.parse(created.payload).sandbox_id as string;
  for (;;) {
    const sandbox = await tb.store.sandboxes.get(id);
    if (sandbox?.status === 'ready') return { id, ms: performance.now() - start };
    if (sandbox?.status !== 'queued' && sandbox?.status !== 'building')
      throw new Error(`deploy ${id}: ${sandbox?.status} ${sandbox?.error}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

const steps = ['source', 'twins', 'profile', 'start', 'total'] as const;
function report(label: string, runs: Array<{ id: string; ms: number }>) {
  const ms = runs.map((r) => r.ms);
  console.log(
    `${label}: n=${runs.length} p50=${pct(ms, 50).toFixed(0)} ms p95=${pct(ms, 95).toFixed(0)} ms max=${Math.max(...ms).toFixed(0)} ms`,
  );
  const line = steps.map((step) => {
    const values = runs.map((r) => tb.engine!.deployer.timings.get(r.id)?.[step] ?? 0);
    return `${step} p50=${pct(values, 50)} p95=${pct(values, 95)}`;
  });
  console.log(`  steps (ms): ${line.join(' | ')}`);
}

const del = (id: string) =>
  tb.server.inject({
    method: 'DELETE',
    url: `/sandboxes/${id}`,
    headers: { authorization: `Bearer ${key}` },
  });

try {
  console.log(`deploy benchmark, isolation: ${tb.engine!.deployer['opts'].isolation.name}, ${N} deploys`);
  const sequential: Array<{ id: string; ms: number }> = [];
  for (let i = 0; i < N; i++) {
    const run = await deployOne();
    sequential.push(run);
  }
  report('cold (first deploy on a fresh Twinbox)', sequential.slice(0, 1));
  report('warm sequential', sequential.slice(1));
  const rss = await Promise.all(sequential.map((r) => groupRssKb(tb.engine!.deployer.appPid(r.id)!)));
  console.log(
    `memory per running app (RSS of its process group): p50=${(pct(rss, 50) / 1024).toFixed(1)} MiB max=${(Math.max(...rss) / 1024).toFixed(1)} MiB`,
  );
  const twinsBefore = process.memoryUsage().rss;
  await Promise.all(sequential.map((r) => del(r.id)));
  console.log(
    `Twinbox RSS with ${N} sandboxes' twins running: ${(twinsBefore / 1024 / 1024).toFixed(0)} MiB`,
  );

  const t0 = performance.now();
  const parallel = await Promise.all(Array.from({ length: N }, () => deployOne()));
  report(`${N} at once`, parallel);
  console.log(`  all ${N} ready after ${(performance.now() - t0).toFixed(0)} ms`);
  await Promise.all(parallel.map((r) => del(r.id)));
} finally {
  await tb.stop();
  await gh.close();
  await rm(dataDir, { recursive: true, force: true });
}
