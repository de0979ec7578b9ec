import { join } from 'node:path';
import { KeyedLock } from '../keyed-lock.ts';
import { lockNameError, StoreClosedError, type Store } from './store.ts';
import { openCollections } from './collections.ts';
import { LowdbCollection } from './lowdb-collection.ts';

/** Opens the embedded store under `<dataDir>/store/`, one folder per collection (collections.ts). */
export async function openLowdbStore(dataDir: string): Promise<Store> {
  const root = join(dataDir, 'store');
  const opened: LowdbCollection<{ id: string }>[] = [];
  const collections = await openCollections(async (_key, spec) => {
    const collection = await LowdbCollection.open(spec.table, join(root, spec.table), spec);
    opened.push(collection);
    return collection;
  });
  // One process per data directory (data-dir-lock.ts): a lock within it is a lock across processes.
  const locks = new KeyedLock();
  let closing: Promise<void> | undefined;
  return {
    ...collections,
    lock: <T>(name: string, task: () => Promise<T>): Promise<T> => {
      const refused = lockNameError(name);
      if (refused) return Promise.reject(refused);
      if (closing) return Promise.reject(new StoreClosedError('lock'));
      return locks.run(name, task);
    },
    // Writes are durable when they resolve; closing refuses new calls and waits for those in flight.
    close: () =>
      (closing ??= Promise.all(opened.map((collection) => collection.close())).then(() => undefined)),
  };
}
