import type { AppLogReader } from '../sandboxes/routes.ts';
import type { LogSlice } from '../deploy/confinement/logs.ts';
import type { Store } from '../store/store.ts';
import type { RunnerRegistry } from './registry.ts';
import { RUNNER_LOGS_PATH } from './routes.ts';

/**
 * GET /sandboxes/{id}/logs wherever the sandbox runs: the log file is on the runner that deployed it,
 * so a sandbox held by another runner is read from that runner over HTTP with the admin token
 * (server/runners/routes.ts); this process's own sandboxes are read locally. A sandbox whose runner is
 * lost has its log on that host only: the answer is empty and closed.
 */
export class RoutedLogs implements AppLogReader {
  constructor(
    private readonly deps: {
      store: Store;
      registry: RunnerRegistry;
      selfId: string | undefined;
      /** This process's own deploy logs (a runner, or `all`); undefined on an API process. */
      local: AppLogReader | undefined;
      adminToken: string;
      timeoutMs?: number;
    },
  ) {}

  async read(sandboxId: string): Promise<string> {
    return (await this.slice(sandboxId, 0)).text;
  }

  async slice(sandboxId: string, offset: number): Promise<LogSlice> {
    const { store, registry, selfId, local } = this.deps;
    const sandbox = await store.sandboxes.get(sandboxId);
    const runnerId = sandbox?.runner_id;
    if (runnerId && runnerId !== selfId) {
      const url = await registry.urlOf(runnerId);
      if (url) return this.fromRunner(url, sandboxId, offset);
      return { text: '', start: offset, end: offset, open: false };
    }
    if (local) return local.slice(sandboxId, offset);
    return { text: '', start: offset, end: offset, open: false };
  }

  private async fromRunner(url: string, sandboxId: string, offset: number): Promise<LogSlice> {
    const response = await fetch(
      `${url}${RUNNER_LOGS_PATH.replace('{id}', encodeURIComponent(sandboxId))}?offset=${offset}`,
      {
        headers: { authorization: `Bearer ${this.deps.adminToken}` },
        signal: AbortSignal.timeout(this.deps.timeoutMs ?? 10_000),
      },
    );
    if (!response.ok)
      throw new Error(`runner at ${url} answered ${response.status} for the log of ${sandboxId}`);
    return (await response.json()) as LogSlice;
  }
}
