import type { Logger } from 'pino';
import type { Store } from '../store/store.ts';
import type { SandboxRecord } from '../store/records.ts';

const LIVE = new Set(['queued', 'building', 'ready']);

/** The lifecycle as the reconciler listens to it. */
interface ChangeSource {
  on(event: 'change', listener: (sandbox: SandboxRecord) => void): unknown;
}

/**
 * Keeps a runner's pods in step with the shared store. A sandbox this runner holds can be ended by
 * another process (a DELETE or the TTL reaper on an API process, the watchdog after a stall): the
 * transition is written there, so no `change` event reaches this process. Every `intervalMs` the
 * runner reads the records of the sandboxes it holds and releases the pod of each that is no longer
 * live, and tells its router what they became.
 */
export class HeldSandboxReconciler {
  private readonly held = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(
    private readonly deps: {
      store: Store;
      selfId: string;
      lifecycle: ChangeSource;
      /** Stops the sandbox's app and pod here (the deployer's teardown). */
      release: (sandbox: SandboxRecord) => Promise<void>;
      /** Tells the router's directory what the sandbox became. */
      observe: (sandbox: SandboxRecord) => void;
      logger: Logger;
      intervalMs: number;
    },
  ) {
    deps.lifecycle.on('change', (sandbox) => {
      if (sandbox.runner_id === deps.selfId && LIVE.has(sandbox.status)) this.held.add(sandbox.id);
      else this.held.delete(sandbox.id);
    });
  }

  /** Picks up what this runner held before a restart, then checks on an interval. */
  async start(): Promise<void> {
    for (const sandbox of await this.deps.store.sandboxes.findBy('runner_id', this.deps.selfId))
      if (LIVE.has(sandbox.status)) this.held.add(sandbox.id);
    this.timer = setInterval(() => {
      this.running ??= this.check()
        .then(() => undefined)
        .catch((error: unknown) => this.deps.logger.warn({ err: error }, 'runner reconcile failed'))
        .finally(() => (this.running = undefined));
    }, this.deps.intervalMs);
    this.timer.unref();
  }

  /** One pass; answers the ids released. */
  async check(): Promise<string[]> {
    const released: string[] = [];
    for (const id of [...this.held]) {
      const sandbox = await this.deps.store.sandboxes.get(id);
      if (sandbox && LIVE.has(sandbox.status) && sandbox.runner_id === this.deps.selfId) continue;
      this.held.delete(id);
      if (!sandbox) continue;
      this.deps.observe(sandbox);
      await this.deps.release(sandbox);
      released.push(id);
      this.deps.logger.info(
        { sandbox_id: id, status: sandbox.status },
        `released the pod of sandbox ${id}: it is ${sandbox.status} (changed by another process)`,
      );
    }
    return released;
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.running;
  }
}
