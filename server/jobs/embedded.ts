import { createHash, randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { JobRecord } from '../store/records.ts';
import { UniqueViolationError, type Collection } from '../store/store.ts';
import {
  checkKey,
  checkQueueName,
  JobArgumentError,
  QueueStoppingError,
  type JobData,
  type JobHandler,
  type JobQueue,
  type SendOptions,
  type SendResult,
  type WorkOptions,
} from './queue.ts';

/**
 * The embedded job queue (the default, no database): each job is a record of the Store's `jobs`
 * collection, written (fsynced) before `send` resolves, and worked in this process. The data-dir lock
 * makes this process the only one on its store, so a job found `active` at start was cut off by the
 * death of an earlier run, and is worked again, as are `queued` ones.
 */
export class EmbeddedJobQueue implements JobQueue {
  private readonly workers = new Map<string, EmbeddedWorker>();
  private stopping = false;

  constructor(
    private readonly jobs: Collection<JobRecord>,
    private readonly logger: Logger,
  ) {}

  async send<T extends JobData>(queue: string, data: T, options: SendOptions = {}): Promise<SendResult> {
    checkQueueName(queue);
    checkKey(options.key);
    const key = options.key ?? null;
    const id = key === null ? randomUUID() : keyedId(queue, key);
    try {
      await this.jobs.insert({
        id,
        queue,
        key,
        // Handlers get parsed JSON on either queue, never the caller's own object.
        data: JSON.parse(JSON.stringify(data)) as Record<string, unknown>,
        state: 'queued',
        attempts: 0,
        created_at: new Date().toISOString(),
        started_at: null,
        finished_at: null,
        error: null,
      });
    } catch (error) {
      // The id of a keyed job is its key's: taken means that key was sent before.
      if (error instanceof UniqueViolationError && key !== null) return { id, duplicate: true };
      throw error;
    }
    // A send after stop() is still durable: it is worked when Twinbox starts again.
    if (!this.stopping) this.workers.get(queue)?.offer(id);
    return { id, duplicate: false };
  }

  async work<T extends JobData>(queue: string, options: WorkOptions, handler: JobHandler<T>): Promise<void> {
    checkQueueName(queue);
    if (this.workers.has(queue)) throw new JobArgumentError(`the job queue ${queue} is already worked`);
    if (this.stopping) throw new JobArgumentError('the job queue is stopped');
    const worker = new EmbeddedWorker(
      queue,
      Math.max(1, Math.floor(options.concurrency)),
      this.jobs,
      handler as JobHandler<JobData>,
      this.logger,
    );
    this.workers.set(queue, worker);
    // Registered first, then the backlog read: a job sent in between is offered twice, and the
    // worker's `known` set takes it once.
    for (const job of await this.unfinished(queue)) worker.offer(job.id);
  }

  async idle(queue: string): Promise<void> {
    for (;;) {
      const worker = this.workers.get(queue);
      if (!worker?.busy && (await this.unfinished(queue)).length === 0) return;
      await Promise.race([worker?.nextIdle(), delay(100)]);
    }
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await Promise.all([...this.workers.values()].map((worker) => worker.stop()));
  }

  /** Jobs of `queue` not finished, oldest first. */
  private async unfinished(queue: string): Promise<JobRecord[]> {
    const found = [
      ...(await this.jobs.findBy('state', 'queued')),
      ...(await this.jobs.findBy('state', 'active')),
    ].filter((job) => job.queue === queue);
    return found.sort((a, b) => a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id));
  }
}

class EmbeddedWorker {
  private readonly pending: string[] = [];
  private readonly known = new Set<string>();
  private readonly running = new Map<string, { controller: AbortController; done: Promise<void> }>();
  private idleWaiters: Array<() => void> = [];
  private stopping = false;

  constructor(
    private readonly queue: string,
    private readonly concurrency: number,
    private readonly jobs: Collection<JobRecord>,
    private readonly handler: JobHandler<JobData>,
    private readonly logger: Logger,
  ) {}

  get busy(): boolean {
    return this.pending.length > 0 || this.running.size > 0;
  }

  offer(id: string): void {
    if (this.stopping || this.known.has(id)) return;
    this.known.add(id);
    this.pending.push(id);
    this.pump();
  }

  nextIdle(): Promise<void> {
    if (!this.busy) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  async stop(): Promise<void> {
    this.stopping = true;
    this.pending.length = 0;
    for (const { controller } of this.running.values()) controller.abort(new QueueStoppingError());
    await Promise.all([...this.running.values()].map((run) => run.done));
    this.wakeIdle();
  }

  private pump(): void {
    while (!this.stopping && this.running.size < this.concurrency && this.pending.length) {
      const id = this.pending.shift()!;
      const controller = new AbortController();
      const done = this.run(id, controller).finally(() => {
        this.running.delete(id);
        this.known.delete(id);
        this.pump();
      });
      this.running.set(id, { controller, done });
    }
    this.wakeIdle();
  }

  private wakeIdle(): void {
    if (this.busy) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const resolve of waiters) resolve();
  }

  private async run(id: string, controller: AbortController): Promise<void> {
    try {
      const started = await this.jobs.update(id, (job) =>
        job.state === 'queued' || job.state === 'active'
          ? { ...job, state: 'active', attempts: job.attempts + 1, started_at: new Date().toISOString() }
          : job,
      );
      if (!started || started.state !== 'active') return;
      let error: string | null = null;
      try {
        await this.handler({
          id,
          queue: this.queue,
          data: started.data ?? {},
          attempt: started.attempts,
          signal: controller.signal,
        });
      } catch (cause) {
        if (this.stopping && controller.signal.aborted) {
          // Cut off by this process stopping: queued again, worked at the next start.
          await this.jobs.update(id, (job) => ({ ...job, state: 'queued' }));
          return;
        }
        error = cause instanceof Error ? cause.message : String(cause);
        this.logger.error(
          { err: cause, job_id: id, queue: this.queue, component: 'jobs' },
          `job ${id} of ${this.queue} failed`,
        );
      }
      const finished = { finished_at: new Date().toISOString(), error, data: null };
      if (started.key === null) await this.jobs.delete(id);
      else await this.jobs.update(id, (job) => ({ ...job, ...finished, state: error ? 'failed' : 'done' }));
    } catch (cause) {
      // The store refused a write: the job stays as it was written last, and is worked again at the next
      // start if that was `active`.
      this.logger.error(
        { err: cause, job_id: id, queue: this.queue, component: 'jobs' },
        `job ${id} of ${this.queue}: could not record its state`,
      );
    }
  }
}

/** A keyed job's record id: fixed by queue and key, so the store's unique id refuses a second send. */
export function keyedId(queue: string, key: string): string {
  return `k${createHash('sha256').update(`${queue}\n${key}`).digest('base64url')}`;
}

const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());
