/**
 * The Store contract (server/store/store.ts), one suite for every implementation: contract-lowdb and
 * contract-postgres run it on their store. Cases walk COLLECTIONS, so a collection declared there is
 * covered here without a line of this file changing.
 */
import { spawn } from 'node:child_process';
import type { Test } from 'tap';
import { COLLECTION_KEYS, COLLECTIONS, type CollectionKey } from '../../server/store/collections.ts';
import {
  StoreClosedError,
  TallyFullError,
  UniqueViolationError,
  UnsafeIdError,
  type Collection,
  type Store,
} from '../../server/store/store.ts';
import { REPO_ROOT } from '../helpers/process.ts';

export interface StorePlace {
  /** Opens the store kept at this place; again after a close, to see what was written. */
  open(): Promise<Store>;
  /** What test/store/writer.ts needs in its environment to open the same store. */
  env: Record<string, string>;
}

export interface StoreHarness {
  /** A new, empty place for a store, removed when `t` ends. */
  fresh(t: Test): Promise<StorePlace>;
  /**
   * Several processes may open one place at once (PostgreSQL): the lock cases then also run across
   * two stores opened on it. The embedded store is one process's (its data-dir lock).
   */
  shared?: boolean;
}

type Loose = { id: string } & Record<string, unknown>;

function collectionOf(store: Store, key: CollectionKey): Collection<Loose> {
  return store[key] as unknown as Collection<Loose>;
}

/** Every tally collections.ts declares, with its collection's key and its field names as strings. */
function declaredTallies() {
  return COLLECTION_KEYS.flatMap((key) =>
    (COLLECTIONS[key].tallies ?? []).map((tally) => ({
      key,
      by: tally.by as string,
      where: tally.where as string,
      in: tally.in,
    })),
  );
}

function fieldsOf(key: CollectionKey): { unique: string[]; indexed: string[] } {
  const spec = COLLECTIONS[key];
  return { unique: [...spec.unique], indexed: [...spec.indexed] };
}

const ids = (records: Loose[]) => records.map((record) => record.id).sort();

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  return undefined;
}

