import type { Logger } from 'pino';
import type { Store } from '../store/store.ts';
import type { SandboxLifecycle } from './lifecycle.ts';
import { LIVE_STATUSES } from './states.ts';

/**
 * Expires every live sandbox whose `expires_at` has passed. It sweeps once at start, which also
 * catches sandboxes whose time ran out while Twinbox was down, then on an interval.
 */
export class TtlReaper {
  private timer: NodeJS.Timeout | undefined;
  private sweeping: Promise<number> | undefined;

  constructor(
    private readonly store: Store,
    private readonly lifecycle: SandboxLifecycle,
    private readonly logger: Logger,
    private readonly intervalMs: number,
  ) {}

  async start(): Promise<void> {
    await this.sweep();
    this.timer = setInterval(() => {
      this.sweep().catch((error: unknown) => this.logger.error({ err: error }, 'TTL sweep failed'));
    }, this.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.sweeping;
  }

  /** Expires what is due at `now`; returns how many sandboxes it expired. */
  sweep(now = new Date()): Promise<number> {
    // One sweep at a time: a slow teardown must not let the next tick expire the same sandbox twice.
    this.sweeping ??= this.expireDue(now).finally(() => (this.sweeping = undefined));
    return this.sweeping;
  }

  private async expireDue(now: Date): Promise<number> {
    const due = [];
    for (const status of LIVE_STATUSES) {
      for (const sandbox of await this.store.sandboxes.findBy('status', status)) {
        if (Date.parse(sandbox.expires_at) <= now.getTime()) due.push(sandbox.id);
      }
    }
    for (const id of due) await this.lifecycle.end(id, 'expired');
    if (due.length > 0) this.logger.info({ count: due.length }, 'expired sandboxes');
    return due.length;
  }
}
