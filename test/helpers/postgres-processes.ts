import type { Test } from 'tap';
import { openPostgresStore } from '../../server/store/postgres/store.ts';
import type { Store } from '../../server/store/store.ts';
import { freshSchema } from './postgres.ts';
import { devApiKey, spawnTwinbox, type TwinboxProcess } from './process.ts';
import { tempDir } from './twinbox.ts';

/**
 * Two Twinbox processes on one fresh PostgreSQL schema, the development API key of the first, and a
 * third process's view of the same database (this test's own store, cached as the servers' are; a
 * runner writes sandboxes this way): for the tests that a write in one process is seen by the others at
 * once (server/store/postgres/changes.ts).
 */
export async function twinboxesOnOneDatabase(
  t: Test,
  /** More environment for both processes (a quota, say). */
  env: Record<string, string> = {},
): Promise<{ a: TwinboxProcess; b: TwinboxProcess; key: string; store: Store }> {
  const { url } = await freshSchema();
  const dirA = await tempDir(t);
  const a = await spawnTwinbox(t, {
    TWINBOX_DATA_DIR: dirA,
    TWINBOX_DATABASE_URL: url,
    LOG_LEVEL: 'warn',
    ...env,
  });
  const b = await spawnTwinbox(t, {
    TWINBOX_DATA_DIR: await tempDir(t),
    TWINBOX_DATABASE_URL: url,
    LOG_LEVEL: 'warn',
    ...env,
  });
  const key = await devApiKey(a, dirA);
  const store = await openPostgresStore({ url });
  t.teardown(() => store.close());
  return { a, b, key, store };
}
