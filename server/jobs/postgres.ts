import { createHash, randomUUID } from 'node:crypto';
import pg from 'pg';
import PgBoss from 'pg-boss';
import type { Logger } from 'pino';
import { encodeJson } from '../store/postgres/codec.ts';
import { openPool } from '../store/postgres/pool.ts';
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

export interface PostgresJobQueueOptions {
  /** TWINBOX_DATABASE_URL: the same database, and search_path, as the Store's. */
  url: string;
  logger: Logger;
  /**
   * How long a running job stays claimed without a heartbeat (TWINBOX_JOB_LEASE_SECONDS). A process
   * renews the lease of each job it runs every third of it; when a process dies, its jobs are worked
   * again by any process once their lease runs out.
   */
  leaseSeconds?: number;
  /** How often idle workers look for jobs a notification did not announce (retried ones). */
  pollSeconds?: number;
  poolSize?: number;
}

/** Runs of a job at most: a job whose process keeps dying with it is failed after that many. */
export const MAX_ATTEMPTS = 10;

/**
 * The job queue on PostgreSQL, on pg-boss 10: jobs are rows of pg-boss's schema (created and migrated by
 * pg-boss at start, next to Twinbox's own schema: `pgboss` beside `public`, `<schema>_pgboss` beside any
 * other), taken with `FOR UPDATE SKIP LOCKED`, so each job goes to one worker of one process.
 *
 * What pg-boss 10 lacks is added here, with SQL on its `job` table (tied to pg-boss 10's schema; the
 * version is pinned to 10.x in package.json and test/jobs/ checks each piece):
 * - keys accepted once, ever: the `job_keys` table of Twinbox's schema (migration 0004), written in
 *   the transaction that inserts the job;
 * - a lease: pg-boss expires a job `expire_in` after it started; a running job's expiry is pushed
 *   forward every third of the lease (a deploy can take longer than any fixed expiry), so only the
 *   jobs of a dead process expire, and pg-boss's maintenance hands them out again;
 * - completion fenced by the run (`retry_count`): a process that lost a job's lease cannot complete
 *   the run another process has started since;
 * - a wake-up: `send` notifies in its transaction, so a worker in any process fetches at once rather
 *   than at its next poll.
 */
export class PostgresJobQueue implements JobQueue {
  private readonly workers = new Map<string, PostgresWorker>();
  private readonly queues = new Map<string, Promise<void>>();
  private listener: pg.Client | undefined;
  private listening: Promise<void> | undefined;
  private pollTimer: NodeJS.Timeout | undefined;
  private stopping = false;
  private stopped: Promise<void> | undefined;

  private constructor(
    private readonly pool: pg.Pool,
    private readonly boss: PgBoss,
    /** pg-boss's schema, a plain lowercase identifier (checked in open()). */
    readonly bossSchema: string,
    private readonly url: string,
    private readonly logger: Logger,
    private readonly leaseSeconds: number,
    private readonly pollSeconds: number,
  ) {}

