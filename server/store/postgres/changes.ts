import { createHash, randomBytes } from 'node:crypto';
import pg from 'pg';
import { StoreClosedError, type Collection, type CountWhere, type TallyLimit } from '../store.ts';
import { CHANGES_CHANNEL, type ChangeNotice, type PostgresCollection } from './collection.ts';

/** The NOTIFY channel on which a process says it has dropped what a notice named: `<schema> <token>`. */
export const ACKS_CHANNEL = 'twinbox_change_acks';
/** The first key of the listeners' shared advisory locks ("tw"); the second is the schema's. */
const LISTENER_LOCK_CLASS = 0x7477;
/**
 * How long a write waits for every listening process to confirm its notice before it resolves anyway
 * (a process that died after the write was counted never confirms).
 */
const ECHO_TIMEOUT_MS = 2_000;
/** Wait before listening again after the listening connection was lost. */
const RECONNECT_MS = 500;

interface Invalidated {
  table: string;
  id: string;
}

/** The advisory lock (two int4 keys) that every process listening for `schema`'s changes holds shared. */
export function listenerLockOf(schema: string): [number, number] {
  return [LISTENER_LOCK_CLASS, createHash('sha256').update(schema).digest().readUInt32BE(0) >>> 1];
}

/** A write of this process waiting for the listening processes to confirm its notice. */
interface Echo {
  /** Processes that confirmed, this one included. */
  confirmed: number;
  /** How many listened at the write; unknown until the write has answered. */
  expected: number | undefined;
  done(): void;
}

/**
 * Every process's view of writes to cached collections: one connection that LISTENs on
 * CHANGES_CHANNEL. A notice is `<schema> <table> <id> <token>` (tab-separated; ids and schema names hold
 * no tab): stores in other schemas of the database ignore it. While the connection is down the caches
 * are off (`live` false) and emptied, since notices sent meanwhile are lost; they fill again once it
 * listens anew.
 *
 * PostgreSQL sends a notice to each listening backend at the commit, but each backend passes it on to
 * its process on its own time, and the process reads it when its event loop gets to it: a request can
 * reach another process before its notice does. So each process confirms every notice of another, on
 * ACKS_CHANNEL, after it dropped the record; and a write resolves once as many processes confirmed as
 * held the schema's listener lock when it wrote (the lock is taken once listening, and goes with the
 * connection).
 */
export class ChangeFeed {
  live = false;
  private client: pg.Client | undefined;
  private closed = false;
  private readonly listeners = new Set<(change: Invalidated | 'all') => void>();
  /** Writes of this process waiting for the listening processes to confirm their notice. */
  private readonly echoes = new Map<string, Echo>();
  /** The schema's listener lock: every listening process holds it shared. */
  private readonly listenerLock: readonly [number, number];

  private constructor(
    private readonly url: string,
    private readonly schema: string,
    private readonly onLost: (error: Error) => void,
  ) {
    this.listenerLock = listenerLockOf(schema);
  }

  /** Resolves once listening: a store that cannot listen does not start. */
  static async open(url: string, schema: string, onLost: (error: Error) => void): Promise<ChangeFeed> {
    const feed = new ChangeFeed(url, schema, onLost);
    await feed.listen();
    return feed;
  }

  private async listen(): Promise<void> {
    const client = new pg.Client({ connectionString: this.url, application_name: 'twinbox-changes' });
    client.on('notification', (message) => {
      if (!message.payload) return;
      if (message.channel === CHANGES_CHANNEL) this.receive(client, message.payload);
      else if (message.channel === ACKS_CHANNEL) this.confirmed(message.payload);
    });
    const lost = (error: Error) => {
      if (this.client !== client) return;
      this.client = undefined;
      this.down();
      if (this.closed) return;
      this.onLost(error);
      setTimeout(() => void this.reconnect(), RECONNECT_MS).unref();
    };
    client.on('error', lost);
    client.on('end', () => lost(new Error('the listening connection ended')));
    await client.connect();
    await client.query(`LISTEN ${CHANGES_CHANNEL}; LISTEN ${ACKS_CHANNEL}`);
    // Held from now on, with the connection: writers count this process among those to confirm.
    await client.query('SELECT pg_advisory_lock_shared($1, $2)', [...this.listenerLock]);
    this.client = client;
    // Whatever was cached before may have changed while nobody listened.
    for (const listener of this.listeners) listener('all');
    this.live = true;
  }

  private async reconnect(): Promise<void> {
    if (this.closed || this.client) return;
    try {
      await this.listen();
    } catch (error) {
      this.onLost(error as Error);
      if (!this.closed) setTimeout(() => void this.reconnect(), RECONNECT_MS).unref();
    }
  }

  private down(): void {
    this.live = false;
    for (const listener of this.listeners) listener('all');
    // Nothing will come back on a lost connection: the waiting writes go on.
    for (const echo of [...this.echoes.values()]) echo.done();
    this.echoes.clear();
  }

  private receive(client: pg.Client, payload: string): void {
    const [schema, table, id, token] = payload.split('\t');
    if (schema !== this.schema || !table || !id) return;
    for (const listener of this.listeners) listener({ table, id });
    if (!token) return;
    const own = this.echoes.get(token);
    if (own) this.count(own, 1);
    // Another process's write: it waits for this confirmation. A lost connection fails the query and
    // the write's wait times out; 'lost' above handles the connection.
    else client.query('SELECT pg_notify($1, $2)', [ACKS_CHANNEL, `${this.schema}\t${token}`]).catch(() => {});
  }

  private confirmed(payload: string): void {
    const [schema, token] = payload.split('\t');
    if (schema !== this.schema || !token) return;
    const echo = this.echoes.get(token);
    if (echo) this.count(echo, 1);
  }

