import type { DatabaseError, Pool, PoolClient } from 'pg';
import type { CollectionSpec } from '../collections.ts';
import { encodeJson, escapeString } from './codec.ts';
import { tallyName, type TallySpec } from './tallies.ts';
import {
  declaredTally,
  SAFE_RECORD_ID,
  StoreClosedError,
  TallyFullError,
  UniqueViolationError,
  UnsafeIdError,
  type Collection,
  type CountWhere,
  type TallyLimit,
} from '../store.ts';

/** The NOTIFY channel of changes to cached collections (changes.ts); payloads name their schema. */
export const CHANGES_CHANNEL = 'twinbox_changes';

/**
 * A write's notice to the other processes (changes.ts): the NOTIFY payload, the advisory lock that
 * every listening process of the schema holds shared, and where to report, once the write committed a
 * row, how many held it at the write.
 */
export interface ChangeNotice {
  payload: string;
  listenerLock: readonly [number, number];
  sent(listeners: number): void;
}

/** The listening processes of a schema: the holders of its change feed's shared advisory lock. */
const LISTENERS = (lock: string, object: string) =>
  `(SELECT count(*)::int FROM pg_locks WHERE locktype = 'advisory' AND classid = ${lock}::oid ` +
  `AND objid = ${object}::oid AND objsubid = 2 AND granted)`;

/** SQLSTATE of a unique index refusing a row. */
const UNIQUE_VIOLATION = '23505';

/**
 * A collection as one table: `id text primary key`, the record as `data jsonb`. Unique and indexed
 * fields are expression indexes on `data ->> field` (migrations/), so the database enforces uniqueness
 * for every process that shares it.
 */
export class PostgresCollection<T extends { id: string }> implements Collection<T> {
  private readonly table: string;
  private readonly lookup: Set<string>;
  /** Index name -> field, to name the field of a unique violation. */
  private readonly uniqueIndexes = new Map<string, string>();
  private readonly tallies: readonly TallySpec[];

  constructor(
    private readonly pool: Pool,
    readonly name: string,
    spec: Pick<CollectionSpec<T>, 'unique' | 'indexed' | 'tallies'>,
    /** Closed by the store's close(): every later call is refused with StoreClosedError. */
    private readonly gate: { closed: boolean } = { closed: false },
  ) {
    this.table = quoteIdent(name);
    this.lookup = new Set([...spec.unique, ...spec.indexed]);
    this.uniqueIndexes.set(`${name}_pkey`, 'id');
    for (const field of spec.unique) this.uniqueIndexes.set(`${name}_${field}_key`, field);
    this.tallies = spec.tallies ?? [];
  }

  async get(id: string): Promise<T | undefined> {
    this.open();
    if (!SAFE_RECORD_ID.test(id)) return undefined;
    // Named, so each connection parses and plans it once: the read every request makes.
    const { rows } = await this.pool.query<{ data: T }>({
      name: `twinbox.get.${this.name}`,
      text: `SELECT data FROM ${this.table} WHERE id = $1`,
      values: [id],
    });
    return rows[0]?.data;
  }

  async findBy<K extends keyof T & string>(field: K, value: T[K]): Promise<T[]> {
    this.open();
    const { rows } = await this.pool.query<{ data: T }>(
      `SELECT data FROM ${this.table} WHERE ${this.matching(field, value)}`,
      this.matchParams(field, value),
    );
    return rows.map((row) => row.data);
  }

  async findOneBy<K extends keyof T & string>(field: K, value: T[K]): Promise<T | undefined> {
    this.open();
    const { rows } = await this.pool.query<{ data: T }>(
      `SELECT data FROM ${this.table} WHERE ${this.matching(field, value)} LIMIT 1`,
      this.matchParams(field, value),
    );
    return rows[0]?.data;
  }

