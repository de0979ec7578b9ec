import { KeyedLock } from '../keyed-lock.ts';
import { mkdir, readdir, rename, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { Low } from 'lowdb';
import { writeFileDurably } from '../durable-write.ts';
import { DurableJsonFile } from './durable-json-file.ts';
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
} from './store.ts';

export interface CollectionOptions<T> {
  /** Fields whose values identify at most one record. */
  unique?: (keyof T & string)[];
  /** Fields looked up with findBy / findOneBy. Unique fields are indexed too. */
  indexed?: (keyof T & string)[];
  /** Counts kept up to date as records change (collections.ts). */
  tallies?: { by: keyof T & string; where: keyof T & string; in: readonly string[] }[];
  /** Where writes become durable: the store's journal; by default each record's own file, fsynced. */
  sink?: RecordSink;
}

/**
 * Makes a write durable: `record` is the JSON text of `<table>/<id>.json`, or null for its removal.
 * Resolves once a crash can no longer lose it.
 */
export interface RecordSink {
  write(table: string, id: string, record: string | null): Promise<void>;
}

/** Each write its own atomic, fsynced file under `directory` (durable-json-file.ts). */
function recordFilesIn(directory: string): RecordSink {
  return {
    write: (_table, id, record) => {
      const file = new DurableJsonFile(join(directory, `${id}.json`));
      return record === null ? file.remove() : writeFileDurably(file.path, record);
    },
  };
}

/** A tally: per value of `by`, how many records have `where` in `values`. */
interface Tally {
  by: string;
  where: string;
  in: readonly string[];
  values: ReadonlySet<unknown>;
  counts: Map<unknown, number>;
  /** Inserts `within` the tally still writing, per key: counted by the next check before they land. */
  pending: Map<unknown, number>;
}

/**
 * A collection kept as one lowdb JSON file per record under `directory`, with all records and their
 * indexes held in memory. One file per record keeps the cost of a write independent of the number of
 * records (a single-file lowdb rewrites everything on every write).
 */
export class LowdbCollection<T extends { id: string }> implements Collection<T> {
  private readonly records = new Map<string, T>();
  private readonly indexes = new Map<string, Map<unknown, Set<string>>>();
  private readonly unique: Set<string>;
  private readonly tallies: Tally[];
  /** Unique values claimed by writes still in flight, so two concurrent writes cannot both pass. */
  private readonly claimed = new Map<string, Set<unknown>>();
  /** Per-record chain of writes, so writes to one record land in the order they were made. */
  private readonly chains = new KeyedLock();
  /**
   * Set by the store's close(): later writes are refused. Reads still answer from memory, which nothing
   * can change any more (PostgreSQL refuses them too: its pool is gone).
   */
  private closed = false;
  private readonly sink: RecordSink;

  private constructor(
    readonly name: string,
    private readonly directory: string,
    options: CollectionOptions<T>,
  ) {
    this.unique = new Set(options.unique ?? []);
    this.sink = options.sink ?? recordFilesIn(directory);
    this.tallies = (options.tallies ?? []).map((tally) => ({
      by: tally.by,
      where: tally.where,
      in: tally.in,
      values: new Set(tally.in),
      counts: new Map(),
      pending: new Map(),
    }));
    for (const field of [...(options.unique ?? []), ...(options.indexed ?? [])]) {
      this.indexes.set(field, new Map());
      this.claimed.set(field, new Set());
    }
  }

  static async open<T extends { id: string }>(
    name: string,
    directory: string,
    options: CollectionOptions<T> = {},
  ): Promise<LowdbCollection<T>> {
    const collection = new LowdbCollection<T>(name, directory, options);
    await collection.load();
    return collection;
  }

  private async load(): Promise<void> {
    await mkdir(this.directory, { recursive: true, mode: 0o700 });
    for (const entry of await readdir(this.directory)) {
      const path = join(this.directory, entry);
      // A temporary file is a write that was interrupted before its rename: it was never acknowledged.
      if (entry.endsWith('.tmp')) {
        await unlink(path);
        continue;
      }
      if (!entry.endsWith('.json')) continue;
      const db = new Low<T | null>(new DurableJsonFile<T | null>(path), null);
      try {
        await db.read();
      } catch {
        // Writes are atomic, so this means the file was damaged from outside. Keep it aside for a
        // person to look at rather than failing every start or silently dropping it.
        await rename(path, `${path}.unreadable`);
        process.emitWarning(`Twinbox store: ${path} is not valid JSON; moved to ${path}.unreadable`);
        continue;
      }
      if (db.data) this.remember(db.data);
    }
  }

  async get(id: string): Promise<T | undefined> {
    return this.records.get(id);
  }

  async findBy<K extends keyof T & string>(field: K, value: T[K]): Promise<T[]> {
    const ids = this.index(field).get(value);
    if (!ids) return [];
    return [...ids].map((id) => this.records.get(id)!);
  }

  async findOneBy<K extends keyof T & string>(field: K, value: T[K]): Promise<T | undefined> {
    const ids = this.index(field).get(value);
    if (!ids || ids.size === 0) return undefined;
    return this.records.get(ids.values().next().value!);
  }

  async count(): Promise<number> {
    return this.records.size;
  }

  async countBy<K extends keyof T & string>(field: K, value: T[K], where?: CountWhere<T>): Promise<number> {
    const ids = this.index(field).get(value);
    if (!where) return ids?.size ?? 0;
    const tally = declaredTally(this.tallies, field, where.field, where.in);
    if (tally) return tally.counts.get(value) ?? 0;
    let n = 0;
    for (const id of ids ?? []) if (where.in.includes(this.records.get(id)![where.field] as string)) n++;
    return n;
  }