  private count(echo: Echo, confirmations: number): void {
    echo.confirmed += confirmations;
    if (echo.expected !== undefined && echo.confirmed >= echo.expected) echo.done();
  }

  onChange(listener: (change: Invalidated | 'all') => void): void {
    this.listeners.add(listener);
  }

  /**
   * A notice for a write of `table`/`id`, and a promise that resolves once every process listening at
   * the write (this one included) has dropped the record, or the wait timed out, or the feed is down.
   */
  notice(table: string, id: string): { notice: ChangeNotice; echoed: Promise<void>; cancel(): void } {
    const token = randomBytes(8).toString('hex');
    const payload = `${this.schema}\t${table}\t${id}\t${token}`;
    const listenerLock = this.listenerLock;
    if (!this.live)
      return {
        notice: { payload, listenerLock, sent: () => {} },
        echoed: Promise.resolve(),
        cancel: () => {},
      };
    let timer: NodeJS.Timeout | undefined;
    let echo!: Echo;
    const echoed = new Promise<void>((resolve) => {
      echo = {
        confirmed: 0,
        expected: undefined,
        done: () => {
          clearTimeout(timer);
          this.echoes.delete(token);
          resolve();
        },
      };
      this.echoes.set(token, echo);
      timer = setTimeout(echo.done, ECHO_TIMEOUT_MS);
      timer.unref();
    });
    const sent = (listeners: number) => {
      echo.expected = listeners;
      this.count(echo, 0);
    };
    return { notice: { payload, listenerLock, sent }, echoed, cancel: echo.done };
  }

  async close(): Promise<void> {
    this.closed = true;
    const client = this.client;
    this.client = undefined;
    this.down();
    await client?.end().catch(() => {});
  }
}

/** Entries a cached collection holds at most; past it, it starts again empty. */
const MAX_ENTRIES = 10_000;

/**
 * A collection whose `get` and `findOneBy` on unique fields answer from memory once read, for records
 * read on every request (an API key by its hash, its account). Every write of the collection, in any
 * process, sends a notice with its commit (ChangeFeed) and every process drops the record on it; a
 * write here resolves once its notice has come back, so a revoked key is refused everywhere by the
 * time the revoke is answered. A read that overlaps an invalidation is not kept (the generation).
 */
export class CachedCollection<T extends { id: string }> implements Collection<T> {
  /** Cache key (`id:<id>` or `<field>:<value>`) -> record. */
  private readonly entries = new Map<string, T>();
  /** Record id -> the cache keys holding it. */
  private readonly keysOf = new Map<string, Set<string>>();
  private generation = 0;

  constructor(
    private readonly inner: PostgresCollection<T>,
    private readonly feed: ChangeFeed,
    private readonly unique: ReadonlySet<string>,
    /** The store's: once closed, reads are refused like the uncached collections' (StoreClosedError). */
    private readonly gate: { closed: boolean },
  ) {
    feed.onChange((change) => {
      if (change === 'all') this.clear();
      else if (change.table === inner.name) this.drop(change.id);
    });
  }

  get(id: string): Promise<T | undefined> {
    return this.cached(`id:${id}`, () => this.inner.get(id));
  }

  findOneBy<K extends keyof T & string>(field: K, value: T[K]): Promise<T | undefined> {
    if (!this.unique.has(field) || typeof value !== 'string') return this.inner.findOneBy(field, value);
    return this.cached(`${field}:${value}`, () => this.inner.findOneBy(field, value));
  }

  findBy<K extends keyof T & string>(field: K, value: T[K]): Promise<T[]> {
    return this.inner.findBy(field, value);
  }

  count(): Promise<number> {
    return this.inner.count();
  }

  countBy<K extends keyof T & string>(field: K, value: T[K], where?: CountWhere<T>): Promise<number> {
    return this.inner.countBy(field, value, where);
  }

  insert(record: T, within?: TallyLimit<T>): Promise<T> {
    return this.written(record.id, (notice) => this.inner.insert(record, within, notice));
  }

  update(id: string, change: (current: T) => T): Promise<T | undefined> {
    return this.written(id, (notice) => this.inner.update(id, change, notice));
  }

  delete(id: string): Promise<boolean> {
    return this.written(id, (notice) => this.inner.delete(id, notice));
  }

  private async written<R>(id: string, write: (notice: ChangeNotice) => Promise<R>): Promise<R> {
    const notice = this.feed.notice(this.inner.name, id);
    let result: R;
    try {
      result = await write(notice.notice);
    } catch (error) {
      notice.cancel();
      this.drop(id);
      throw error;
    }
    this.drop(id);
    // No row written (an update or delete of an absent id): no notice was sent.
    if (result === undefined || result === false) notice.cancel();
    await notice.echoed;
    return result;
  }

  private async cached(key: string, read: () => Promise<T | undefined>): Promise<T | undefined> {
    if (this.gate.closed) throw new StoreClosedError(this.inner.name);
    const hit = this.entries.get(key);
    if (hit) return hit;
    const generation = this.generation;
    const record = await read();
    if (record && this.feed.live && generation === this.generation) {
      if (this.entries.size >= MAX_ENTRIES) this.clear();
      this.entries.set(key, record);
      let keys = this.keysOf.get(record.id);
      if (!keys) this.keysOf.set(record.id, (keys = new Set()));
      keys.add(key);
    }
    return record;
  }

  private drop(id: string): void {
    this.generation++;
    for (const key of this.keysOf.get(id) ?? []) this.entries.delete(key);
    this.keysOf.delete(id);
  }

  private clear(): void {
    this.generation++;
    this.entries.clear();
    this.keysOf.clear();
  }
}