  async count(): Promise<number> {
    this.open();
    const { rows } = await this.pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${this.table}`);
    return rows[0]!.n;
  }

  async countBy<K extends keyof T & string>(field: K, value: T[K], where?: CountWhere<T>): Promise<number> {
    this.open();
    const tally = where && declaredTally(this.tallies, field, where.field, where.in);
    // A declared tally is one row, kept by a trigger as rows change (migrations/0008_tallies.sql):
    // its cost does not grow with the matching records, nor with their size. It keys strings only.
    if (tally && typeof value === 'string') {
      const { rows } = await this.pool.query<{ n: number }>({
        name: 'twinbox.tally',
        text: `SELECT n FROM twinbox_tallies WHERE tally = $1 AND key = $2`,
        values: [tallyName(this.name, tally), escapeString(value)],
      });
      return rows[0]?.n ?? 0;
    }
    const params = this.matchParams(field, value);
    let condition = this.matching(field, value);
    if (where) {
      params.push(where.in.map(escapeString));
      condition += ` AND data ->> ${quoteLiteral(where.field)} = ANY($${params.length}::text[])`;
    }
    const { rows } = await this.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${this.table} WHERE ${condition}`,
      params,
    );
    return rows[0]!.n;
  }

  /**
   * `notice`, given, is sent with NOTIFY on CHANGES_CHANNEL in the same transaction as the write (so at
   * its commit, and only if it commits and changed a row): how other processes learn to drop what
   * they cached of the record (changes.ts). The same statement counts the listening processes.
   */
  async insert(record: T, within?: TallyLimit<T>, notice?: ChangeNotice): Promise<T> {
    this.open();
    if (!SAFE_RECORD_ID.test(record.id)) throw new UnsafeIdError(this.name, record.id);
    const limit = within && this.limitOf(record, within);
    try {
      if (limit) return await this.insertWithin(record, limit, notice);
      await this.insertRow(record, notice);
    } catch (error) {
      throw this.translate(error);
    }
    return record;
  }

  /**
   * One statement, so one round trip and no transaction held open across several: the tally's row of
   * `record`'s key is locked first (created at 0 when absent, so the very first inserts of a key wait
   * for each other too), the record is inserted only if that count is below the max, and the insert's
   * trigger counts it under the same lock. Inserts within one key, from any process, so take turns from
   * the lock to their commit, and each sees the count every earlier one committed (READ COMMITTED: the
   * upsert waits for the row and then reads its latest committed version).
   */
  private async insertWithin(
    record: T,
    limit: { tally: string; key: string; max: number },
    notice: ChangeNotice | undefined,
  ): Promise<T> {
    const values: unknown[] = [record.id, encodeJson(record), limit.tally, limit.key, limit.max];
    let told = '';
    if (notice !== undefined) {
      values.push(CHANGES_CHANNEL, notice.payload, ...notice.listenerLock);
      // Only for a row written: a refused insert tells no one.
      told = `, (SELECT pg_notify($6, $7) IS NULL FROM written) AS told, ${LISTENERS('$8', '$9')} AS listeners`;
    }
    const { rows } = await this.pool.query<{ n: number; written: number; listeners?: number }>(
      `WITH locked AS (INSERT INTO twinbox_tallies AS t (tally, key, n) VALUES ($3, $4, 0) ` +
        `ON CONFLICT (tally, key) DO UPDATE SET n = t.n RETURNING n), ` +
        `written AS (INSERT INTO ${this.table} (id, data) SELECT $1, $2::jsonb FROM locked WHERE n < $5 RETURNING id) ` +
        `SELECT (SELECT n FROM locked) AS n, (SELECT count(*)::int FROM written) AS written${told}`,
      values,
    );
    const row = rows[0]!;
    if (row.written === 0) throw new TallyFullError(this.name, row.n, limit.max);
    if (notice !== undefined) notice.sent(row.listeners!);
    return record;
  }

  /** The tally `within` names and `record`'s key in it, or undefined when `record` does not count. */
  private limitOf(record: T, within: TallyLimit<T>): { tally: string; key: string; max: number } | undefined {
    const tally = declaredTally(this.tallies, within.by, within.where, within.in);
    if (!tally) throw new Error(`${this.name}: no tally of ${within.by} by ${within.where} is declared`);
    const key = record[within.by];
    const value = record[within.where];
    // As the trigger counts: string values only.
    if (typeof key !== 'string' || typeof value !== 'string' || !within.in.includes(value)) return undefined;
    return { tally: tallyName(this.name, tally), key: escapeString(key), max: within.max };
  }

  private async insertRow(record: T, notice: ChangeNotice | undefined): Promise<void> {
    const insert = `INSERT INTO ${this.table} (id, data) VALUES ($1, $2::jsonb)`;
    if (notice === undefined) {
      await this.pool.query(insert, [record.id, encodeJson(record)]);
      return;
    }
    const { rows } = await this.pool.query<{ listeners: number }>(
      `WITH written AS (${insert} RETURNING id) ` +
        `SELECT pg_notify($3, $4), ${LISTENERS('$5', '$6')} AS listeners FROM written`,
      [record.id, encodeJson(record), CHANGES_CHANNEL, notice.payload, ...notice.listenerLock],
    );
    if (rows[0]) notice.sent(rows[0].listeners);
  }

  /**
   * Locks the row (`SELECT ... FOR UPDATE`), so concurrent updates of one record, from this process
   * or any other, run one after the other on the latest committed state; `change` runs in between,
   * and its throwing rolls the transaction back.
   */
  async update(id: string, change: (current: T) => T, notice?: ChangeNotice): Promise<T | undefined> {
    this.open();
    if (!SAFE_RECORD_ID.test(id)) return undefined;
    return this.transaction(async (client) => {
      const { rows } = await client.query<{ data: T }>(
        `SELECT data FROM ${this.table} WHERE id = $1 FOR UPDATE`,
        [id],
      );
      const current = rows[0]?.data;
      if (!current) return undefined;
      const next = change(current);
      if (next.id !== id) throw new Error(`${this.name}: update may not change a record's id`);
      await client.query(`UPDATE ${this.table} SET data = $2::jsonb WHERE id = $1`, [id, encodeJson(next)]);
      if (notice !== undefined) {
        const { rows } = await client.query<{ listeners: number }>(
          `SELECT pg_notify($1, $2), ${LISTENERS('$3', '$4')} AS listeners`,
          [CHANGES_CHANNEL, notice.payload, ...notice.listenerLock],
        );
        notice.sent(rows[0]!.listeners);
      }
      return next;
    });
  }

  async delete(id: string, notice?: ChangeNotice): Promise<boolean> {
    this.open();
    if (!SAFE_RECORD_ID.test(id)) return false;
    const remove = `DELETE FROM ${this.table} WHERE id = $1`;
    if (notice === undefined) return ((await this.pool.query(remove, [id])).rowCount ?? 0) > 0;
    const { rows } = await this.pool.query<{ listeners: number }>(
      `WITH removed AS (${remove} RETURNING id) ` +
        `SELECT pg_notify($2, $3), ${LISTENERS('$4', '$5')} AS listeners FROM removed`,
      [id, CHANGES_CHANNEL, notice.payload, ...notice.listenerLock],
    );
    if (rows[0]) notice.sent(rows[0].listeners);
    return rows.length > 0;
  }

  /**
   * `data ->> field = $1` finds the rows through the field's index; `data -> field = $2` then keeps
   * only those whose JSON value is exactly the one asked for (so 1 does not find "1"). Null finds
   * records whose field is null, undefined those without the field, as the embedded store does.
   */
  private matching(field: string, value: unknown): string {
    if (!this.lookup.has(field)) throw new Error(`${this.name}.${field} is not indexed`);
    const f = quoteLiteral(field);
    if (value === undefined) return `data ->> ${f} IS NULL AND NOT data ? ${f}`;
    if (value === null) return `data ->> ${f} IS NULL AND data -> ${f} = 'null'::jsonb`;
    return `data ->> ${f} = $1 AND data -> ${f} = $2::jsonb`;
  }

  private matchParams(_field: string, value: unknown): unknown[] {
    if (value === undefined || value === null) return [];
    return [typeof value === 'string' ? escapeString(value) : JSON.stringify(value), encodeJson(value)];
  }

  private open(): void {
    if (this.gate.closed) throw new StoreClosedError(this.name);
  }

  private async transaction<R>(work: (client: PoolClient) => Promise<R>): Promise<R> {
    const client = await this.pool.connect();
    let broken: Error | undefined;
    try {
      await client.query('BEGIN');
      const result = await work(client);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      try {
        await client.query('ROLLBACK');
      } catch (rollbackError) {
        // The connection is unusable: the pool must not hand it out again.
        broken = rollbackError as Error;
      }
      throw this.translate(error);
    } finally {
      client.release(broken);
    }
  }

  private translate(error: unknown): unknown {
    const pgError = error as DatabaseError;
    if (pgError?.code !== UNIQUE_VIOLATION) return error;
    const field = pgError.constraint ? this.uniqueIndexes.get(pgError.constraint) : undefined;
    return new UniqueViolationError(this.name, field ?? pgError.constraint ?? 'unknown');
  }
}

/** Table and field names come from collections.ts, never from a request; quoted all the same. */
function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

function quoteLiteral(text: string): string {
  return `'${text.replace(/'/g, "''")}'`;
}
