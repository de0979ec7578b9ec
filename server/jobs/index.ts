import { hostname } from 'node:os';
import type { Logger } from 'pino';
import type { Store } from '../store/store.ts';
import { EmbeddedJobQueue } from './embedded.ts';
import { loadPart } from '../load-part.ts';
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
  /** jobQueueIdentity(config) (PostgreSQL only): a restart under it takes back its own cut-off runs. */
  identity?: string;
  /** TWINBOX_JOB_KEY_RETENTION_DAYS (PostgreSQL only). */
  keyRetentionDays?: number;
}

/**
 * What a process is to the PostgreSQL queue across its restarts: its host name, its data directory
 * (which the data-dir lock gives to one live process of that host) and, when set, its runner id. A
 * process restarted on the same host and data directory is the same worker and takes back the runs its
 * previous start left active (docs/jobs.md, "A restart takes back its own runs").
 */
export function jobQueueIdentity(process: { dataDir: string; runnerId?: string | undefined }): string {
  const host = hostname();
  return process.runnerId ? `${process.runnerId}@${host}:${process.dataDir}` : `${host}:${process.dataDir}`;
}

/** The job queue that goes with the Store: pg-boss beside a PostgreSQL store, else the embedded one. */
export async function openJobQueue(options: OpenJobQueueOptions): Promise<JobQueue> {
  if (options.databaseUrl) {
    // pg-boss loads only beside a PostgreSQL store (load-part.ts).
    const { PostgresJobQueue } = await loadPart('the PostgreSQL job queue', () => import('./postgres.ts'));
    return PostgresJobQueue.open({
      url: options.databaseUrl,
      logger: options.logger,
      leaseSeconds: options.leaseSeconds,
      identity: options.identity,
      keyRetentionDays: options.keyRetentionDays,
    });
  }
  return new EmbeddedJobQueue(options.store.jobs, options.logger.child({ component: 'jobs' }));
}
