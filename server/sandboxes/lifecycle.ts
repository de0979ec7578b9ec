import { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import { QUEUES, type Job, type JobQueue } from '../jobs/queue.ts';
import type { Store } from '../store/store.ts';
import type { SandboxRecord, SandboxStatus } from '../store/records.ts';
import type { DeployEvents } from './deploy-events.ts';
import { DeployFailure, type Deployer } from './deployer.ts';
import { ACTIVE_STATUSES, canTransition, IllegalTransitionError, LIVE_STATUSES } from './states.ts';

export type EndReason = 'expired' | 'deleted';

/** Why an extension was refused: the sandbox has ended (or failed) and has no expiry left to move. */
export class NotLiveError extends Error {}

/** A deploy job (QUEUES.deploy), keyed by the sandbox id: one deploy job per sandbox, ever. */
export interface DeployJob {
  [key: string]: unknown;
  sandbox_id: string;
}

export interface SandboxLifecycleOptions {
  store: Store;
  logger: Logger;
  /** Runs deploys in this process; absent (an API process, tests), deploys are only queued or not at all. */
  deployer: Deployer | undefined;
  /** Deploys run at once in this process. */
  concurrency: number;
  jobs: JobQueue;
  /**
   * On a runner sharing PostgreSQL with others (server/runners/, docs/scaling.md): the deploys it takes
   * are marked with it (`runner_id`), and recover() touches only its own sandboxes.
   */
  runnerId?: string | undefined;
  /** An API process (TWINBOX_ROLE=api) queues deploys for runners although it has no deployer itself. */
  queuesForRunners?: boolean;
  /** What the deploy engine tells (deploy-events.ts): a crashed app fails its sandbox, blocked egress is recorded. */
  deployEvents: DeployEvents;
  /** Told of every change first, before any later listener (the router's directory of this process). */
  onChange?: (sandbox: SandboxRecord) => void;
}

/** The longest a sandbox's teardown waits for what reads from its pod as it ends (holdRelease). */
const RELEASE_HOLD_MS = 5_000;

/**
 * Moves sandboxes through their states (states.ts) and runs deploys as jobs of the durable job queue
 * (server/jobs/), at most `concurrency` at once in this process. The queue decides who runs which
 * deploy and when; every transition is made here. Without a deployer, nothing pretends: a sandbox
 * stays `queued` until it ends. Emits `change` with the record after every transition.
 */
export class SandboxLifecycle extends EventEmitter<{
  change: [SandboxRecord];
  extended: [SandboxRecord, number];
  /** A ready app died on its own: the sandbox id and the error, before the sandbox is failed. */
  crashed: [string, string];
}> {
  private readonly running = new Map<string, AbortController>();
  /** The resumes recover() started (ready sandboxes after a restart), settled or not. */
  private resumes: Promise<void> = Promise.resolve();
  /** Set by stop(): a resume cut off by the shutdown is not a failure of its sandbox. */
  private stopping = false;
  private readonly store: Store;
  private readonly logger: Logger;
  private readonly deployer: Deployer | undefined;
  private readonly concurrency: number;
  private readonly jobs: JobQueue;
  private readonly runnerId: string | undefined;
  private readonly queuesForRunners: boolean;
  /** What must finish before a sandbox's resources go (holdRelease). */
  private readonly holds: Array<(sandbox: SandboxRecord) => Promise<unknown>> = [];

  constructor(options: SandboxLifecycleOptions) {
    super();
    this.store = options.store;
    this.logger = options.logger;
    this.deployer = options.deployer;
    this.concurrency = options.concurrency;
    this.jobs = options.jobs;
    this.runnerId = options.runnerId;
    this.queuesForRunners = options.queuesForRunners ?? false;
    if (options.onChange) this.on('change', options.onChange);
    // The deployer is not kept waiting on the store: a failure here is logged, never thrown back at it.
    options.deployEvents.on('crash', (id, error) => {
      this.markFailed(id, error).catch((err: unknown) =>
        this.logger.error({ err, sandbox_id: id }, 'could not fail a crashed sandbox'),
      );
    });
    options.deployEvents.on('blockedEgress', (id, blocked) => {
      this.recordBlockedEgress(id, blocked).catch((err: unknown) =>
        this.logger.error({ err, sandbox_id: id }, 'could not record blocked egress'),
      );
    });
  }

  /**
   * Queues the deploy of a `queued` sandbox; resolves once the job is durable, so a 201 promises a
   * deploy. Queuing one sandbox again (recover() after a restart) adds nothing: the job is keyed by
   * the sandbox id, and the queue works an unfinished job again by itself.
   */
  async enqueue(sandbox: SandboxRecord): Promise<void> {
    if (!this.deployer && !this.queuesForRunners) return;
    await this.jobs.send<DeployJob>(QUEUES.deploy, { sandbox_id: sandbox.id }, { key: sandbox.id });
  }

  /**
   * Starts running deploy jobs in this process. Call after recover(): a job cut off by a crash runs
   * again, and must find its sandbox `queued` again, not `building`.
   */
  async startDeploying(): Promise<void> {
    const deployer = this.deployer;
    if (!deployer) return;
    await this.jobs.work<DeployJob>(QUEUES.deploy, { concurrency: this.concurrency }, (job) =>
      this.deployJob(job, deployer),
    );
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

  /**
   * The runner `runnerId` holding this sandbox was lost (server/runners/watchdog.ts): fails it, if it
   * is still that runner's and building or ready. Nothing is released here: its pod was on that host.
   */
  async failLost(id: string, runnerId: string, error: string): Promise<void> {
    const failed = await this.store.sandboxes
      .update(id, (current) => {
        if (current.runner_id !== runnerId || (current.status !== 'building' && current.status !== 'ready'))
          throw new IllegalTransitionError(current.status, 'failed');
        return { ...current, status: 'failed', error, updated_at: new Date().toISOString() };
      })
      .catch((cause: unknown) => {
        if (cause instanceof IllegalTransitionError) return undefined;
        throw cause;
      });
    if (!failed) return;
    this.logger.warn({ sandbox_id: id, runner_id: runnerId }, `sandbox ${id} failed: ${error}`);
    this.emit('change', failed);
  }

  /** A ready app died on its own (the deployer saw it exit): the sandbox fails and its resources go. */
  async markFailed(id: string, error: string): Promise<void> {
    this.emit('crashed', id, error);
    await this.fail(id, error);
  }

  /**
   * After a restart: queued sandboxes are queued again; a deploy that was cut off is queued again too
   * (its 201 promised a deploy: what the cut-off one left is torn down and it runs from the start); a
   * ready sandbox is resumed by the deployer when it can, otherwise failed. Nothing is left half-alive.
   */
  async recover(): Promise<void> {
    // All found before any is acted on: a queued deploy resumed here is soon `building`, and must not
    // then be taken for one the restart cut off.
    const found: Array<[SandboxStatus, SandboxRecord]> = [];
    for (const status of LIVE_STATUSES) {
      for (const sandbox of await this.store.sandboxes.findBy('status', status))
        // Another runner's deploy or pod is not this one's to touch (unmarked ones predate runners).
        if (!sandbox.runner_id || sandbox.runner_id === this.runnerId) found.push([status, sandbox]);
    }
    const resumes: Promise<void>[] = [];
    for (const [status, sandbox] of found) {
      if (status === 'queued') await this.enqueue(sandbox);
      else if (status === 'building') await this.redeploy(sandbox);
      else if (status === 'ready') resumes.push(this.resumeOrFail(sandbox));
    }
    // Side by side and in the background: Twinbox listens meanwhile (the API, the other sandboxes), each
    // resume waits for its own app's health check, and one slow app holds up nothing else.
    this.resumes = Promise.all(resumes).then(() => {});
  }

  /** A deploy a restart cut off: what it left goes, and it is queued again (a recorded transition). */
  private async redeploy(sandbox: SandboxRecord): Promise<void> {
    await this.release(sandbox);
    try {
      const queued = await this.transition(sandbox.id, 'queued', { error: null });
      if (queued) await this.enqueue(queued);
    } catch (error) {
      // Ended meanwhile (a DELETE as Twinbox starts): nothing to deploy.
      if (!(error instanceof IllegalTransitionError)) throw error;
    }
  }

  /** Waits until no deploy job is queued or running (tests; on PostgreSQL, in any process). */
  async idle(): Promise<void> {
    await this.resumes;
    if (this.deployer) await this.jobs.idle(QUEUES.deploy);
  }

  /** Cancels the deploys running here (the job queue's stop() has handed their jobs back). */
  async stop(): Promise<void> {
    this.stopping = true;
    for (const controller of this.running.values()) controller.abort();
  }

  /**
   * One deploy job. Run more than once only after a run was cut off: a restart of this process put
   * the sandbox back to `queued` first (recover()), so it deploys from the start; found `building`,
   * the run was cut off in a process that has not come back (another host's), and the sandbox fails
   * with an error that says so rather than being deployed a second time beside a half-made first.
   */
  private async deployJob(job: Job<DeployJob>, deployer: Deployer): Promise<void> {
    const id = job.data.sandbox_id;
    if (job.attempt > 1 && (await this.store.sandboxes.get(id))?.status === 'building') {
      await this.fail(id, 'The Twinbox process deploying this sandbox stopped before it was ready.');
      return;
    }
    await this.runDeploy(id, deployer, job.signal);
    // Cut off by this process stopping: thrown, so the queue hands the job back, and the deploy runs
    // again after recover() has put the sandbox back to `queued`.
    if (job.signal.aborted) throw job.signal.reason;
  }

  private async runDeploy(id: string, deployer: Deployer, stopping?: AbortSignal): Promise<void> {
    const current = await this.store.sandboxes.get(id);
    if (!current || current.status !== 'queued') return;
    const controller = new AbortController();
    if (stopping?.aborted) return;
    stopping?.addEventListener('abort', () => controller.abort(), { once: true });
    this.running.set(id, controller);
    try {
      const building = await this.transition(
        id,
        'building',
        this.runnerId ? { runner_id: this.runnerId } : {},
      );
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
      deployer.settled?.(id);
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
      // Same status, but whoever follows changes (the router's directory, the timeline) learns it is up.
      const current = await this.store.sandboxes.get(sandbox.id);
      if (current) this.emit('change', current);
    } catch (error) {
      // The shutdown cut it off: the deployer kept what it had, and the next start resumes it.
      if (this.stopping) return;
      const reason = error instanceof Error ? error.message : String(error);
      if (!(error instanceof DeployFailure))
        this.logger.error({ sandbox_id: sandbox.id, err: error }, 'resume failed: an error in Twinbox');
      await this.fail(sandbox.id, `Twinbox restarted and could not bring this sandbox back: ${reason}`);
    }
  }

  /**
   * Work that reads from a sandbox's pod as the sandbox ends (the timeline's copy of its twins' logs,
   * started by the event that announces the end) holds its teardown until it is done, at most
   * RELEASE_HOLD_MS: without the hold, a loaded machine stopped the pod before the copy was read.
   */
  holdRelease(hold: (sandbox: SandboxRecord) => Promise<unknown>): void {
    this.holds.push(hold);
  }

  private async release(sandbox: SandboxRecord): Promise<void> {
    if (!this.deployer) return;
    if (this.holds.length) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.allSettled(this.holds.map((hold) => hold(sandbox))),
        new Promise((resolve) => (timer = setTimeout(resolve, RELEASE_HOLD_MS))),
      ]);
      clearTimeout(timer);
    }
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
