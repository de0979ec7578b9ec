import type { Collection, Store } from './store.ts';

/** The Store's collections, by the name the rest of Twinbox uses (`store.apiKeys`). */
export type CollectionKey = Exclude<keyof Store, 'close' | 'lock'>;
/** The record type a collection holds. */
export type RecordOf<K extends CollectionKey> = Store[K] extends Collection<infer T> ? T : never;
/** Every collection of a Store, without `close` and `lock`. */
export type Collections = { [K in CollectionKey]: Store[K] };

export interface CollectionSpec<T> {
  /**
   * The lowdb folder and the PostgreSQL table; also the `collection` of a UniqueViolationError. Never
   * renamed: it names data already written.
   */
  table: string;
  /** Fields whose values identify at most one record (null and absent values excepted). */
  unique: (keyof T & string)[];
  /** Fields looked up with findBy / findOneBy besides the unique ones. */
  indexed: (keyof T & string)[];
  /**
   * Counts by an indexed field both stores keep up to date as records change (countBy with the same
   * `by`, `where` and set of `in` reads one number instead of scanning; `insert` may be made `within`
   * one). PostgreSQL keeps each in a row of `twinbox_tallies` through a trigger, which a migration
   * creates: the store refuses to start, naming the SQL, while a declared tally lacks it.
   */
  tallies?: { by: keyof T & string; where: keyof T & string; in: readonly string[] }[];
}

/**
 * Every collection both stores keep, in one place. A new collection, or a new unique or indexed field,
 * is declared here; lowdb picks it up as it is, and PostgreSQL needs a migration creating its table
 * and indexes (server/store/postgres/migrations/): the PostgreSQL store refuses to start, naming the
 * SQL to add, while the database lacks one.
 */
export const COLLECTIONS: { readonly [K in CollectionKey]: CollectionSpec<RecordOf<K>> } = {
  accounts: { table: 'accounts', unique: ['email'], indexed: [] },
  apiKeys: { table: 'api_keys', unique: ['hash'], indexed: ['account_id'] },
  identities: { table: 'identities', unique: ['provider_key'], indexed: ['account_id'] },
  scenarios: { table: 'scenarios', unique: [], indexed: ['owner_id'] },
  sandboxes: {
    table: 'sandboxes',
    unique: [],
    indexed: ['owner_id', 'status', 'runner_id'],
    // The quota check of every create (sandboxes/service.ts): an owner's queued, building or ready ones.
    tallies: [{ by: 'owner_id', where: 'status', in: ['queued', 'building', 'ready'] }],
  },
  verificationCodes: { table: 'verification_codes', unique: [], indexed: [] },
  githubInstallations: { table: 'github_installations', unique: [], indexed: [] },
  githubPulls: { table: 'github_pulls', unique: [], indexed: ['sandbox_id'] },
  githubDeliveries: { table: 'github_deliveries', unique: [], indexed: [] },
  sandboxEvents: { table: 'sandbox_events', unique: [], indexed: ['sandbox_id'] },
  oauthStates: { table: 'oauth_states', unique: [], indexed: ['expires_hour'] },
  rateLimits: { table: 'rate_limits', unique: [], indexed: ['expires_hour'] },
  revokedSessions: { table: 'revoked_sessions', unique: [], indexed: ['expires_hour'] },
  serverSecrets: { table: 'server_secrets', unique: [], indexed: [] },
  sweepCursors: { table: 'sweep_cursors', unique: [], indexed: [] },
  jobs: { table: 'jobs', unique: [], indexed: ['state'] },
  runners: { table: 'runners', unique: [], indexed: [] },
  appRequests: { table: 'app_requests', unique: [], indexed: ['sandbox_id', 'expires_hour'] },
};

export const COLLECTION_KEYS = Object.keys(COLLECTIONS) as CollectionKey[];

/** Opens every collection with `open`, one after the other (a failure leaves the rest unopened). */
export async function openCollections(
  open: <K extends CollectionKey>(
    key: K,
    spec: CollectionSpec<RecordOf<K>>,
  ) => Promise<Collection<RecordOf<K>>>,
): Promise<Collections> {
  const openOne = <K extends CollectionKey>(key: K) => open(key, COLLECTIONS[key]);
  const opened: Partial<Record<CollectionKey, unknown>> = {};
  for (const key of COLLECTION_KEYS) opened[key] = await openOne(key);
  return opened as Collections;
}