export function storeContract(t: Test, harness: StoreHarness): void {
  async function opened(t: Test): Promise<{ store: Store; place: StorePlace }> {
    const place = await harness.fresh(t);
    const store = await place.open();
    t.teardown(() => store.close());
    return { store, place };
  }

  t.test('every collection opens empty, and a record round-trips through each exactly', async (t) => {
    const { store } = await opened(t);
    for (const key of COLLECTION_KEYS) {
      const collection = collectionOf(store, key);
      t.equal(await collection.count(), 0, `${key} starts empty`);
      const record: Loose = {
        id: `${key}-1`,
        created_at: '2026-11-24T10:00:00.000Z',
        nested: { list: [1, 'two', null, true, { deep: 2.5 }], empty: {}, none: null },
        text: 'ü 😀 "quoted" \\ back\nslash\ttab',
        big: Number.MAX_SAFE_INTEGER,
        negative: -1.25,
      };
      for (const field of [...fieldsOf(key).unique, ...fieldsOf(key).indexed])
        record[field] = `${key}-${field}`;
      t.same(await collection.insert(record), record);
      t.strictSame(await collection.get(record.id), record, `${key} gives back what was written`);
      t.equal(await collection.count(), 1);
    }
  });

  t.test('get, update and delete on every collection; absent ids', async (t) => {
    const { store } = await opened(t);
    for (const key of COLLECTION_KEYS) {
      const collection = collectionOf(store, key);
      await collection.insert({ id: 'a', n: 1 });
      await collection.insert({ id: 'b', n: 2 });
      const updated = await collection.update('a', (current) => ({
        ...current,
        n: (current.n as number) + 10,
      }));
      t.same(updated, { id: 'a', n: 11 }, `${key}: update answers the new record`);
      t.same(await collection.get('a'), { id: 'a', n: 11 });
      t.same(await collection.get('b'), { id: 'b', n: 2 }, `${key}: other records untouched`);
      let called = false;
      const missing = await collection.update('nope', (current) => {
        called = true;
        return current;
      });
      t.equal(missing, undefined, `${key}: updating an absent record answers undefined`);
      t.notOk(called, `${key}: change is not called for an absent record`);
      t.equal(await collection.get('nope'), undefined);
      t.equal(await collection.delete('a'), true);
      t.equal(await collection.delete('a'), false, `${key}: a second delete finds nothing`);
      t.equal(await collection.get('a'), undefined);
      t.equal(await collection.count(), 1);
    }
  });

  t.test('findBy and findOneBy on every indexed field', async (t) => {
    const { store } = await opened(t);
    for (const key of COLLECTION_KEYS) {
      const collection = collectionOf(store, key);
      for (const field of fieldsOf(key).indexed) {
        const p = `${field}-`;
        await collection.insert({ id: `${p}a`, [field]: 'v1' });
        await collection.insert({ id: `${p}b`, [field]: 'v1' });
        await collection.insert({ id: `${p}c`, [field]: 'v2' });
        await collection.insert({ id: `${p}d`, [field]: null });
        await collection.insert({ id: `${p}e`, [field]: 7 });
        const at = `${key}.${field}`;
        t.same(ids(await collection.findBy(field, 'v1')), [`${p}a`, `${p}b`], `${at}: all holders`);
        t.same(ids(await collection.findBy(field, 'v2')), [`${p}c`], at);
        t.equal((await collection.findOneBy(field, 'v2'))?.id, `${p}c`, at);
        t.match((await collection.findOneBy(field, 'v1'))?.id, new RegExp(`^${p}[ab]$`), at);
        t.same(await collection.findBy(field, 'v3'), [], `${at}: no holder`);
        t.equal(await collection.findOneBy(field, 'v3'), undefined, at);
        t.same(ids(await collection.findBy(field, null)), [`${p}d`], `${at}: null finds the null one`);
        t.same(ids(await collection.findBy(field, 7)), [`${p}e`], `${at}: a number finds the number`);
        t.same(await collection.findBy(field, '7'), [], `${at}: "7" is not 7`);
        t.same(
          (await collection.findBy(field, 'v2'))[0],
          { id: `${p}c`, [field]: 'v2' },
          `${at}: whole records`,
        );

        await collection.update(`${p}b`, (current) => ({ ...current, [field]: 'v2' }));
        t.same(ids(await collection.findBy(field, 'v1')), [`${p}a`], `${at}: an update moves the record`);
        t.same(ids(await collection.findBy(field, 'v2')), [`${p}b`, `${p}c`], at);
        await collection.delete(`${p}a`);
        t.same(await collection.findBy(field, 'v1'), [], `${at}: a delete removes it`);
        for (const id of ['b', 'c', 'd', 'e']) await collection.delete(`${p}${id}`);
      }
    }
  });

  t.test('findBy and findOneBy on every unique field', async (t) => {
    const { store } = await opened(t);
    for (const key of COLLECTION_KEYS) {
      const collection = collectionOf(store, key);
      for (const field of fieldsOf(key).unique) {
        const at = `${key}.${field}`;
        await collection.insert({ id: 'a', [field]: 'v1' });
        await collection.insert({ id: 'b', [field]: 'v2' });
        t.equal((await collection.findOneBy(field, 'v1'))?.id, 'a', at);
        t.same(ids(await collection.findBy(field, 'v2')), ['b'], at);
        t.equal(await collection.findOneBy(field, 'v3'), undefined, at);
        await collection.update('a', (current) => ({ ...current, [field]: 'v3' }));
        t.equal(
          await collection.findOneBy(field, 'v1'),
          undefined,
          `${at}: the old value no longer finds it`,
        );
        t.equal((await collection.findOneBy(field, 'v3'))?.id, 'a', at);
        await collection.delete('a');
        await collection.delete('b');
      }
    }
  });

  t.test('looking up a field that is neither indexed nor unique is refused', async (t) => {
    const { store } = await opened(t);
    for (const key of COLLECTION_KEYS) {
      const error = await rejection(collectionOf(store, key).findBy('not_an_index', 'x'));
      t.match(error, { message: /not indexed/ }, `${key}.not_an_index`);
      t.match(await rejection(collectionOf(store, key).findOneBy('not_an_index', 'x')), {
        message: /not indexed/,
      });
    }
  });

  t.test('unique fields: a taken value is refused by insert and update, naming the field', async (t) => {
    const { store } = await opened(t);
    for (const key of COLLECTION_KEYS) {
      const collection = collectionOf(store, key);
      const table = COLLECTIONS[key].table;
      await collection.insert({ id: 'same' });
      const sameId = await rejection(collection.insert({ id: 'same', other: 1 }));
      t.type(sameId, UniqueViolationError, `${key}: a second record under one id`);
      t.match(sameId, { collection: table, field: 'id' });
      t.same(await collection.get('same'), { id: 'same' }, `${key}: the first stays as it was`);
      await collection.delete('same');

      for (const field of fieldsOf(key).unique) {
        const at = `${key}.${field}`;
        await collection.insert({ id: 'a', [field]: 'taken' });
        const inserted = await rejection(collection.insert({ id: 'b', [field]: 'taken' }));
        t.type(inserted, UniqueViolationError, `${at}: insert`);
        t.match(inserted, { collection: table, field }, at);
        t.equal(await collection.get('b'), undefined, `${at}: nothing written`);

        await collection.insert({ id: 'b', [field]: 'free', n: 1 });
        const updated = await rejection(
          collection.update('b', (current) => ({ ...current, [field]: 'taken' })),
        );
        t.type(updated, UniqueViolationError, `${at}: update`);
        t.match(updated, { collection: table, field }, at);
        t.same(await collection.get('b'), { id: 'b', [field]: 'free', n: 1 }, `${at}: b unchanged`);
        t.same(
          await collection.update('b', (current) => ({ ...current, n: 2 })),
          { id: 'b', [field]: 'free', n: 2 },
          `${at}: an update keeping its own value passes`,
        );

        await collection.update('a', (current) => ({ ...current, [field]: 'moved' }));
        t.ok(await collection.insert({ id: 'c', [field]: 'taken' }), `${at}: a value given up is free again`);
        await collection.delete('c');
        t.ok(await collection.insert({ id: 'c', [field]: 'moved-2' }));

        // Null and absent values are not unique.
        await collection.insert({ id: 'n1', [field]: null });
        await collection.insert({ id: 'n2', [field]: null });
        await collection.insert({ id: 'n3' });
        await collection.insert({ id: 'n4' });
        t.equal(await collection.count(), 7, `${at}: null and absent values do not collide`);
        for (const id of ['a', 'b', 'c', 'n1', 'n2', 'n3', 'n4']) await collection.delete(id);
      }
    }
  });

  t.test('20 concurrent inserts of one unique value: exactly one wins', async (t) => {
    const { store } = await opened(t);
    for (const key of COLLECTION_KEYS) {
      const collection = collectionOf(store, key);
      for (const field of fieldsOf(key).unique) {
        const results = await Promise.allSettled(
          Array.from({ length: 20 }, (_, i) => collection.insert({ id: `r${i}`, [field]: 'contested' })),
        );
        const won = results.filter((result) => result.status === 'fulfilled');
        const lost = results.filter(
          (result): result is PromiseRejectedResult => result.status === 'rejected',
        );
        t.equal(won.length, 1, `${key}.${field}: one winner`);
        t.equal(lost.length, 19);
        t.ok(
          lost.every(
            (result) => result.reason instanceof UniqueViolationError && result.reason.field === field,
          ),
          `${key}.${field}: every loser is told why`,
        );
        t.equal((await collection.findBy(field, 'contested')).length, 1);
        t.equal(await collection.count(), 1);
        for (let i = 0; i < 20; i++) await collection.delete(`r${i}`);
      }
    }
  });

  t.test('20 concurrent inserts of one id: exactly one wins', async (t) => {
    const { store } = await opened(t);
    const results = await Promise.allSettled(
      Array.from({ length: 20 }, (_, i) => store.sandboxes.insert({ id: 'one', n: i } as never)),
    );
    t.equal(results.filter((result) => result.status === 'fulfilled').length, 1);
    t.ok(
      results.every(
        (result) =>
          result.status === 'fulfilled' ||
          (result.reason instanceof UniqueViolationError && result.reason.field === 'id'),
      ),
    );
    t.equal(await store.sandboxes.count(), 1);
  });

  t.test('50 concurrent updates of one record are serialized: none is lost', async (t) => {
    const { store, place } = await opened(t);
    const codes = collectionOf(store, 'verificationCodes');
    await codes.insert({ id: 'counter', attempts: 0, seen: [] });
    await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        codes.update('counter', (current) => ({
          ...current,
          attempts: (current.attempts as number) + 1,
          seen: [...(current.seen as number[]), i],
        })),
      ),
    );
    const after = await codes.get('counter');
    t.equal(after?.attempts, 50);
    t.same(
      [...(after?.seen as number[])].sort((a, b) => a - b),
      Array.from({ length: 50 }, (_, i) => i),
    );
    await store.close();
    const reopened = await place.open();
    t.teardown(() => reopened.close());
    t.equal((await collectionOf(reopened, 'verificationCodes').get('counter'))?.attempts, 50, 'durable');
  });

  t.test('a change that throws refuses its update and leaves the record as it was', async (t) => {
    const { store, place } = await opened(t);
    const sandboxes = collectionOf(store, 'sandboxes');
    await sandboxes.insert({ id: 's', status: 'ready', n: 0 });
    const refused = new Error('refused: not yours');
    t.equal(
      await rejection(
        sandboxes.update('s', (current) => {
          current.status = 'deleted';
          throw refused;
        }),
      ),
      refused,
      'the error is the update’s',
    );
    t.same(await sandboxes.get('s'), { id: 's', status: 'ready', n: 0 });
    t.same(ids(await sandboxes.findBy('status', 'deleted')), [], 'the index did not move');

    // Interleaved with successful updates, each refusal costs nothing of the others.
    const results = await Promise.allSettled(
      Array.from({ length: 20 }, (_, i) =>
        sandboxes.update('s', (current) => {
          if (i % 2) throw new Error(`no ${i}`);
          return { ...current, n: (current.n as number) + 1 };
        }),
      ),
    );
    t.equal(results.filter((result) => result.status === 'rejected').length, 10);
    t.equal((await sandboxes.get('s'))?.n, 10);

    t.match(await rejection(sandboxes.update('s', (current) => ({ ...current, id: 'other' }))), {
      message: /may not change a record's id/,
    });
    t.equal(await sandboxes.get('other'), undefined);
    await store.close();
    const reopened = await place.open();
    t.teardown(() => reopened.close());
    t.same(await reopened.sandboxes.get('s'), { id: 's', status: 'ready', n: 10 }, 'after a reopen too');
  });

  t.test(
    'countBy: by an indexed field, with and without a second condition, tallies kept exactly',
    async (t) => {
      const { store, place } = await opened(t);
      let tallies = 0;
      for (const key of COLLECTION_KEYS) {
        const collection = collectionOf(store, key);
        for (const field of fieldsOf(key).indexed) {
          const p = `${key}-${field}-`;
          await collection.insert({ id: `${p}a`, [field]: 'v1' });
          await collection.insert({ id: `${p}b`, [field]: 'v1' });
          await collection.insert({ id: `${p}c`, [field]: 'v2' });
          t.equal(await collection.countBy(field, 'v1'), 2, `${key}.${field}`);
          t.equal(await collection.countBy(field, 'v3'), 0, `${key}.${field}: none`);
          for (const id of ['a', 'b', 'c']) await collection.delete(`${p}${id}`);
          t.equal(await collection.countBy(field, 'v1'), 0, `${key}.${field}: after the deletes`);
        }
      }
      // Every declared tally, and the same count asked with another set (counted through the index).
      for (const tally of declaredTallies()) {
        tallies++;
        const { key, by, where } = tally;
        const collection = collectionOf(store, key);
        const [first, second] = tally.in;
        const counted = { field: where, in: tally.in } as never;
        const one = { field: where, in: [first!] } as never;
        await collection.insert({ id: 't1', [by]: 'o1', [where]: first });
        await collection.insert({ id: 't2', [by]: 'o1', [where]: second ?? first });
        await collection.insert({ id: 't3', [by]: 'o1', [where]: 'outside' });
        await collection.insert({ id: 't4', [by]: 'o2', [where]: first });
        const at = `${key}: ${by} with ${where}`;
        t.equal(await collection.countBy(by, 'o1', counted), 2, at);
        t.equal(
          await collection.countBy(by, 'o1', { field: where, in: [...tally.in].reverse() } as never),
          2,
        );
        t.equal(await collection.countBy(by, 'o1', one), second === undefined ? 2 : 1, `${at}: one value`);
        t.equal(await collection.countBy(by, 'o1'), 3, `${at}: without the condition`);
        t.equal(await collection.countBy(by, 'o2', counted), 1, at);
        t.equal(await collection.countBy(by, 'o3', counted), 0, `${at}: no record`);
        await collection.update('t1', (current) => ({ ...current, [where]: 'outside' }));
        t.equal(await collection.countBy(by, 'o1', counted), 1, `${at}: an update leaving the set`);
        await collection.update('t3', (current) => ({ ...current, [where]: first }));
        t.equal(await collection.countBy(by, 'o1', counted), 2, `${at}: an update entering it`);
        await collection.update('t4', (current) => ({ ...current, [by]: 'o1' }));
        t.equal(await collection.countBy(by, 'o1', counted), 3, `${at}: moved to another ${by}`);
        t.equal(await collection.countBy(by, 'o2', counted), 0, at);
        await collection.delete('t2');
        t.equal(await collection.countBy(by, 'o1', counted), 2, `${at}: a delete`);
      }
      t.ok(tallies > 0, 'collections.ts declares at least one tally');
      await store.close();
      const reopened = await place.open();
      t.teardown(() => reopened.close());
      for (const tally of declaredTallies()) {
        const counted = { field: tally.where, in: tally.in } as never;
        t.equal(await collectionOf(reopened, tally.key).countBy(tally.by, 'o1', counted), 2, 'reopened');
      }
    },
  );

  t.test('insert within a declared tally: never past its max, concurrent inserts included', async (t) => {
    const { store, place } = await opened(t);
    // Two processes when the place may be shared: the limit must hold across them (the quota of
    // creates made through two Twinboxes on one database).
    const stores = [store];
    if (harness.shared) {
      const other = await place.open();
      t.teardown(() => other.close());
      stores.push(other);
    }
    let tallies = 0;
    for (const tally of declaredTallies()) {
      tallies++;
      const { key, by, where } = tally;
      const collection = collectionOf(store, key);
      const within = { by, where, in: tally.in, max: 3 } as never;
      const at = `${key}: ${by} with ${where}`;
      const counting = (id: string, owner: string, i = 0): Loose => ({
        id,
        [by]: owner,
        [where]: tally.in[i % tally.in.length],
      });
      const settled = await Promise.allSettled(
        Array.from({ length: 20 }, (_, i) =>
          collectionOf(stores[i % stores.length]!, key).insert(counting(`w${i}`, 'o1', i), within),
        ),
      );
      const won = settled.filter((result) => result.status === 'fulfilled');
      const refused = settled.flatMap((result) => (result.status === 'rejected' ? [result.reason] : []));
      t.equal(won.length, 3, `${at}: 20 concurrent inserts, 3 written`);
      t.equal(refused.length, 17, `${at}: the rest refused`);
      t.ok(
        refused.every((error) => error instanceof TallyFullError && error.max === 3 && error.count === 3),
        `${at}: each with TallyFullError, 3 of 3`,
      );
      t.equal(await collection.countBy(by, 'o1', { field: where, in: tally.in } as never), 3, at);
      t.equal((await collection.findBy(by, 'o1')).length, 3, `${at}: nothing else written`);

      await collection.insert({ id: 'outside', [by]: 'o1', [where]: 'outside' }, within);
      t.ok(await collection.get('outside'), `${at}: a record outside the set is not limited`);
      await collection.insert(counting('other', 'o2'), within);
      t.ok(await collection.get('other'), `${at}: another ${by} has its own room`);

      // One leaving the set makes room for exactly one more.
      const leaving = (await collection.findBy(by, 'o1')).find((record) => record.id !== 'outside')!;
      await collection.update(leaving.id, (current) => ({ ...current, [where]: 'outside' }));
      const again = await Promise.allSettled(
        Array.from({ length: 4 }, (_, i) =>
          collectionOf(stores[i % stores.length]!, key).insert(counting(`x${i}`, 'o1'), within),
        ),
      );
      t.equal(again.filter((result) => result.status === 'fulfilled').length, 1, `${at}: room for one`);
      t.equal(await collection.countBy(by, 'o1', { field: where, in: tally.in } as never), 3, at);

      const undeclared = { by, where: by, in: ['o1'], max: 1 } as never;
      t.ok(
        (await rejection(collection.insert(counting('nope', 'o1'), undeclared))) instanceof Error,
        `${at}: a tally collections.ts does not declare is refused`,
      );
      t.equal(await collection.get('nope'), undefined, `${at}: and nothing written`);
    }
    t.ok(tallies > 0, 'collections.ts declares at least one tally');
  });

  t.test('a reopened store sees exactly what was written, indexes included', async (t) => {
    const { store, place } = await opened(t);
    for (const key of COLLECTION_KEYS) {
      const collection = collectionOf(store, key);
      const fields = [...fieldsOf(key).unique, ...fieldsOf(key).indexed];
      const record = (id: string, value: string): Loose =>
        Object.fromEntries([['id', id], ...fields.map((field) => [field, `${value}-${field}`])]) as Loose;
      await collection.insert(record('kept', 'k'));
      await collection.insert(record('changed', 'c'));
      await collection.insert(record('gone', 'g'));
      await collection.update('changed', (current) => ({
        ...current,
        ...record('changed', 'c2'),
        extra: true,
      }));
      await collection.delete('gone');
    }
    await store.close();
    const reopened = await place.open();
    t.teardown(() => reopened.close());
    for (const key of COLLECTION_KEYS) {
      const collection = collectionOf(reopened, key);
      t.equal(await collection.count(), 2, key);
      t.same(ids([(await collection.get('kept'))!, (await collection.get('changed'))!]), ['changed', 'kept']);
      t.equal((await collection.get('changed'))?.extra, true);
      t.equal(await collection.get('gone'), undefined);
      for (const field of [...fieldsOf(key).unique, ...fieldsOf(key).indexed]) {
        t.same(ids(await collection.findBy(field, `k-${field}`)), ['kept'], `${key}.${field}`);
        t.same(ids(await collection.findBy(field, `c2-${field}`)), ['changed'], `${key}.${field}`);
        t.same(await collection.findBy(field, `c-${field}`), [], `${key}.${field}: old value`);
        t.same(await collection.findBy(field, `g-${field}`), [], `${key}.${field}: deleted`);
      }
      for (const field of fieldsOf(key).unique) {
        t.type(
          await rejection(collection.insert({ id: 'dup', [field]: `k-${field}` })),
          UniqueViolationError,
          `${key}.${field} still unique after the reopen`,
        );
      }
    }
  });

  t.test(
    'a write is durable once it resolves: kill -9 of the writer loses nothing acknowledged',
    async (t) => {
      const place = await harness.fresh(t);
      const child = spawn(process.execPath, ['--import', 'tsx', 'test/store/writer.ts'], {
        cwd: REPO_ROOT,
        env: { PATH: process.env.PATH, ...place.env },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      t.teardown(() => {
        child.kill('SIGKILL');
        return exited;
      });
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const acknowledged = await new Promise<string[]>((resolve, reject) => {
        let out = '';
        child.stdout.on('data', (chunk: Buffer) => {
          out += chunk.toString();
          const lines = out.split('\n').slice(0, -1);
          // Killed mid-stream: writes are still being made, some maybe half done.
          if (lines.length >= 40) {
            child.kill('SIGKILL');
            resolve(lines);
          }
        });
        void exited.then(() => reject(new Error(`the writer ended on its own:\n${stderr}`)));
      });
      await exited;
      const store = await place.open();
      t.teardown(() => store.close());
      for (const line of acknowledged) {
        const [id, attempts] = line.split(' ');
        const record = await store.verificationCodes.get(id!);
        t.ok(record, `${id} was acknowledged and is there`);
        t.ok((record?.attempts ?? -1) >= Number(attempts), `${id}: its acknowledged update is there`);
      }
    },
  );

  t.test('ids outside the safe alphabet are refused, and never found', async (t) => {
    const { store } = await opened(t);
    const unsafe = ['', '../escape', 'a/b', 'a b', 'a.json', 'é', 'a\u0000b', 'x'.repeat(129)];
    for (const key of COLLECTION_KEYS) {
      const collection = collectionOf(store, key);
      for (const id of unsafe) {
        const error = await rejection(collection.insert({ id }));
        t.type(error, UnsafeIdError, `${key}: insert of ${JSON.stringify(id)}`);
        t.equal(await collection.get(id), undefined);
        let called = false;
        t.equal(
          await collection.update(id, (current) => {
            called = true;
            return current;
          }),
          undefined,
        );
        t.notOk(called);
        t.equal(await collection.delete(id), false);
      }
      t.equal(await collection.count(), 0, `${key}: nothing was written`);
      const longest = 'A-z_9'.repeat(25).padEnd(128, 'x');
      t.ok(await collection.insert({ id: longest }), `${key}: 128 safe characters are an id`);
    }
  });

  t.test('any string survives, NUL and lone surrogates included, in values, keys and lookups', async (t) => {
    const { store, place } = await opened(t);
    const odd = ['nul\u0000inside', 'lone \ud800 high', 'lone \udc00 low', '\uE000', '\uE0000', '😀 pair'];
    const env = Object.fromEntries(odd.map((text, i) => [`K${i}${text}`, text]));
    const record = { id: 'odd', owner_id: 'nul\u0000owner', status: '\uE000u0000', env, list: odd };
    await store.sandboxes.insert(record as never);
    t.strictSame(await store.sandboxes.get('odd'), record);
    t.same(ids((await store.sandboxes.findBy('owner_id', 'nul\u0000owner')) as never), ['odd']);
    t.same(await store.sandboxes.findBy('owner_id', 'nul'), []);
    t.same(ids((await store.sandboxes.findBy('status', '\uE000u0000' as never)) as never), ['odd']);
    // Values that differ only in such characters are different values, unique ones too.
    await store.accounts.insert({ id: 'a1', email: '\u0000' } as never);
    await store.accounts.insert({ id: 'a2', email: '\uE0000' } as never);
    await store.accounts.insert({ id: 'a3', email: '\ud800' } as never);
    t.type(
      await rejection(store.accounts.insert({ id: 'a4', email: '\u0000' } as never)),
      UniqueViolationError,
    );
    t.equal((await store.accounts.findOneBy('email', '\uE0000'))?.id, 'a2');
    await store.close();
    const reopened = await place.open();
    t.teardown(() => reopened.close());
    t.strictSame(await reopened.sandboxes.get('odd'), record, 'after a reopen');
  });

  t.test('a closed store refuses writes and locks with StoreClosedError, on every collection', async (t) => {
    const { store, place } = await opened(t);
    for (const key of COLLECTION_KEYS) await collectionOf(store, key).insert({ id: 'before' });
    await store.close();
    await store.close();
    let refused = 0;
    for (const key of COLLECTION_KEYS) {
      const collection = collectionOf(store, key);
      const calls: Array<[string, () => Promise<unknown>]> = [
        ['insert', () => collection.insert({ id: 'after' })],
        ['update', () => collection.update('before', (current) => ({ ...current, late: true }))],
        ['delete', () => collection.delete('before')],
      ];
      for (const [name, call] of calls) {
        const error = await rejection(call());
        t.type(error, StoreClosedError, `${key}.${name} after close`);
        t.match(error, { kind: 'store_closed' });
        refused++;
      }
    }
    t.type(await rejection(store.lock('late', async () => 1)), StoreClosedError, 'lock after close');
    t.equal(refused, COLLECTION_KEYS.length * 3, `every collection refused its writes (${refused} calls)`);
    const reopened = await place.open();
    t.teardown(() => reopened.close());
    for (const key of COLLECTION_KEYS) {
      const collection = collectionOf(reopened, key);
      t.same(
        await collection.get('before'),
        { id: 'before' },
        `${key}: the refused update left it as it was`,
      );
      t.equal(await collection.get('after'), undefined, `${key}: the refused insert wrote nothing`);
    }
  });

  t.test('lock: one task of a name at a time, in order; other names at once; errors free it', async (t) => {
    const { store, place } = await opened(t);
    // Two processes when the place may be shared: the lock must hold across them.
    let other = store;
    if (harness.shared) {
      other = await place.open();
      t.teardown(() => other.close());
    }
    const codes = collectionOf(store, 'verificationCodes');
    await codes.insert({ id: 'counter', n: 0, order: [] });
    let inside = 0;
    let most = 0;
    // A read-then-write with a pause in between: without the lock the writes would overwrite each other.
    const bump = (s: Store, i: number) =>
      s.lock('counter', async () => {
        inside++;
        most = Math.max(most, inside);
        const current = (await collectionOf(s, 'verificationCodes').get('counter'))!;
        await new Promise((resolve) => setTimeout(resolve, 5));
        await collectionOf(s, 'verificationCodes').update('counter', () => ({
          ...current,
          n: (current.n as number) + 1,
          order: [...(current.order as number[]), i],
        }));
        inside--;
        return i;
      });
    const results = await Promise.all(Array.from({ length: 12 }, (_, i) => bump(i % 2 ? other : store, i)));
    t.same(
      results,
      Array.from({ length: 12 }, (_, i) => i),
      'each task answers its own result',
    );
    const after = await codes.get('counter');
    t.equal(after?.n, 12, 'no read-then-write was lost');
    t.equal(most, 1, 'never two tasks of one name at once');
    const order = after?.order as number[];
    t.same(
      order.filter((i) => i % 2 === 0),
      [0, 2, 4, 6, 8, 10],
      'in the order asked, within one store',
    );

    // Another name is not held up: `a` waits for `b` to have started, under a bound that only stops a hang.
    let startedB!: () => void;
    const bStarted = new Promise<void>((resolve) => (startedB = resolve));
    const bound = (what: string) =>
      new Promise<never>((_, reject) =>
        setTimeout(() => reject(new Error(`${what} never came`)), 60_000).unref(),
      );
    const a = store.lock('a', () => Promise.race([bStarted.then(() => 'a'), bound('b')]));
    const b = other.lock('b', async () => {
      startedB();
      return 'b';
    });
    t.same(await Promise.all([a, b]), ['a', 'b'], 'two names held at once');

    const failure = new Error('the task failed');
    t.equal(await rejection(store.lock('counter', () => Promise.reject(failure))), failure, 'its error');
    t.equal(await other.lock('counter', async () => 'next'), 'next', 'a failed task frees the lock');
    t.type(await rejection(store.lock('', async () => 1)), RangeError, 'an empty name is refused');
  });
}
