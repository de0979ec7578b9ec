import { join } from 'node:path';
import type {
  AccountRecord,
  ApiKeyRecord,
  GitHubDeliveryRecord,
  GitHubInstallationRecord,
  GitHubPullRecord,
  IdentityRecord,
  SandboxEventRecord,
  SandboxRecord,
  ScenarioRecord,
  VerificationCodeRecord,
} from './records.ts';
import type { Store } from './store.ts';
import { LowdbCollection, type CollectionOptions } from './lowdb-collection.ts';

/** Opens the embedded store under `<dataDir>/store/`, one folder per collection. */
export async function openLowdbStore(dataDir: string): Promise<Store> {
  const root = join(dataDir, 'store');
  const open = <T extends { id: string }>(name: string, options?: CollectionOptions<T>) =>
    LowdbCollection.open<T>(name, join(root, name), options);
  const collections = {
    accounts: await open<AccountRecord>('accounts', { unique: ['email'] }),
    apiKeys: await open<ApiKeyRecord>('api_keys', { unique: ['hash'], indexed: ['account_id'] }),
    identities: await open<IdentityRecord>('identities', {
      unique: ['provider_key'],
      indexed: ['account_id'],
    }),
    scenarios: await open<ScenarioRecord>('scenarios', { indexed: ['owner_id'] }),
    sandboxes: await open<SandboxRecord>('sandboxes', { indexed: ['owner_id', 'status'] }),
    verificationCodes: await open<VerificationCodeRecord>('verification_codes'),
    githubInstallations: await open<GitHubInstallationRecord>('github_installations'),
    githubPulls: await open<GitHubPullRecord>('github_pulls', { indexed: ['sandbox_id'] }),
    githubDeliveries: await open<GitHubDeliveryRecord>('github_deliveries'),
    sandboxEvents: await open<SandboxEventRecord>('sandbox_events', { indexed: ['sandbox_id'] }),
  };
  return {
    ...collections,
    // Writes are durable when they resolve; closing only waits for those still in flight.
    close: async () => {
      await Promise.all(Object.values(collections).map((collection) => collection.flush()));
    },
  };
}
