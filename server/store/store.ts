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

/**
 * The Store: every durable fact Twinbox keeps. The embedded implementation is lowdb-store.ts; a
 * PostgreSQL one can take its place behind this interface.
 *
 * Contract:
 * - A write's promise resolves only once the write is durable (on disk, fsynced).
 * - Unique fields are enforced where the data is written, atomically: a second record with the same
 *   value is refused with UniqueViolationError, whatever the interleaving of concurrent calls.
 * - `update` is a read-modify-write on the latest state of the record, serialized per record.
 */
export interface Collection<T extends { id: string }> {
  get(id: string): Promise<T | undefined>;
  /** All records whose indexed `field` equals `value`. */
  findBy<K extends keyof T & string>(field: K, value: T[K]): Promise<T[]>;
  findOneBy<K extends keyof T & string>(field: K, value: T[K]): Promise<T | undefined>;
  count(): Promise<number>;
  insert(record: T): Promise<T>;
  /** Applies `change` to the current record; `change` may throw to refuse. Undefined when absent. */
  update(id: string, change: (current: T) => T): Promise<T | undefined>;
  delete(id: string): Promise<boolean>;
}

export interface Store {
  accounts: Collection<AccountRecord>;
  apiKeys: Collection<ApiKeyRecord>;
  identities: Collection<IdentityRecord>;
  scenarios: Collection<ScenarioRecord>;
  sandboxes: Collection<SandboxRecord>;
  verificationCodes: Collection<VerificationCodeRecord>;
  githubInstallations: Collection<GitHubInstallationRecord>;
  githubPulls: Collection<GitHubPullRecord>;
  githubDeliveries: Collection<GitHubDeliveryRecord>;
  /** Twinbox's own events of each sandbox (the timeline); indexed by `sandbox_id`. */
  sandboxEvents: Collection<SandboxEventRecord>;
  close(): Promise<void>;
}

export class UniqueViolationError extends Error {
  constructor(
    readonly collection: string,
    readonly field: string,
  ) {
    super(`${collection}.${field} must be unique`);
    this.name = 'UniqueViolationError';
  }
}