  /** Opens the pool, creates or migrates pg-boss's schema and starts its maintenance (expiry). */
  static async open(options: PostgresJobQueueOptions): Promise<PostgresJobQueue> {
    const logger = options.logger.child({ component: 'jobs' });
    const leaseSeconds = Math.max(1, Math.floor(options.leaseSeconds ?? 60));
    const pool = openPool({
      url: options.url,
      max: options.poolSize ?? 4,
      applicationName: 'twinbox-jobs',
      onLost: (error) => logger.warn(`PostgreSQL connection lost (jobs): ${error.message}`),
    });
    try {
      const { rows } = await pool.query<{ schema: string | null; keys: string | null }>(
        "SELECT current_schema() AS schema, to_regclass('job_keys')::text AS keys",
      );
      const schema = rows[0]?.schema;
      if (!schema) throw new Error('no schema of the search_path exists');
      // The Store migrates before the queue opens (server/twinbox.ts); without its table, keys would
      // not be kept.
      if (!rows[0]?.keys)
        throw new Error(
          `the table job_keys is missing from ${schema}: open the Store first (migration 0004)`,
        );
      const bossSchema = bossSchemaFor(schema);
      const boss = new PgBoss({
        db: { executeSql: (text, values) => pool.query(text, values) },
        schema: bossSchema,
        // Expiry of dead processes' jobs, archiving and deletion of old ones; one process does it per
        // interval (pg-boss keeps the time in its schema).
        supervise: true,
        maintenanceIntervalSeconds: Math.max(1, Math.floor(leaseSeconds / 2)),
        // No cron: Twinbox schedules nothing through pg-boss.
        schedule: false,
        migrate: true,
      });
      boss.on('error', (error: Error) => logger.warn({ err: error }, 'pg-boss maintenance failed'));
      await boss.start();
      return new PostgresJobQueue(
        pool,
        boss,
        bossSchema,
        options.url,
        logger,
        leaseSeconds,
        Math.max(0.5, options.pollSeconds ?? 2),
      );
    } catch (error) {
      await pool.end().catch(() => {});
      throw error;
    }
  }

  async send<T extends JobData>(queue: string, data: T, options: SendOptions = {}): Promise<SendResult> {
    checkQueueName(queue);
    checkKey(options.key);
    await this.ensureQueue(queue);
    const client = await this.pool.connect();
    let id: string = randomUUID();
    try {
      await client.query('BEGIN');
      if (options.key !== undefined) {
        // A concurrent send of the same key waits here for the first transaction, then finds its row.
        const claimed = await client.query<{ job_id: string }>(
          'INSERT INTO job_keys (queue, key, job_id) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING RETURNING job_id',
          [queue, options.key, id],
        );
        if (claimed.rowCount === 0) {
          await client.query('ROLLBACK');
          const first = await client.query<{ job_id: string }>(
            'SELECT job_id FROM job_keys WHERE queue = $1 AND key = $2',
            [queue, options.key],
          );
          return { id: first.rows[0]!.job_id, duplicate: true };
        }
      }
      const sent = await this.boss.send(queue, encodeJson(data) as unknown as object, {
        id,
        retryLimit: MAX_ATTEMPTS - 1,
        retryDelay: 0,
        expireInSeconds: this.leaseSeconds,
        db: { executeSql: (text, values) => client.query(text, values) },
      });
      if (!sent) throw new Error(`pg-boss did not take job ${id} of ${queue}`);
      id = sent;
      await client.query('SELECT pg_notify($1, $2)', [this.channel, queue]);
      await client.query('COMMIT');
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      throw error;
    } finally {
      client.release();
    }
    this.workers.get(queue)?.wake();
    return { id, duplicate: false };
  }

  async work<T extends JobData>(queue: string, options: WorkOptions, handler: JobHandler<T>): Promise<void> {
    checkQueueName(queue);
    if (this.stopping) throw new JobArgumentError('the job queue is stopped');
    if (this.workers.has(queue)) throw new JobArgumentError(`the job queue ${queue} is already worked`);
    await this.ensureQueue(queue);
    const worker = new PostgresWorker(
      queue,
      Math.max(1, Math.floor(options.concurrency)),
      this.boss,
      this.pool,
      this.bossSchema,
      this.leaseSeconds,
      handler as JobHandler<JobData>,
      this.logger,
    );
    this.workers.set(queue, worker);
    await this.listen();
    this.pollTimer ??= setInterval(() => {
      if (!this.listener) void this.listen();
      for (const each of this.workers.values()) each.wake();
    }, this.pollSeconds * 1000);
    worker.wake();
  }

