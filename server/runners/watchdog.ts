import type { Logger } from 'pino';
import type { Store } from '../store/store.ts';
import type { SandboxRecord } from '../store/records.ts';
import type { RunnerRegistry } from './registry.ts';

/** What the watchdog needs of the lifecycle: fail a sandbox only while `runnerId` still holds it. */
export interface LostSandboxes {
  failLost(sandboxId: string, runnerId: string, error: string): Promise<void>;
}

/** The `error` of a sandbox whose runner died (docs/scaling.md, "When a runner dies"). */
export function lostRunnerError(runnerId: string): string {
  return `The runner ${runnerId} holding this sandbox stopped; deploy again.`;
}

/**
 * The policy on a runner's death (docs/scaling.md): once a runner's heartbeat is older than the stale
 * time, every sandbox it held (`building` or `ready`, by `runner_id`) fails with lostRunnerError.
 * Nothing of it is deployed a second time: its app, twin state and workspace lived on that host, and
 * a deploy restarted elsewhere would run the app twice if the host came back. A deploy not yet taken
 * (`queued`, no `runner_id`) stays in the deploy queue for any runner.
 *
 * Every process (API and runner) runs one: failing is a guarded transition, so two watchdogs failing
 * the same sandbox change it once.
 */
export class RunnerWatchdog {
  private timer: NodeJS.Timeout | undefined;
  private sweeping: Promise<void> | undefined;

  constructor(
    private readonly deps: {
      store: Store;
      registry: RunnerRegistry;
      lifecycle: LostSandboxes;
      logger: Logger;
    },
  ) {}

  start(): void {
    const tick = () => {
      this.sweeping ??= this.sweep()
        .then(() => undefined)
        .catch((error: unknown) => this.deps.logger.warn({ err: error }, 'runner watchdog sweep failed'))
        .finally(() => (this.sweeping = undefined));
    };
    this.timer = setInterval(tick, Math.max(250, Math.floor(this.deps.registry.staleMs / 3)));
    this.timer.unref();
  }

  /** One pass: fails the live sandboxes of every lost runner; answers the runners found lost. */
  async sweep(now = Date.now()): Promise<string[]> {
    const { store, registry, lifecycle, logger } = this.deps;
    const byRunner = new Map<string, SandboxRecord[]>();
    for (const status of ['building', 'ready'] as const) {
      for (const sandbox of await store.sandboxes.findBy('status', status)) {
        if (!sandbox.runner_id) continue;
        const held = byRunner.get(sandbox.runner_id) ?? [];
        held.push(sandbox);
        byRunner.set(sandbox.runner_id, held);
      }
    }
    const lost: string[] = [];
    for (const [runnerId, sandboxes] of byRunner) {
      // Read fresh, not from the registry's cache: this decides a failure.
      const record = await store.runners.get(runnerId);
      if (record && registry.isAlive(record, now)) continue;
      if (
        record &&
        !record.lost_at &&
        (await registry.markLost(runnerId, now - registry.staleMs)) === false
      ) {
        // A heartbeat came in between the read and the mark: it lives.
        const again = await store.runners.get(runnerId);
        if (again && registry.isAlive(again)) continue;
      }
      lost.push(runnerId);
      logger.warn(
        { runner_id: runnerId, sandboxes: sandboxes.map((sandbox) => sandbox.id) },
        `runner ${runnerId} is lost (no heartbeat for ${registry.staleMs / 1000} s): failing its sandboxes`,
      );
      for (const sandbox of sandboxes)
        await lifecycle.failLost(sandbox.id, runnerId, lostRunnerError(runnerId));
    }
    return lost;
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.sweeping;
  }
}
