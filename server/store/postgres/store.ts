import { lockNameError, StoreClosedError, type Store } from '../store.ts';
import { openCollections } from '../collections.ts';
import { PostgresCollection } from './collection.ts';
import { CachedCollection, ChangeFeed } from './changes.ts';
import { AdvisoryLocks } from './locks.ts';
import { migrate, verifySchema } from './migrate.ts';
import { openPool } from './pool.ts';
import { DatabaseUnavailableError } from './errors.ts';

export interface PostgresStoreOptions {
  /** `postgres://user:password@host:port/database`; `?options=-c search_path=<schema>` picks a schema. */
  url: string;
  /** Connections this process keeps open at most for queries. */
  poolSize?: number;
  /** Connections held by Store.lock tasks at most (default 10): tasks beyond wait for one. */
  lockPoolSize?: number;
  /** What migrations report, and errors of idle connections (the pool replaces them). */
  log?: (level: 'debug' | 'info' | 'warn', message: string) => void;
}

/**
 * Opens the store on PostgreSQL: a pool, then the pending migrations (under an advisory lock, so
 * processes starting at once are safe), then a check that the schema has every collection of
 * collections.ts. Collections live in the connection's current schema (`public` unless the URL's
 * search_path says otherwise), which must exist.
 */
export async function openPostgresStore(options: PostgresStoreOptions): Promise<Store> {
  const log = options.log ?? (() => {});
  const pool = openPool({
    url: options.url,
    max: options.poolSize ?? 10,
    applicationName: 'twinbox',
    onLost: (error) => log('warn', `PostgreSQL connection lost: ${error.message}`),
  });
  let feed: ChangeFeed | undefined;
  let schema: string | null | undefined;
  try {
    const client = await pool.connect().catch((error: unknown) => {
      throw new DatabaseUnavailableError(describe(options.url), error);
    });
    try {
      schema = (await client.query<{ schema: string | null }>('SELECT current_schema() AS schema')).rows[0]
        ?.schema;
      if (!schema) {
        throw new DatabaseUnavailableError(
          describe(options.url),
          new Error('no schema of its search_path exists; create it first'),
        );
      }
      const applied = await migrate(client, schema, {
        debug: (message) => log('debug', message),
        info: (message) => log('debug', message),
        warn: (message) => log('warn', message),
        error: (message) => log('warn', message),
      });
      if (applied.length)
        log('info', `PostgreSQL store: applied migrations ${applied.join(', ')} to ${schema}`);
      await verifySchema(client, schema);
    } finally {
      client.release();
    }
    const gate = { closed: false };
    // Read on every authenticated request (the key by its hash, then its account), and a sandbox on every
    // poll of GET /sandboxes/{id} (the CLI and the Action poll it until ready): kept in memory, and
    // dropped in every process when any process writes them (changes.ts).
    const changes = (feed = await ChangeFeed.open(options.url, schema!, (error) =>
      log('warn', `PostgreSQL change feed lost: ${error.message}`),
    ));
    const collections = await openCollections(async (key, spec) => {
      const collection = new PostgresCollection(pool, spec.table, spec, gate);
      if (key !== 'accounts' && key !== 'apiKeys' && key !== 'sandboxes') return collection;
      return new CachedCollection(collection, changes, new Set<string>(spec.unique), gate);
    });
    const lockPool = openPool({
      url: options.url,
      max: options.lockPoolSize ?? 10,
      applicationName: 'twinbox-locks',
      // A task waiting for a lock connection waits for a lock anyway; a deadline would fail it.
      connectTimeoutMs: 0,
      onLost: (error) => log('warn', `PostgreSQL lock connection lost: ${error.message}`),
    });
    const locks = new AdvisoryLocks(lockPool);
    let closing: Promise<void> | undefined;
    return {
      ...collections,
      lock: <T>(name: string, task: () => Promise<T>): Promise<T> => {
        const refused = lockNameError(name);
        if (refused) return Promise.reject(refused);
        if (gate.closed) return Promise.reject(new StoreClosedError('lock'));
        return locks.run(name, task);
      },
      // Every write has committed when it resolved; ending the pools waits for queries in flight.
      close: () => {
        gate.closed = true;
        return (closing ??= Promise.all([pool.end(), lockPool.end(), changes.close()]).then(() => undefined));
      },
    };
  } catch (error) {
    await feed?.close();
    await pool.end().catch(() => {});
    throw error;
  }
}

/** host:port/database of a connection URL, without its credentials, for messages. */
export function describe(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.hostname || 'localhost'}:${parsed.port || '5432'}${parsed.pathname}`;
  } catch {
    return 'an unparsable URL';
  }
}
