/**
 * What the deploy, twins and fleet benchmarks share: a GitHub twin to deploy from, an in-process Twinbox
 * listening on loopback, waiting for a sandbox to settle without polling, percentiles and memory figures.
 */
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exampleFiles } from '../examples/files.ts';
import { loadConfig } from '../server/config.ts';
import { createLogger } from '../server/logger.ts';
import type { SandboxRecord } from '../server/store/records.ts';
import { createTwinbox, type Twinbox } from '../server/twinbox.ts';
import { startGitHubTwin, type StandaloneGitHubTwin } from '../examples/github-twin.ts';

export { exampleFiles };

/** The p-th percentile (nearest rank) of `values`. */
export function pct(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

export const ms = (n: number) => `${Math.round(n).toLocaleString('en-US')} ms`;
export const mib = (kib: number) => `${(kib / 1024).toFixed(1)} MiB`;
export const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}x`;

/** A GitHub twin holding `octocat/<name>` with `files` on main, the source every benchmark deploys. */
export async function sourceTwin(
  repos: Record<string, Record<string, string>>,
): Promise<StandaloneGitHubTwin> {
  const gh = await startGitHubTwin({ seed: { users: [{ login: 'octocat' }] } });
  for (const [name, files] of Object.entries(repos)) await gh.createRepo({ owner: 'octocat', name, files });
  return gh;
}

export interface BenchTwinbox {
  tb: Twinbox;
  /** An API key of a pro account. */
  key: string;
  port: number;
  /** Creates a sandbox and resolves when it settles: ready (with POST→ready ms) or not (with its error). */
  deploy(payload: Record<string, unknown>): Promise<Deployed>;
  /** The same, started once the pod manager's spare pod is up, so the deploy gets a warm pod. */
  deployWarm(payload: Record<string, unknown>): Promise<Deployed>;
  /** Resolves once the pod manager's spare pod is started and the spare workspace image made. */
  spareReady(): Promise<void>;
  del(id: string): Promise<void>;
  close(): Promise<void>;
}

export interface Deployed {
  id: string;
  ms: number;
  record: SandboxRecord;
}

/** An in-process Twinbox with the embedded deploy engine, listening on loopback (its router too). */
export async function benchTwinbox(
  gh: StandaloneGitHubTwin,
  env: Record<string, string> = {},
): Promise<BenchTwinbox> {
  const dataDir = await mkdtemp(join(tmpdir(), 'twinbox-bench-'));
  const config = loadConfig({
    NODE_ENV: 'test',
    PORT: '0',
    TWINBOX_DATA_DIR: dataDir,
    LOG_LEVEL: 'silent',
    GITHUB_API_URL: gh.baseUrl,
    GITHUB_TOKEN: gh.token,
    GITHUB_OAUTH_URL: gh.baseUrl,
    TWINBOX_SANDBOX_QUOTA_PRO: '1000',
    ...env,
  });
  const tb = await createTwinbox(config, { logger: createLogger('silent') });
  await tb.server.start();
  const account = await tb.accounts.create(`bench-${Date.now()}@example.com`, 'pro');
  const { key } = await tb.apiKeys.issue(account.id);

  // Settled sandboxes, from the lifecycle's own events: no polling load on a machine being measured.
  const settled = new Map<string, SandboxRecord>();
  const waiters = new Map<string, (record: SandboxRecord) => void>();
  tb.lifecycle.on('change', (record) => {
    if (record.status === 'queued' || record.status === 'building') return;
    if (settled.has(record.id)) return;
    settled.set(record.id, record);
    waiters.get(record.id)?.(record);
  });

  const bench: BenchTwinbox = {
    tb,
    key,
    port: Number(tb.server.info.port),
    async spareReady() {
      // The deploy job ends after its outcome is recorded and the deployer told (Deployer.settled), which
      // is when the spare pool is refilled: before that there is no new spare to wait for, and a
      // baseline timed meanwhile would share the CPU with the refill.
      await tb.lifecycle.idle();
      const pods = tb.engine!.deployer['opts'].pods;
      await Promise.allSettled(pods['spares']);
      // The spare workspace image too (workspace.ts), made once the last deploy was done.
      await tb.engine!.deployer['spareImages'].settled();
    },
    async deployWarm(payload) {
      await bench.spareReady();
      return bench.deploy(payload);
    },
    async deploy(payload) {
      const start = performance.now();
      const created = await tb.server.inject({
        method: 'POST',
        url: '/sandboxes',
        headers: { authorization: `Bearer ${key}` },
        payload,
      });
      const id = (JSON.parse(created.payload) as { sandbox_id?: string }).sandbox_id;
      if (!id) throw new Error(`POST /sandboxes refused: ${created.payload}`);
      const record =
        settled.get(id) ?? (await new Promise<SandboxRecord>((resolve) => waiters.set(id, resolve)));
      waiters.delete(id);
      return { id, ms: performance.now() - start, record };
    },
    async del(id) {
      await tb.server.inject({
        method: 'DELETE',
        url: `/sandboxes/${id}`,
        headers: { authorization: `Bearer ${key}` },
      });
    },
    async close() {
      await tb.stop();
      await rm(dataDir, { recursive: true, force: true });
    },
  };
  return bench;
}

/** The last lines of a sandbox's deploy log (install, build and app output plus Twinbox's step notes). */
export async function logTail(tb: Twinbox, id: string, lines = 12): Promise<string> {
  try {
    const text = await readFile(join(tb.config.dataDir, 'logs', `${id}.log`), 'utf8');
    return text.trimEnd().split('\n').slice(-lines).join('\n');
  } catch (error) {
    return `(no log: ${(error as Error).message})`;
  }
}

/** RSS of every process in a process group, in KiB (from /proc). */
export async function groupRssKb(pgid: number): Promise<number> {
  let total = 0;
  for (const pid of await readdir('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[2]) !== pgid) continue;
      total += await rssKb(Number(pid));
    } catch {
      // exited meanwhile
    }
  }
  return total;
}

/** VmRSS of one process in KiB, 0 when it is gone. */
export async function rssKb(pid: number): Promise<number> {
  try {
    const status = await readFile(`/proc/${pid}/status`, 'utf8');
    return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
  } catch {
    return 0;
  }
}

/** Memory in use on the whole machine (MemTotal − MemAvailable), in KiB. */
export async function machineUsedKb(): Promise<number> {
  const info = await readFile('/proc/meminfo', 'utf8');
  const field = (name: string) => Number(new RegExp(`${name}:\\s+(\\d+)`).exec(info)?.[1] ?? 0);
  return field('MemTotal') - field('MemAvailable');
}

/** `cpu` steal as a share of all CPU time over `fn`, from /proc/stat: how much the host took away. */
export async function withSteal<T>(fn: () => Promise<T>): Promise<{ result: T; steal: number }> {
  const read = async () => {
    const fields = (await readFile('/proc/stat', 'utf8')).split('\n')[0]!.trim().split(/\s+/).slice(1);
    const values = fields.map(Number);
    return { total: values.reduce((a, b) => a + b, 0), steal: values[7] ?? 0 };
  };
  const before = await read();
  const result = await fn();
  const after = await read();
  return { result, steal: (after.steal - before.steal) / Math.max(1, after.total - before.total) };
}
