/**
 * The writer the durability case of contract.ts kills with SIGKILL: four workers insert and then update
 * records without pause, printing `<id> <attempts>` on stdout once each write has resolved. Opens
 * PostgreSQL when TWINBOX_DATABASE_URL is set, the embedded store under TWINBOX_DATA_DIR otherwise.
 */
import { openLowdbStore } from '../../server/store/lowdb-store.ts';
import { openPostgresStore } from '../../server/store/postgres/store.ts';
import type { VerificationCodeRecord } from '../../server/store/records.ts';

const url = process.env.TWINBOX_DATABASE_URL;
const dataDir = process.env.TWINBOX_DATA_DIR;
if (!url && !dataDir) throw new Error('writer.ts needs TWINBOX_DATABASE_URL or TWINBOX_DATA_DIR');
const store = url ? await openPostgresStore({ url }) : await openLowdbStore(dataDir!);

async function worker(n: number): Promise<void> {
  for (let i = 0; i < 5000; i++) {
    const id = `w${n}_${i}`;
    const now = new Date().toISOString();
    const record: VerificationCodeRecord = {
      id,
      email: `${id}@example.com`,
      purpose: 'durability',
      code_hash: 'x'.repeat(64),
      attempts: 0,
      created_at: now,
      expires_at: now,
      consumed_at: null,
    };
    await store.verificationCodes.insert(record);
    process.stdout.write(`${id} 0\n`);
    await store.verificationCodes.update(id, (current) => ({ ...current, attempts: 1 }));
    process.stdout.write(`${id} 1\n`);
  }
}

await Promise.all([0, 1, 2, 3].map(worker));
await store.close();
