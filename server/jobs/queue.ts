/**
 * The job queue seam: work that Twinbox has acknowledged (a 201 for a sandbox, a 202 for a GitHub
 * delivery) and must do later, whatever happens to the process in between. Two implementations:
 * embedded.ts (the default: jobs are records of the Store's `jobs` collection, worked in this process)
 * and postgres.ts (TWINBOX_DATABASE_URL: pg-boss, jobs shared by every process on the database).
 * docs/jobs.md tells the guarantees to operators; test/jobs/contract.ts checks both implementations.
 *
 * What every implementation guarantees:
 *
 * - **Durable before acknowledged.** `send` resolves only once the job is committed (fsynced, or
 *   committed in PostgreSQL). A caller answers its client after `send` resolved, so an acknowledged job
 *   survives `kill -9` and power loss.
 * - **One job per key.** A `send` with a `key` already sent on that queue (by any process, before
 *   or after a restart, the first job finished or not) adds nothing and answers `duplicate: true` with
 *   the first job's id. That is how a redelivered GitHub event (same X-GitHub-Delivery) or a deploy
 *   queued again after a restart (same sandbox id) is not worked twice. Embedded, for good; on
 *   PostgreSQL, for at least TWINBOX_JOB_KEY_RETENTION_DAYS (30) and while pg-boss keeps the job, far
 *   past the days within which GitHub can redeliver (docs/jobs.md, "Retention").
 * - **Worked by one worker at a time.** A job runs in at most one handler at a time, across every
 *   process sharing the queue.
 * - **Worked to the end.** A job whose handler has not finished (the process died, was stopped, or lost
 *   the job's lease) is worked again, with `attempt` one higher: embedded, when Twinbox starts again;
 *   on PostgreSQL, at once when the process that held it starts again under the same identity, else by
 *   any process once the lease of the one that died has run out (at most `leaseSeconds` after its last
 *   heartbeat). So a handler runs *at least* once, and more than once only
 *   after a run that was cut off: handlers must be idempotent (each says how in its comment).
 * - **A handler's outcome is final.** A handler that resolves completes the job. A handler that throws
 *   also finishes the job (the error is logged, not retried): retrying is the handler's decision, made
 *   where it knows whether a retry is safe. The one exception: a handler that throws after its job's
 *   `signal` aborted because this queue is stopping hands the job back, to be worked again.
 */
export interface JobQueue {
  /**
   * Durably adds a job to `queue` and answers its id. With `key`, a job already sent under that key on
   * that queue (within the key retention) wins: nothing is added and `duplicate` is true. `data` must be JSON (it is stored as
   * JSON and handed to the handler as parsed JSON); any string is kept as it is, NUL included.
   */
  send<T extends JobData>(queue: string, data: T, options?: SendOptions): Promise<SendResult>;
  /**
   * Starts working `queue` in this process: at most `concurrency` handlers at once. Jobs sent before
   * (even by an earlier run of Twinbox) are worked too. Call once per queue; call after whatever must
   * happen before the first job runs (recovering state after a restart, for instance).
   */
  work<T extends JobData>(queue: string, options: WorkOptions, handler: JobHandler<T>): Promise<void>;
  /**
   * Resolves once `queue` has no job waiting or running: in this process (embedded) or in the whole
   * database (PostgreSQL). For tests and benchmarks; it waits forever while nobody works the queue.
   */
  idle(queue: string): Promise<void>;
  /**
   * Stops taking jobs, aborts the `signal` of running ones, waits for their handlers, and hands back
   * those that threw after the abort (they are worked again later). Idempotent.
   */
  stop(): Promise<void>;
}

export type JobData = { [key: string]: unknown };

export interface SendOptions {
  /**
   * At most one job per key and queue (embedded: ever; PostgreSQL: within the key retention): 1 to 200
   * characters, e.g. a GitHub delivery id or a
   * sandbox id.
   */
  key?: string;
}

export interface SendResult {
  /** The job's id (the first job's, for a duplicate). */
  id: string;
  /** True when a job with the same key was already sent: this send added nothing. */
  duplicate: boolean;
}

export interface WorkOptions {
  /** Handlers of this queue running at once in this process (1 or more). */
  concurrency: number;
}

export interface Job<T extends JobData> {
  id: string;
  queue: string;
  data: T;
  /** 1 for the first run; 2 or more when an earlier run was cut off (its process died or stopped). */
  attempt: number;
  /**
   * Aborted when this process stops (the job is handed back if the handler then throws) or, on
   * PostgreSQL, when this process lost the job's lease (it may already run elsewhere: stop touching it).
   */
  signal: AbortSignal;
}

export type JobHandler<T extends JobData> = (job: Job<T>) => Promise<void>;

/** Names of Twinbox's queues: one place, so that a sender and its worker cannot disagree. */
export const QUEUES = {
  /** `{ sandbox_id }`: run the deploy of a `queued` sandbox (server/sandboxes/lifecycle.ts). */
  deploy: 'deploy',
  /** `{ id, name, payload }`: a verified GitHub webhook delivery (app/routes.ts, app/index.ts). */
  githubDelivery: 'github-delivery',
} as const;

/** Keys and queue names the implementations accept (queue names are also pg-boss queue names). */
export const QUEUE_NAME = /^[a-z][a-z0-9-]{0,62}$/;
export const MAX_KEY_LENGTH = 200;

/** The error `send` and `work` throw for a queue name or key outside the rules above. */
export class JobArgumentError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'JobArgumentError';
  }
}

export function checkQueueName(queue: string): void {
  if (!QUEUE_NAME.test(queue))
    throw new JobArgumentError(`job queue name ${JSON.stringify(queue)} is not [a-z][a-z0-9-]{0,62}`);
}

export function checkKey(key: string | undefined): void {
  if (key === undefined) return;
  if (typeof key !== 'string' || key.length < 1 || key.length > MAX_KEY_LENGTH)
    throw new JobArgumentError(`a job key is 1 to ${MAX_KEY_LENGTH} characters`);
}

/** The reason a stopping queue aborts its running jobs' signals with. */
export class QueueStoppingError extends Error {
  constructor() {
    super('the job queue is stopping; the job will be worked again');
    this.name = 'QueueStoppingError';
  }
}
