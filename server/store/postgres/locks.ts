import type pg from 'pg';
import { KeyedLock } from '../../keyed-lock.ts';

/**
 * The advisory lock of a name: a 64-bit hash of the schema and the name, so stores in other schemas of
 * one database (tests, tenants) never wait on each other. `hashtextextended` is PostgreSQL's own
 * (11 and later), computed where the lock is taken, so every process derives the same key.
 */
const LOCK_SQL = `SELECT pg_advisory_xact_lock(hashtextextended(current_schema() || ':twinbox-lock:' || $1, 0))`;

/**
 * Named locks across every process sharing the database (Store.lock): a transaction-level advisory
 * lock (`pg_advisory_xact_lock`), held by a transaction that writes nothing and stays open while the
 * task runs; ending it frees the lock. A process that dies mid-task loses its connection, and with it
 * the lock, so a crash never leaves a name locked.
 *
 * The connections come from a pool of their own: a task holds one for its whole length while its own
 * queries use the store's pool, so locks held never starve the queries that would end them. Within a
 * process, waiters for one name queue in memory first, so a name costs at most one connection here
 * however many tasks wait for it.
 */
export class AdvisoryLocks {
  private readonly local = new KeyedLock();

  constructor(private readonly pool: pg.Pool) {}

  run<T>(name: string, task: () => Promise<T>): Promise<T> {
    return this.local.run(name, async () => {
      const client = await this.pool.connect();
      let broken: Error | undefined;
      try {
        await client.query('BEGIN');
        await client.query(LOCK_SQL, [name]);
        return await task();
      } finally {
        // Nothing was written in this transaction: ending it only frees the lock.
        await client.query('ROLLBACK').catch((error: Error) => (broken = error));
        client.release(broken);
      }
    });
  }
}
