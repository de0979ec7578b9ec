import { join } from 'node:path';
import { KeyedLock } from '../keyed-lock.ts';
import { lockNameError, StoreClosedError, type Store } from './store.ts';
import { COLLECTIONS, openCollections } from './collections.ts';
import { StoreJournal, type JournalOptions } from './journal.ts';
import { LowdbCollection } from './lowdb-collection.ts';

/**
 * Opens the embedded store under `<dataDir>/store/`, one folder per collection (collections.ts), with
 * one write-ahead journal for all of them (journal.ts): the journals a stop left are replayed onto the
 * folders before the collections load.
 */
export async function openLowdbStore(dataDir: string, journalOptions?: JournalOptions): Promise<Store> {
  const root = join(dataDir, 'store');
  const tables = Object.values(COLLECTIONS).map((spec) => spec.table);
  const journal = await StoreJournal.open(root, tables, journalOptions);
  const opened: LowdbCollection<{ id: string }>[] = [];
  const collections = await openCollections(async (_key, spec) => {
    const collection = await LowdbCollection.open(spec.table, join(root, spec.table), {
      ...spec,
      sink: journal,
    });
    opened.push(collection);
    return collection;
  }).catch(async (error: unknown) => {
    await journal.close();
    throw error;
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
    // Writes are durable when they resolve; closing refuses new calls, waits for those in flight, and
    // checkpoints the journal so the next start has nothing to replay.
    close: () =>
      (closing ??= Promise.all(opened.map((collection) => collection.close())).then(() => journal.close())),
  };
}
