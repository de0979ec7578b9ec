/**
 * Case-insensitive lookups on a field of an engine collection (GitHub's repository names and logins are
 * case-insensitive), without scanning the collection on every request.
 *
 * The engine indexes a field by its exact value only, and a collection's index fields are fixed when the
 * engine first asks for it, so we keep our own map beside it: lower-cased value to record ids. It is built
 * from the collection on first use and kept up to date by wrapping the collection's mutators, which are
 * every way the engine's collection changes its records: `insert`, `update` (a rename), `delete`, `clear`
 * (the engine's reset) and `restore` (a snapshot loaded). A collection the engine replaces (a restore of a
 * snapshot without it) is a new object, indexed afresh on its first lookup.
 */
import type { EngineCollection, EngineRecord } from './emulate.ts';

/** The engine collection's mutators beyond those our adapter types (emulate 0.12.2's Collection). */
interface MutableCollection extends EngineCollection {
  clear(): void;
  restore(snapshot: unknown): void;
}

type FoldedIndex = Map<string, Set<number>>;

const indexes = new WeakMap<object, Map<string, FoldedIndex>>();

const fold = (value: unknown): string | undefined =>
  value === undefined || value === null ? undefined : String(value).toLowerCase();

function attach(collection: MutableCollection, field: string): FoldedIndex {
  const index: FoldedIndex = new Map();
  const add = (record: EngineRecord) => {
    const key = fold(record[field]);
    if (key === undefined) return;
    let ids = index.get(key);
    if (!ids) index.set(key, (ids = new Set()));
    ids.add(record.id);
  };
  const remove = (record: EngineRecord) => {
    const key = fold(record[field]);
    if (key === undefined) return;
    const ids = index.get(key);
    ids?.delete(record.id);
    if (ids?.size === 0) index.delete(key);
  };
  const rebuild = () => {
    index.clear();
    for (const record of collection.all()) add(record);
  };

  const insert = collection.insert.bind(collection);
  const update = collection.update.bind(collection);
  const remove_ = collection.delete.bind(collection);
  const clear = collection.clear.bind(collection);
  const restore = collection.restore.bind(collection);
  collection.insert = (data) => {
    // An insert with the id of a record already there replaces that record.
    const replaced = typeof data.id === 'number' && data.id > 0 ? collection.get(data.id) : undefined;
    const record = insert(data);
    if (replaced) remove(replaced);
    add(record);
    return record;
  };
  collection.update = (id, data) => {
    const before = collection.get(id);
    const record = update(id, data);
    if (record) {
      if (before) remove(before);
      add(record);
    }
    return record;
  };
  collection.delete = (id) => {
    const before = collection.get(id);
    const deleted = remove_(id);
    if (deleted && before) remove(before);
    return deleted;
  };
  collection.clear = () => {
    clear();
    index.clear();
  };
  collection.restore = (snapshot) => {
    restore(snapshot);
    rebuild();
  };
  rebuild();
  return index;
}

/**
 * The record whose `field` equals `value` ignoring case, found through an index kept on the collection
 * (should several records differ only in case, which GitHub does not allow, one of them).
 */
export function findFolded<T extends EngineRecord>(
  collection: EngineCollection<T>,
  field: string,
  value: string,
): T | undefined {
  let byField = indexes.get(collection);
  if (!byField) indexes.set(collection, (byField = new Map()));
  let index = byField.get(field);
  if (!index) byField.set(field, (index = attach(collection as unknown as MutableCollection, field)));
  for (const id of index.get(value.toLowerCase()) ?? []) {
    const record = collection.get(id);
    if (record) return record;
  }
  return undefined;
}
