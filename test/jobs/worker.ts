/**
 * The process the crash case of contract.ts kills with SIGKILL: opens the place of its environment (as
 * a Twinbox would: the Store, then the job queue), works JOB_QUEUE and prints `started <id> <attempt>`
 * when a job starts, whose handler then never ends. JOB_IDENTITY, when set, is its identity on
 * PostgreSQL (what jobQueueIdentity gives a Twinbox): a restart under it takes back its runs.
 */
import pino from 'pino';
import { openLowdbStore } from '../../server/store/lowdb-store.ts';
import { openPostgresStore } from '../../server/store/postgres/store.ts';
import { openJobQueue } from '../../server/jobs/index.ts';

const url = process.env.TWINBOX_DATABASE_URL;
const dataDir = process.env.TWINBOX_DATA_DIR;
const queueName = process.env.JOB_QUEUE;
if ((!url && !dataDir) || !queueName)
  throw new Error('worker.ts needs JOB_QUEUE and TWINBOX_DATABASE_URL or TWINBOX_DATA_DIR');
const store = url ? await openPostgresStore({ url }) : await openLowdbStore(dataDir!);
const queue = await openJobQueue({
  databaseUrl: url,
  store,
  logger: pino({ level: 'silent' }),
  leaseSeconds: Number(process.env.TWINBOX_JOB_LEASE_SECONDS ?? 60),
  identity: process.env.JOB_IDENTITY,
});
await queue.work(queueName, { concurrency: 1 }, async (job) => {
  process.stdout.write(`started ${job.id} ${job.attempt}\n`);
  await new Promise(() => {});
});
