import { createHash, randomBytes, randomUUID } from 'node:crypto';
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
  /**
   * This process's identity, the same across its restarts and no other live process's (jobQueueIdentity
   * in index.ts: host, data directory, runner id). At start the queue takes back at once the runs an
   * earlier, dead incarnation of this identity held, instead of waiting for their lease. Unset: a
   * new identity per start, so nothing is taken back early.
   */
  identity?: string;
  /**
   * Days a job's key is kept at least (TWINBOX_JOB_KEY_RETENTION_DAYS): a key is pruned once it is that
   * old and pg-boss has deleted its job (docs/jobs.md, "Retention").
   */
  keyRetentionDays?: number;
}

/** The result of taking back the runs of this process's earlier incarnations (PostgresJobQueue.reclaim). */
export interface Reclaimed {
  /** Runs of dead incarnations handed back to the queue (or failed, past MAX_ATTEMPTS). */
  reclaimed: number;
  /** Runs recorded under this identity by another incarnation that is still connected. */
  held: number;
}

/** Runs of a job at most: a job whose process keeps dying with it is failed after that many. */
export const MAX_ATTEMPTS = 10;

/** TWINBOX_JOB_KEY_RETENTION_DAYS's default: well past GitHub's redelivery window (3 days, 7 on GHES). */
export const KEY_RETENTION_DAYS = 30;

/** How often the queue's own maintenance (key pruning, sweeping job_runs) runs in each process. */
const MAINTENANCE_MS = 60 * 60 * 1000;
/** Keys deleted per statement, so that pruning a backlog never holds many row locks at once. */
const PRUNE_BATCH = 1000;

/**
 * The job queue on PostgreSQL, on pg-boss 10: jobs are rows of pg-boss's schema (created and migrated by
 * pg-boss at start, next to Twinbox's own schema: `pgboss` beside `public`, `<schema>_pgboss` beside any
 * other), taken with `FOR UPDATE SKIP LOCKED`, so each job goes to one worker of one process.
 *
 * What pg-boss 10 lacks is added here, with SQL on its `job` table (tied to pg-boss 10's schema; the
 * version is pinned to 10.x in package.json and test/jobs/ checks each piece):
 * - keys accepted once: the `job_keys` table of Twinbox's schema (migration 0004), written in
 *   the transaction that inserts the job;
 * - a lease: pg-boss expires a job `expire_in` after it started; a running job's expiry is pushed
 *   forward every third of the lease (a deploy can take longer than any fixed expiry), so only the
 *   jobs of a dead process expire, and pg-boss's maintenance hands them out again;
 * - completion fenced by the run (`retry_count`): a process that lost a job's lease cannot complete
 *   the run another process has started since;
 * - a wake-up: `send` notifies in its transaction, so a worker in any process fetches at once rather
 *   than at its next poll;
 * - the holder of each run (`job_runs`, migration 0006): the process's identity and incarnation,
 *   written in the transaction that fetches the job. An incarnation holds a session advisory lock on
 *   its number while it is connected, so a restarted process takes back at start, without waiting for
 *   the lease, the runs of its own earlier incarnations whose lock is free (they died), never those of
 *   a live one. Taking back is fenced like a lost lease: the run's number no longer matches;
 * - pruning of `job_keys` in the queue's maintenance, once a key is older than `keyRetentionDays` and
 *   pg-boss has deleted its job.
 */
export class PostgresJobQueue implements JobQueue {
  private readonly workers = new Map<string, PostgresWorker>();
  private readonly queues = new Map<string, Promise<void>>();
  private listener: pg.Client | undefined;
  private listening: Promise<void> | undefined;
  private pollTimer: NodeJS.Timeout | undefined;
  private maintenanceTimer: NodeJS.Timeout | undefined;
  private reclaimTimer: NodeJS.Timeout | undefined;
  private maintaining: Promise<unknown> | undefined;
  /** The connection holding this incarnation's advisory lock; undefined while it is being reopened. */
  private presence: pg.Client | undefined;
  private presenceOpening: Promise<void> | undefined;
  private stopping = false;
  private stopped: Promise<void> | undefined;
  /** This start's number, random: the key of its advisory lock and the `incarnation` of its runs. */
  readonly incarnation: string = randomIncarnation();
  readonly identity: string;