  insert(record: T, within?: TallyLimit<T>): Promise<T> {
    if (this.closed) return Promise.reject(new StoreClosedError(this.name));
    // Record ids become file names, so they are restricted to a safe alphabet.
    if (!SAFE_RECORD_ID.test(record.id)) return Promise.reject(new UnsafeIdError(this.name, record.id));
    if (this.records.has(record.id)) return Promise.reject(new UniqueViolationError(this.name, 'id'));
    let settle = () => {};
    if (within) {
      const tally = declaredTally(this.tallies, within.by, within.where, within.in);
      if (!tally)
        return Promise.reject(
          new Error(`${this.name}: no tally of ${within.by} by ${within.where} is declared`),
        );
      const key = record[within.by];
      if (tally.values.has(record[within.where])) {
        // Checked and claimed in one synchronous step, so concurrent inserts cannot all see room; the
        // claim ends where the record joins the tally (or its write fails).
        const held = (tally.counts.get(key) ?? 0) + (tally.pending.get(key) ?? 0);
        if (held >= within.max) return Promise.reject(new TallyFullError(this.name, held, within.max));
        tally.pending.set(key, (tally.pending.get(key) ?? 0) + 1);
        settle = () => {
          settle = () => {};
          const left = tally.pending.get(key)! - 1;
          if (left === 0) tally.pending.delete(key);
          else tally.pending.set(key, left);
        };
      }
    }
    // Not refused for a write still in flight on this id: the chain runs after it and checks again, so
    // an insert right after a delete of the same id succeeds.
    return this.chains
      .run(record.id, async () => {
        if (this.records.has(record.id)) throw new UniqueViolationError(this.name, 'id');
        await this.writeClaiming(undefined, record, () => settle());
        return record;
      })
      .finally(() => settle());
  }

  update(id: string, change: (current: T) => T): Promise<T | undefined> {
    if (this.closed) return Promise.reject(new StoreClosedError(this.name));
    if (!SAFE_RECORD_ID.test(id)) return Promise.resolve(undefined);
    return this.chains.run(id, async () => {
      const current = this.records.get(id);
      if (!current) return undefined;
      const next = change(structuredClone(current));
      if (next.id !== id) throw new Error(`${this.name}: update may not change a record's id`);
      await this.writeClaiming(current, next);
      return next;
    });
  }

  delete(id: string): Promise<boolean> {
    if (this.closed) return Promise.reject(new StoreClosedError(this.name));
    if (!SAFE_RECORD_ID.test(id)) return Promise.resolve(false);
    return this.chains.run(id, async () => {
      const current = this.records.get(id);
      if (!current) return false;
      await this.sink.write(this.name, id, null);
      this.forget(current);
      return true;
    });
  }

  /**
   * Checks and claims the unique values `next` introduces, writes `next` durably, then makes it
   * visible. Readers only ever see durable records; claims close the window during the write.
   */
  private async writeClaiming(current: T | undefined, next: T, remembered?: () => void): Promise<void> {
    const claims: [string, unknown][] = [];
    for (const field of this.unique) {
      const value = next[field as keyof T];
      if (value === undefined || value === null || (current && current[field as keyof T] === value)) continue;
      const holders = this.indexes.get(field)!.get(value);
      const claimed = this.claimed.get(field)!;
      if ((holders && holders.size > 0) || claimed.has(value)) {
        for (const [f, v] of claims) this.claimed.get(f)!.delete(v);
        throw new UniqueViolationError(this.name, field);
      }
      claimed.add(value);
      claims.push([field, value]);
    }
    try {
      await this.sink.write(this.name, next.id, JSON.stringify(next));
      if (current) this.forget(current);
      this.remember(next);
      // In the same step as remember: no check in between sees the record twice (tally and claim).
      remembered?.();
    } finally {
      for (const [field, value] of claims) this.claimed.get(field)!.delete(value);
    }
  }

  /** Refuses writes from now on, then resolves once every write already made has settled. */
  async close(): Promise<void> {
    this.closed = true;
    await this.chains.idle();
  }

  private remember(record: T): void {
    this.records.set(record.id, record);
    this.adjustTallies(record, 1);
    for (const [field, index] of this.indexes) {
      const value = record[field as keyof T];
      let ids = index.get(value);
      if (!ids) index.set(value, (ids = new Set()));
      ids.add(record.id);
    }
  }

  private forget(record: T): void {
    this.records.delete(record.id);
    this.adjustTallies(record, -1);
    for (const [field, index] of this.indexes) {
      const value = record[field as keyof T];
      const ids = index.get(value);
      ids?.delete(record.id);
      if (ids?.size === 0) index.delete(value);
    }
  }

  private adjustTallies(record: T, by: 1 | -1): void {
    for (const tally of this.tallies) {
      if (!tally.values.has(record[tally.where as keyof T])) continue;
      const key = record[tally.by as keyof T];
      const n = (tally.counts.get(key) ?? 0) + by;
      if (n === 0) tally.counts.delete(key);
      else tally.counts.set(key, n);
    }
  }

  private index(field: string): Map<unknown, Set<string>> {
    const index = this.indexes.get(field);
    if (!index) throw new Error(`${this.name}.${field} is not indexed`);
    return index;
  }
}
