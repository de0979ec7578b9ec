import pg from 'pg';
import { decodeJson } from './codec.ts';

const JSONB_OID = 3802;

/**
 * A pool on Twinbox's database, as the Store and the job queue both open one: jsonb read with the
 * Store's codec (it keeps NUL and lone surrogates, which jsonb refuses, inside escapes), a database that
 * does not answer failing the waiting request after 10 s instead of hanging it, and a dropped idle
 * connection reported through `onLost` (the pool discards it; the next query opens another) rather than
 * crashing the process.
 */
export function openPool(options: {
  url: string;
  max: number;
  applicationName: string;
  onLost: (error: Error) => void;
  /** How long a request waits for a connection (default 10 s); 0 waits as long as it takes. */
  connectTimeoutMs?: number;
}): pg.Pool {
  const pool = new pg.Pool({
    connectionString: options.url,
    max: options.max,
    application_name: options.applicationName,
    connectionTimeoutMillis: options.connectTimeoutMs ?? 10_000,
    types: {
      getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
        oid === JSONB_OID
          ? decodeJson
          : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
    },
  });
  pool.on('error', options.onLost);
  return pool;
}