  private constructor(
    private readonly pool: pg.Pool,
    private readonly boss: PgBoss,
    /** pg-boss's schema, a plain lowercase identifier (checked in open()). */
    readonly bossSchema: string,
    private readonly url: string,
    private readonly logger: Logger,
    private readonly leaseSeconds: number,
    private readonly pollSeconds: number,
    identity: string | undefined,
    private readonly keyRetentionDays: number,
  ) {
    this.identity = identity ?? `incarnation-${this.incarnation}`;
  }

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
      const { rows } = await pool.query<{ schema: string | null; keys: string | null; runs: string | null }>(
        "SELECT current_schema() AS schema, to_regclass('job_keys')::text AS keys, to_regclass('job_runs')::text AS runs",
      );
      const schema = rows[0]?.schema;
      if (!schema) throw new Error('no schema of the search_path exists');
      // The Store migrates before the queue opens (server/twinbox.ts); without its tables, keys would
      // not be kept nor runs' holders recorded.
      if (!rows[0]?.keys || !rows[0]?.runs)
        throw new Error(
          `the tables job_keys and job_runs must be in ${schema}: open the Store first (migrations 0004, 0006)`,
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
      const queue = new PostgresJobQueue(
        pool,
        boss,
        bossSchema,
        options.url,
        logger,
        leaseSeconds,
        Math.max(0.5, options.pollSeconds ?? 2),
        options.identity,
        Math.max(1, Math.floor(options.keyRetentionDays ?? KEY_RETENTION_DAYS)),
      );
      try {
        // The lock first: a run is recorded only under an incarnation that holds it.
        await queue.holdIncarnation();
        await queue.reclaimAtStart();
      } catch (error) {
        await queue.stop().catch(() => {});
        throw error;
      }
      queue.maintenanceTimer = setInterval(() => void queue.maintainInBackground(), MAINTENANCE_MS);
      queue.maintenanceTimer.unref();
      // A first pass soon after start, off the start's own path.
      setTimeout(() => void queue.maintainInBackground(), 60_000).unref();
      return queue;
    } catch (error) {
      await pool.end().catch(() => {});
      throw error;
    }
  }

  /**
   * Takes back the runs that earlier incarnations of this identity held and that are still `active`,
   * when that incarnation is gone (its advisory lock is free: its connection closed when its process
   * died). They are handed back to the queue (`retry`, worked at once by any process, `attempt` one
   * higher), or failed when that was their last attempt. A run whose incarnation is still connected is
   * left alone (`held`): either its process is alive under the same identity (a misconfiguration), or
   * PostgreSQL has not yet noticed its death; its lease still applies. Called at start; public for
   * tests.
   */
  async reclaim(): Promise<Reclaimed> {
    const s = this.bossSchema;
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      const { rows } = await client.query<{ incarnation: string; runs: number }>(
        `SELECT r.incarnation::text AS incarnation, count(*)::int AS runs
           FROM job_runs r JOIN ${s}.job j ON j.name = r.queue AND j.id = r.job_id
          WHERE r.worker = $1 AND r.incarnation <> $2::bigint AND j.state = 'active' AND j.retry_count = r.run
          GROUP BY r.incarnation`,
        [this.identity, this.incarnation],
      );
      const dead: string[] = [];
      let held = 0;
      for (const row of rows) {
        // Taken only if no session holds it: that incarnation's presence connection is closed. Held
        // until this transaction ends, so the check and the take-back below see the same answer.
        const { rows: lock } = await client.query<{ free: boolean }>(
          'SELECT pg_try_advisory_xact_lock($1::bigint) AS free',
          [row.incarnation],
        );
        if (lock[0]!.free) dead.push(row.incarnation);
        else held += row.runs;
      }
      let reclaimed = 0;
      if (dead.length) {
        const taken = await client.query<{ name: string; id: string; state: string }>(
          `UPDATE ${s}.job j SET
              state = CASE WHEN j.retry_count < j.retry_limit THEN 'retry'::${s}.job_state
                           ELSE 'failed'::${s}.job_state END,
              start_after = now(),
              completed_on = CASE WHEN j.retry_count < j.retry_limit THEN NULL ELSE now() END,
              output = CASE WHEN j.retry_count < j.retry_limit THEN j.output ELSE $3::jsonb END
             FROM job_runs r
            WHERE r.worker = $1 AND r.incarnation = ANY($2::bigint[])
              AND j.name = r.queue AND j.id = r.job_id AND j.state = 'active' AND j.retry_count = r.run
            RETURNING j.name, j.id::text AS id, j.state::text AS state`,
          [
            this.identity,
            dead,
            encodeJson({ outcome: 'failed', error: `the process running it died ${MAX_ATTEMPTS} times` }),
          ],
        );
        await client.query('DELETE FROM job_runs WHERE worker = $1 AND incarnation = ANY($2::bigint[])', [
          this.identity,
          dead,
        ]);
        for (const queue of new Set(taken.rows.filter((row) => row.state === 'retry').map((row) => row.name)))
          await client.query('SELECT pg_notify($1, $2)', [this.channel, queue]);
        for (const row of taken.rows)
          if (row.state === 'failed')
            this.logger.error(
              { job_id: row.id, queue: row.name },
              `job ${row.id} of ${row.name} failed: its process died on each of its ${MAX_ATTEMPTS} attempts`,
            );
        reclaimed = taken.rowCount ?? 0;
      }
      await client.query('COMMIT');
      return { reclaimed, held };
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      throw error;
    } finally {
      client.release();
    }
  }

  /**
   * Prunes `job_keys` rows older than the retention whose job pg-boss has deleted (from `job` and from
   * `archive`), and `job_runs` rows of runs no longer active. One process at a time (an advisory
   * transaction lock per pg-boss schema); the others skip. Runs every hour in each process; public for
   * tests.
   */
  async maintain(): Promise<{ keysPruned: number; runsSwept: number }> {
    const s = this.bossSchema;
    let keysPruned = 0;
    let runsSwept = 0;
    for (;;) {
      const pruned = await this.locked(async (client) => {
        const result = await client.query(
          `DELETE FROM job_keys WHERE ctid = ANY(ARRAY(
             SELECT k.ctid FROM job_keys k
              WHERE k.created_at < now() - make_interval(days => $1)
                AND NOT EXISTS (SELECT 1 FROM ${s}.job j WHERE j.name = k.queue AND j.id = k.job_id)
                AND NOT EXISTS (SELECT 1 FROM ${s}.archive a WHERE a.name = k.queue AND a.id = k.job_id)
              LIMIT $2))`,
          [this.keyRetentionDays, PRUNE_BATCH],
        );
        return result.rowCount ?? 0;
      });
      if (pruned === undefined) return { keysPruned, runsSwept };
      keysPruned += pruned;
      if (pruned < PRUNE_BATCH) break;
    }
    runsSwept =
      (await this.locked(async (client) => {
        const result = await client.query(
          // Only rows not written lately: a row a fetch is rewriting right now (a retried job taken
          // again) is seen with its new started_at, and kept.
          `DELETE FROM job_runs r
            WHERE r.started_at < now() - interval '10 minutes'
              AND NOT EXISTS (
                SELECT 1 FROM ${s}.job j
                 WHERE j.name = r.queue AND j.id = r.job_id AND j.state = 'active' AND j.retry_count = r.run)`,
        );
        return result.rowCount ?? 0;
      })) ?? 0;
    return { keysPruned, runsSwept };
  }

  /** Runs `body` in a transaction holding the maintenance lock; undefined when another process has it. */
  private async locked<T>(body: (client: pg.PoolClient) => Promise<T>): Promise<T | undefined> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      const { rows } = await client.query<{ got: boolean }>('SELECT pg_try_advisory_xact_lock($1) AS got', [
        maintenanceLockId(this.bossSchema),
      ]);
      if (!rows[0]!.got) {
        await client.query('COMMIT');
        return undefined;
      }
      const result = await body(client);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      throw error;
    } finally {
      client.release();
    }
  }

  private maintainInBackground(): Promise<unknown> | undefined {
    if (this.stopping || this.maintaining) return this.maintaining;
    this.maintaining = this.maintain()
      .then(({ keysPruned }) => {
        if (keysPruned)
          this.logger.info(`pruned ${keysPruned} job keys older than ${this.keyRetentionDays} days`);
      })
      .catch((error: unknown) => this.logger.warn({ err: error }, 'job queue maintenance failed'))
      .finally(() => (this.maintaining = undefined));
    return this.maintaining;
  }

  /**
   * The take-back at start. A process killed a moment ago may still look connected (PostgreSQL ends
   * its session when it reads the closed socket, within milliseconds on a live network), so runs found
   * held are looked at again every second for a few seconds before giving up on them; they then wait
   * for their lease.
   */
  private async reclaimAtStart(tries = 10): Promise<void> {
    const { reclaimed, held } = await this.reclaim();
    if (reclaimed)
      this.logger.info(
        `took back ${reclaimed} job runs that an earlier start of this process (${this.identity}) left unfinished`,
      );
    if (!held || this.stopping) return;
    if (tries <= 1) {
      this.logger.warn(
        `${held} running jobs are held under this process's identity (${this.identity}) by another ` +
          'live incarnation: two live processes with one identity? They run again once their lease runs out',
      );
      return;
    }
    this.reclaimTimer = setTimeout(() => {
      this.reclaimAtStart(tries - 1).catch((error: unknown) =>
        this.logger.warn({ err: error }, 'could not take back job runs of an earlier start'),
      );
    }, 1000);
    this.reclaimTimer.unref();
  }

  /**
   * Opens the connection that holds this incarnation's advisory lock for as long as it lives; the lock
   * is what tells a later start of this identity that this one is alive. Reopened at the next poll
   * when it drops, under the same number (its runs are still this incarnation's).
   */
  private holdIncarnation(): Promise<void> {
    if (this.stopping || this.presence) return Promise.resolve();
    return (this.presenceOpening ??= (async () => {
      const client = new pg.Client({
        connectionString: this.url,
        application_name: 'twinbox-jobs-presence',
        // So that the session of a host that vanished (no FIN) ends some day and frees the lock.
        keepAlive: true,
      });
      const lost = (error?: Error) => {
        if (this.presence !== client) return;
        this.presence = undefined;
        if (!this.stopping)
          this.logger.warn(
            `the job queue's presence connection dropped (${error?.message ?? 'closed'}); reopening it`,
          );
        void client.end().catch(() => {});
      };
      client.on('error', lost);
      client.on('end', () => lost());
      try {
        await client.connect();
        const { rows } = await client.query<{ held: boolean }>(
          'SELECT pg_try_advisory_lock($1::bigint) AS held',
          [this.incarnation],
        );
        if (!rows[0]?.held)
          throw new Error(`the advisory lock ${this.incarnation} is held by another session`);
        if (this.stopping) await client.end();
        else this.presence = client;
      } catch (error) {
        await client.end().catch(() => {});
        throw error;
      } finally {
        this.presenceOpening = undefined;
      }
    })());
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
      { worker: this.identity, incarnation: this.incarnation },
    );
    this.workers.set(queue, worker);
    await this.listen();
    this.pollTimer ??= setInterval(() => {
      if (!this.listener) void this.listen();
      if (!this.presence)
        this.holdIncarnation().catch((error: unknown) =>
          this.logger.warn(
            `could not reopen the job queue's presence connection: ${(error as Error).message}`,
          ),
        );
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
      if (this.maintenanceTimer) clearInterval(this.maintenanceTimer);
      if (this.reclaimTimer) clearTimeout(this.reclaimTimer);
      await Promise.all([...this.workers.values()].map((worker) => worker.stop()));
      await this.maintaining;
      await this.listener?.end().catch(() => {});
      this.listener = undefined;
      await this.presenceOpening?.catch(() => {});
      // Last: the runs of this incarnation have ended or been handed back by now.
      const presence = this.presence;
      this.presence = undefined;
      await presence?.end().catch(() => {});
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
    /** Who holds the runs this worker fetches (job_runs). */
    private readonly holder: { worker: string; incarnation: string },
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
            const jobs = await this.fetch(this.concurrency - this.running.size);
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

  /**
   * Takes up to `batchSize` jobs and records this process as the holder of their runs, in one
   * transaction: a run is never active without its holder (PostgresJobQueue.reclaim relies on it).
   */
  private async fetch(batchSize: number): Promise<Array<PgBoss.JobWithMetadata<JobData>>> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      const jobs = await this.boss.fetch<JobData>(this.queue, {
        batchSize,
        includeMetadata: true,
        db: { executeSql: (text, values) => client.query(text, values) },
      });
      if (jobs.length)
        await client.query(
          `INSERT INTO job_runs (queue, job_id, run, worker, incarnation)
           SELECT $1, id, run, $4, $5::bigint FROM unnest($2::uuid[], $3::int[]) AS t(id, run)
           ON CONFLICT (queue, job_id) DO UPDATE SET run = excluded.run, worker = excluded.worker,
             incarnation = excluded.incarnation, started_at = now()`,
          [
            this.queue,
            jobs.map((job) => job.id),
            jobs.map((job) => job.retryCount),
            this.holder.worker,
            this.holder.incarnation,
          ],
        );
      // pg-boss's fetch answers [] on its own errors: COMMIT then ends the failed transaction.
      await client.query('COMMIT');
      return jobs;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => {});
      throw error;
    } finally {
      client.release();
    }
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
    // The run's holder row goes with its end, in the same statement (fenced the same way).
    const forget = `DELETE FROM job_runs WHERE queue = $1 AND job_id IN (SELECT id FROM ended) AND run = $3`;
    if (outcome === 'handed back') {
      await this.pool.query(
        `WITH ended AS (
           UPDATE ${this.bossSchema}.job SET state = 'retry', start_after = now()
            WHERE name = $1 AND id = $2 AND state = 'active' AND retry_count = $3 RETURNING id)
         ${forget}`,
        [this.queue, id, run],
      );
      return;
    }
    await this.pool.query(
      `WITH ended AS (
         UPDATE ${this.bossSchema}.job SET state = 'completed', completed_on = now(), output = $4::jsonb
          WHERE name = $1 AND id = $2 AND state = 'active' AND retry_count = $3 RETURNING id)
       ${forget}`,
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

/** A random positive bigint (as text): an incarnation's number and advisory lock key. */
function randomIncarnation(): string {
  return (randomBytes(8).readBigUInt64BE() >> 1n).toString();
}

/** The advisory lock of the queue's maintenance, one per pg-boss schema (48 bits, exact in a number). */
function maintenanceLockId(bossSchema: string): number {
  return Number.parseInt(
    createHash('sha256').update(`twinbox-jobs-maintenance:${bossSchema}`).digest('hex').slice(0, 12),
    16,
  );
}

const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms).unref());
