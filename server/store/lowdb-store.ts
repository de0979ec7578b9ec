import { join } from 'node:path';
import type {
  AccountRecord,
  ApiKeyRecord,
  GitHubDeliveryRecord,
  GitHubInstallationRecord,
  GitHubPullRecord,
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
  const [
    accounts,
    apiKeys,
    identities,
    scenarios,
    sandboxes,
    verificationCodes,
    githubInstallations,
    githubPulls,
    githubDeliveries,
  ] = await Promise.all([
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
    LowdbCollection.open<GitHubInstallationRecord>(
      'github_installations',
      join(root, 'github_installations'),
    ),
    LowdbCollection.open<GitHubPullRecord>('github_pulls', join(root, 'github_pulls'), {
      indexed: ['sandbox_id'],
    }),
    LowdbCollection.open<GitHubDeliveryRecord>('github_deliveries', join(root, 'github_deliveries')),
  ]);
  const all = [
    accounts,
    apiKeys,
    identities,
    scenarios,
    sandboxes,
    verificationCodes,
    githubInstallations,
    githubPulls,
    githubDeliveries,
  ];
  return {
    accounts,
    apiKeys,
    identities,
    scenarios,
    sandboxes,
    verificationCodes,
    githubInstallations,
    githubPulls,
    githubDeliveries,
    // Writes are durable when they resolve; closing only waits for those still in flight.
    close: async () => {
      await Promise.all(all.map((c) => c.flush()));
    },
  };
}
