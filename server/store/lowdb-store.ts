import { join } from 'node:path';
import type {
  AccountRecord,
  ApiKeyRecord,
  IdentityRecord,
  SandboxRecord,
  ScenarioRecord,
  VerificationCodeRecord,
} from './records.ts';
import type { Store } from './store.ts';
import { LowdbCollection } from './lowdb-collection.ts';

/** Opens the embedded store under `<dataDir>/store/`, one folder per collection. */
export async function openLowdbStore(dataDir: string): Promise<Store> {
  const root = join(dataDir, 'store');
  const [accounts, apiKeys, identities, scenarios, sandboxes, verificationCodes] = await Promise.all([
    LowdbCollection.open<AccountRecord>('accounts', join(root, 'accounts'), { unique: ['email'] }),
    LowdbCollection.open<ApiKeyRecord>('api_keys', join(root, 'api_keys'), {
      unique: ['hash'],
      indexed: ['account_id'],
    }),
    LowdbCollection.open<IdentityRecord>('identities', join(root, 'identities'), {
      unique: ['provider_key'],
      indexed: ['account_id'],
    }),
    LowdbCollection.open<ScenarioRecord>('scenarios', join(root, 'scenarios'), { indexed: ['owner_id'] }),
    LowdbCollection.open<SandboxRecord>('sandboxes', join(root, 'sandboxes'), {
      indexed: ['owner_id', 'status'],
    }),
    LowdbCollection.open<VerificationCodeRecord>('verification_codes', join(root, 'verification_codes')),
  ]);
  return {
    accounts,
    apiKeys,
    identities,
    scenarios,
    sandboxes,
    verificationCodes,
    // Writes are durable when they resolve; closing only waits for those still in flight.
    close: async () => {
      await Promise.all(
        [accounts, apiKeys, identities, scenarios, sandboxes, verificationCodes].map((c) => c.flush()),
      );
    },
  };
}
