import { join } from 'node:path';
import type { Store } from './store.ts';
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
  return {
    ...collections,
    // Writes are durable when they resolve; closing only waits for those still in flight.
    close: async () => {
      await Promise.all(opened.map((collection) => collection.flush()));
    },
  };
}