  async idle(queue: string): Promise<void> {
    checkQueueName(queue);
    for (;;) {
      const worker = this.workers.get(queue);
      if (!worker?.busy) {
        const { rows } = await this.pool.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM ${this.bossSchema}.job WHERE name = $1 AND state < 'completed'`,
          [queue],
        );
        if (rows[0]!.n === 0) return;
      }
      await delay(50);
    }
  }

  stop(): Promise<void> {
    return (this.stopped ??= (async () => {
      this.stopping = true;
      if (this.pollTimer) clearInterval(this.pollTimer);
      await Promise.all([...this.workers.values()].map((worker) => worker.stop()));
      await this.listener?.end().catch(() => {});
      this.listener = undefined;
      await this.boss.stop({ graceful: false, close: false }).catch((error: unknown) => {
        this.logger.warn({ err: error }, 'pg-boss did not stop cleanly');
      });
      await this.pool.end();
    })());
  }

  /** The NOTIFY channel of this pg-boss schema: Twinboxes on other schemas are not woken. */
  private get channel(): string {
    return `${this.bossSchema}_jobs`;
  }

  private ensureQueue(queue: string): Promise<void> {
    let created = this.queues.get(queue);
    if (!created) {
      // pg-boss 10 needs a queue (its table partition) before the first send; creating one that exists
      // does nothing, so every process may.
      created = this.boss.createQueue(queue, { name: queue, policy: 'standard' });
      created.catch(() => this.queues.delete(queue));
      this.queues.set(queue, created);
    }
    return created;
  }

  /** One connection LISTENs for sends; when it drops, the poll timer opens another. */
  private listen(): Promise<void> {
    if (this.stopping || this.listener) return Promise.resolve();
    return (this.listening ??= (async () => {
      const client = new pg.Client({ connectionString: this.url, application_name: 'twinbox-jobs-listen' });
      client.on('error', (error) => {
        this.logger.warn(`job notifications lost, polling until reconnected: ${error.message}`);
        if (this.listener === client) this.listener = undefined;
        void client.end().catch(() => {});
      });
      client.on('notification', (message) => {
        if (message.payload) this.workers.get(message.payload)?.wake();
      });
      try {
        await client.connect();
        await client.query(`LISTEN "${this.channel}"`);
        if (this.stopping) await client.end();
        else this.listener = client;
      } catch (error) {
        this.logger.warn(`could not listen for jobs, polling: ${(error as Error).message}`);
        await client.end().catch(() => {});
      } finally {
        this.listening = undefined;
      }
    })());
  }
}

interface Running {
  controller: AbortController;
  done: Promise<void>;
}

class PostgresWorker {
  private readonly running = new Map<string, Running>();
  private fetching = false;
  private again = false;
  private stopping = false;

  constructor(
    private readonly queue: string,
    private readonly concurrency: number,
    private readonly boss: PgBoss,
    private readonly pool: pg.Pool,
    private readonly bossSchema: string,
    private readonly leaseSeconds: number,
    private readonly handler: JobHandler<JobData>,
    private readonly logger: Logger,
  ) {}

  get busy(): boolean {
    return this.running.size > 0 || this.fetching;
  }

  /** Fetches as many jobs as there is room for; a wake during a fetch fetches again after it. */
  wake(): void {
    if (this.stopping) return;
    if (this.fetching) {
      this.again = true;
      return;
    }
    this.fetching = true;
    void (async () => {
      try {
        do {
          this.again = false;
          while (!this.stopping && this.running.size < this.concurrency) {
            const jobs = await this.boss.fetch<JobData>(this.queue, {
              batchSize: this.concurrency - this.running.size,
              includeMetadata: true,
            });
            if (!jobs.length) break;
            for (const job of jobs) this.start(job);
          }
        } while (this.again && !this.stopping);
      } catch (error) {
        this.logger.warn(
          { err: error, queue: this.queue },
          'could not fetch jobs; trying again at the next poll',
        );
      } finally {
        this.fetching = false;
      }
    })();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    for (const { controller } of this.running.values()) controller.abort(new QueueStoppingError());
    while (this.fetching) await delay(20);
    await Promise.all([...this.running.values()].map((run) => run.done));
  }

  private start(job: PgBoss.JobWithMetadata<JobData>): void {
    const controller = new AbortController();
    // The run's number fences every write below: after a lost lease, another run has a higher one.
    const run = job.retryCount;
    const done = this.run(job, run, controller).finally(() => {
      this.running.delete(job.id);
      this.wake();
    });
    this.running.set(job.id, { controller, done });
  }

  private async run(
    job: PgBoss.JobWithMetadata<JobData>,
    run: number,
    controller: AbortController,
  ): Promise<void> {
    let lost = false;
    const heartbeat = setInterval(
      () => {
        void this.renew(job.id, run).then(
          (held) => {
            if (held || lost) return;
            lost = true;
            this.logger.warn(
              { job_id: job.id, queue: this.queue },
              `job ${job.id} of ${this.queue}: lease lost (this process was unreachable); it may run elsewhere`,
            );
            controller.abort(new Error('the job lease was lost'));
          },
          (error: unknown) => this.logger.warn({ err: error, job_id: job.id }, 'could not renew a job lease'),
        );
      },
      Math.max(250, (this.leaseSeconds * 1000) / 3),
    );
    let outcome: 'completed' | 'failed' | 'handed back' = 'completed';
    let error: string | null = null;
    try {
      await this.handler({
        id: job.id,
        queue: this.queue,
        data: job.data ?? {},
        attempt: run + 1,
        signal: controller.signal,
      });
    } catch (cause) {
      if (this.stopping && controller.signal.aborted) outcome = 'handed back';
      else {
        outcome = 'failed';
        error = cause instanceof Error ? cause.message : String(cause);
        if (!lost)
          this.logger.error(
            { err: cause, job_id: job.id, queue: this.queue },
            `job ${job.id} of ${this.queue} failed`,
          );
      }
    } finally {
      clearInterval(heartbeat);
    }
    if (lost) return;
    try {
      await this.finish(job.id, run, outcome, error);
    } catch (cause) {
      // Left active: its lease runs out and it is worked again (at least once, as promised).
      this.logger.error({ err: cause, job_id: job.id }, `job ${job.id}: could not record its end`);
    }
  }

  /** Pushes the job's expiry a lease ahead; false when this run no longer holds it. */
  private async renew(id: string, run: number): Promise<boolean> {
    const { rowCount } = await this.pool.query(
      `UPDATE ${this.bossSchema}.job SET expire_in = (now() - started_on) + make_interval(secs => $4)
        WHERE name = $1 AND id = $2 AND state = 'active' AND retry_count = $3`,
      [this.queue, id, run, this.leaseSeconds],
    );
    return rowCount === 1;
  }

  /**
   * Completes the run (a handler's error is kept as its output, not retried), or hands it back:
   * `retry` is what pg-boss fetches next, and the next fetch counts the run.
   */
  private async finish(
    id: string,
    run: number,
    outcome: 'completed' | 'failed' | 'handed back',
    error: string | null,
  ): Promise<void> {
    if (outcome === 'handed back') {
      await this.pool.query(
        `UPDATE ${this.bossSchema}.job SET state = 'retry', start_after = now()
          WHERE name = $1 AND id = $2 AND state = 'active' AND retry_count = $3`,
        [this.queue, id, run],
      );
      return;
    }
    await this.pool.query(
      `UPDATE ${this.bossSchema}.job SET state = 'completed', completed_on = now(), output = $4::jsonb
        WHERE name = $1 AND id = $2 AND state = 'active' AND retry_count = $3`,
      [this.queue, id, run, encodeJson(error === null ? { outcome } : { outcome, error })],
    );
  }
}

/**
 * pg-boss's schema for Twinbox's: `pgboss` beside `public`, `<schema>_pgboss` beside another (so two
 * Twinboxes in two schemas of one database keep two queues), a hash when that is no plain identifier
 * of at most 50 characters (pg-boss's rule; it does not quote names).
 */
export function bossSchemaFor(schema: string): string {
  if (schema === 'public') return 'pgboss';
  const named = `${schema}_pgboss`;
  if (/^[a-z_][a-z0-9_]*$/.test(named) && named.length <= 50) return named;
  return `pgboss_${createHash('sha256').update(schema).digest('hex').slice(0, 16)}`;
}

const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());
