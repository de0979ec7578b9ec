import type { Logger } from 'pino';
import type { Store } from '../store/store.ts';
import { EmbeddedJobQueue } from './embedded.ts';
import { PostgresJobQueue } from './postgres.ts';
import type { JobQueue } from './queue.ts';

export type { Job, JobData, JobHandler, JobQueue, SendOptions, SendResult, WorkOptions } from './queue.ts';
export { QUEUES } from './queue.ts';

export interface OpenJobQueueOptions {
  /** TWINBOX_DATABASE_URL: pg-boss on that database; unset, the embedded queue on `store`. */
  databaseUrl: string | undefined;
  /** The opened Store: its `jobs` collection (embedded); on PostgreSQL, it has run the migrations. */
  store: Store;
  logger: Logger;
  /** TWINBOX_JOB_LEASE_SECONDS (PostgreSQL only). */
  leaseSeconds?: number;
}

/** The job queue that goes with the Store: pg-boss beside a PostgreSQL store, else the embedded one. */
export async function openJobQueue(options: OpenJobQueueOptions): Promise<JobQueue> {
  if (options.databaseUrl)
    return PostgresJobQueue.open({
      url: options.databaseUrl,
      logger: options.logger,
      leaseSeconds: options.leaseSeconds,
    });
  return new EmbeddedJobQueue(options.store.jobs, options.logger.child({ component: 'jobs' }));
}
