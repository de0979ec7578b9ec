import { EventEmitter } from 'node:events';
import PQueue from 'p-queue';
import type { Logger } from 'pino';
import type { Store } from '../store/store.ts';
import type { SandboxRecord, SandboxStatus } from '../store/records.ts';
import { DeployFailure, type Deployer } from './deployer.ts';
import { ACTIVE_STATUSES, canTransition, IllegalTransitionError, LIVE_STATUSES } from './states.ts';

export type EndReason = 'expired' | 'deleted';

/** Why an extension was refused: the sandbox has ended (or failed) and has no expiry left to move. */
export class NotLiveError extends Error {}

/**
 * Moves sandboxes through their states (states.ts) and runs deploys on a queue of bounded
 * concurrency. Without a deployer, nothing pretends: a sandbox stays `queued` until it ends.
 * Emits `change` with the record after every transition.
 */
export class SandboxLifecycle extends EventEmitter<{
  change: [SandboxRecord];
  extended: [SandboxRecord, number];
  /** A ready app died on its own: the sandbox id and the error, before the sandbox is failed. */
  crashed: [string, string];
}> {
  private readonly queue: PQueue;
  private readonly running = new Map<string, AbortController>();

  constructor(
    private readonly store: Store,
    private readonly logger: Logger,
    private readonly deployer: Deployer | undefined,
    concurrency: number,
  ) {
    super();
    this.queue = new PQueue({ concurrency });
  }

  /** Queues the deploy of a `queued` sandbox. */
  enqueue(sandbox: SandboxRecord): void {
    if (!this.deployer) return;
    const deployer = this.deployer;
    void this.queue.add(() => this.runDeploy(sandbox.id, deployer));
  }

  /** Ends a live sandbox (TTL or DELETE): cancels its deploy, records the end, releases its resources. */
  async end(id: string, reason: EndReason): Promise<SandboxRecord | undefined> {
    this.running.get(id)?.abort();
    let ended: SandboxRecord | undefined;
    try {
      ended = await this.transition(id, reason, { ended_at: new Date().toISOString() });
    } catch (error) {
      // Already ended (a DELETE racing the reaper): the first end wins, the second is a no-op.
      if (error instanceof IllegalTransitionError) return this.store.sandboxes.get(id);
      throw error;
    }
    if (ended) await this.release(ended);
    return ended;
  }

  /**
   * Moves a live sandbox's expiry to `expiresAt` (never earlier than it is). Emits `extended` with the
   * record and the minutes added, then `change`.
   */
  async extend(id: string, expiresAt: Date, minutes: number): Promise<SandboxRecord | undefined> {
    const updated = await this.store.sandboxes.update(id, (current) => {
      if (!ACTIVE_STATUSES.has(current.status)) throw new NotLiveError(current.status);
      if (Date.parse(current.expires_at) >= expiresAt.getTime()) return current;
      return { ...current, expires_at: expiresAt.toISOString(), updated_at: new Date().toISOString() };
    });
    if (updated) {
      this.emit('extended', updated, minutes);
      this.emit('change', updated);
    }
    return updated;
  }

  /** The sandbox's code tried outbound calls it may not make: recorded on the sandbox as they happen. */
  async recordBlockedEgress(
    id: string,
    blocked: NonNullable<SandboxRecord['blocked_egress']>,
  ): Promise<void> {
    const updated = await this.store.sandboxes.update(id, (current) => ({
      ...current,
      blocked_egress: blocked,
      updated_at: new Date().toISOString(),
    }));
    if (updated) this.emit('change', updated);
  }

  /** A ready app died on its own (the deployer saw it exit): the sandbox fails and its resources go. */
  async markFailed(id: string, error: string): Promise<void> {
    this.emit('crashed', id, error);
    await this.fail(id, error);
  }

  /**
   * After a restart: queued sandboxes are queued again; a deploy that was cut off is failed; a ready
   * sandbox is resumed by the deployer when it can, otherwise failed. Nothing is left half-alive.
   */
  async recover(): Promise<void> {
    // All found before any is acted on: a queued deploy resumed here is soon `building`, and must not
    // then be taken for one the restart cut off.
    const found: Array<[SandboxStatus, SandboxRecord]> = [];
    for (const status of LIVE_STATUSES) {
      for (const sandbox of await this.store.sandboxes.findBy('status', status))
        found.push([status, sandbox]);
    }
    for (const [status, sandbox] of found) {
      if (status === 'queued') this.enqueue(sandbox);
      else if (status === 'building')
        await this.fail(sandbox.id, 'Twinbox restarted while this sandbox was deploying.');
      else if (status === 'ready') await this.resumeOrFail(sandbox);
    }
  }

  /** Waits until no deploy is queued or running (tests and shutdown). */
  async idle(): Promise<void> {
    await this.queue.onIdle();
  }

  async stop(): Promise<void> {
    this.queue.clear();
    for (const controller of this.running.values()) controller.abort();
    await this.queue.onIdle();
  }

  private async runDeploy(id: string, deployer: Deployer): Promise<void> {
    const current = await this.store.sandboxes.get(id);
    if (!current || current.status !== 'queued') return;
    const controller = new AbortController();
    this.running.set(id, controller);
    try {
      const building = await this.transition(id, 'building');
      if (!building) return;
      const result = await deployer.deploy(building, controller.signal);
      if (controller.signal.aborted) {
        await this.release(building);
        return;
      }
      await this.transition(id, 'ready', result);
    } catch (error) {
      if (controller.signal.aborted) return;
      const message = error instanceof Error ? error.message : String(error);
      // The sandbox's own failure (its repo, build or app) is told in one line by fail(); a stack is
      // kept for faults of Twinbox, where it says where to look.
      if (!(error instanceof DeployFailure))
        this.logger.error({ sandbox_id: id, err: error }, 'deploy failed: an error in Twinbox');
      await this.fail(id, message);
    } finally {
      this.running.delete(id);
    }
  }

  private async fail(id: string, error: string): Promise<void> {
    try {
      const failed = await this.transition(id, 'failed', { error });
      if (failed) {
        // One line a failure, whatever failed; the error text already points at the sandbox's log.
        this.logger.warn({ sandbox_id: id }, `sandbox ${id} failed: ${error}`);
        await this.release(failed);
      }
    } catch (cause) {
      if (!(cause instanceof IllegalTransitionError)) throw cause;
    }
  }

  private async resumeOrFail(sandbox: SandboxRecord): Promise<void> {
    if (!this.deployer?.resume) {
      await this.fail(sandbox.id, 'Twinbox restarted and could not bring this sandbox back.');
      return;
    }
    try {
      await this.deployer.resume(sandbox);
    } catch (error) {
      await this.fail(
        sandbox.id,
        `Twinbox restarted and could not bring this sandbox back: ${String(error)}`,
      );
    }
  }

  private async release(sandbox: SandboxRecord): Promise<void> {
    if (!this.deployer) return;
    try {
      await this.deployer.teardown(sandbox);
    } catch (error) {
      this.logger.error({ sandbox_id: sandbox.id, err: error }, 'teardown failed');
    }
  }

  private async transition(
    id: string,
    to: SandboxStatus,
    patch: Partial<SandboxRecord> = {},
  ): Promise<SandboxRecord | undefined> {
    const updated = await this.store.sandboxes.update(id, (current) => {
      if (!canTransition(current.status, to)) throw new IllegalTransitionError(current.status, to);
      return { ...current, ...patch, status: to, updated_at: new Date().toISOString() };
    });
    if (updated) this.emit('change', updated);
    return updated;
  }
}
