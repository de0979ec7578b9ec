import type {
  AccountRecord,
  ApiKeyRecord,
  GitHubDeliveryRecord,
  GitHubInstallationRecord,
  GitHubPullRecord,
  IdentityRecord,
  JobRecord,
  SandboxEventRecord,
  SandboxRecord,
  RunnerRecord,
  ScenarioRecord,
  VerificationCodeRecord,
  OAuthStateRecord,
  RateLimitRecord,
  RevokedSessionRecord,
  ServerSecretRecord,
  SweepCursorRecord,
  AppRequestBatchRecord,
} from './records.ts';

/**
 * The Store: every durable fact Twinbox keeps. Two implementations: the embedded lowdb-store.ts (the
 * default) and postgres/store.ts (TWINBOX_DATABASE_URL). Which collections exist, and which of their
 * fields are unique or indexed, is declared once in collections.ts. test/store/contract.ts checks both
 * against this contract:
 *
 * - A write's promise resolves only once the write is durable (fsynced, or committed).
 * - Unique fields are enforced where the data is written, atomically: a second record with the same
 *   value is refused with UniqueViolationError, whatever the interleaving of concurrent calls. Null and
 *   absent values are not unique-checked.
 * - `update` is a read-modify-write on the latest state of the record, serialized per record; when
 *   `change` throws, nothing is written and the error is the update's.
 * - Record ids are 1 to 128 of `A-Z a-z 0-9 _ -`: `insert` refuses others with UnsafeIdError, and no
 *   record can be found, updated or deleted under one.
 * - `findBy` / `findOneBy` work on indexed and unique fields only; the order of `findBy` is unspecified.
 */
export interface Collection<T extends { id: string }> {
  get(id: string): Promise<T | undefined>;
  /** All records whose indexed `field` equals `value`. */
  findBy<K extends keyof T & string>(field: K, value: T[K]): Promise<T[]>;
  findOneBy<K extends keyof T & string>(field: K, value: T[K]): Promise<T | undefined>;
  count(): Promise<number>;
  /**
   * How many records have `field` (indexed) equal to `value`, and, with `where`, also one of the values
   * `where.in` in `where.field`. A count collections.ts declares as a tally is kept as records change,
   * so reading it scans nothing; any other is counted through `field`'s index.
   */
  countBy<K extends keyof T & string>(field: K, value: T[K], where?: CountWhere<T>): Promise<number>;
  /**
   * With `within`, a tally collections.ts declares: refused with TallyFullError, nothing written, when
   * `record` would count in it and its `by` value already holds `within.max` records, concurrent
   * inserts from every process sharing the store included (the check and the write are one step).
   */
  insert(record: T, within?: TallyLimit<T>): Promise<T>;
  /** Applies `change` to the current record; `change` may throw to refuse. Undefined when absent. */
  update(id: string, change: (current: T) => T): Promise<T | undefined>;
  delete(id: string): Promise<boolean>;
}

/** A second condition of countBy: the record's `field` is one of `in` (strings). */
export interface CountWhere<T> {
  field: keyof T & string;
  in: readonly string[];
}

/** A ceiling on a declared tally (collections.ts `tallies`) for `Collection.insert`. */
export interface TallyLimit<T> {
  by: keyof T & string;
  where: keyof T & string;
  in: readonly string[];
  max: number;
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
  /** The embedded job queue's jobs (server/jobs/embedded.ts); indexed by `state`. */
  jobs: Collection<JobRecord>;
  /** Runner processes on a shared database (server/runners/): their internal URL and heartbeat. */
  runners: Collection<RunnerRecord>;
  /** GitHub sign-in flows in progress, shared by every process (identity/github/state.ts). */
  oauthStates: Collection<OAuthStateRecord>;
  /** Rate-limit counters of the sign-in endpoints, shared by every process (identity/rate-limit.ts). */
  rateLimits: Collection<RateLimitRecord>;
  /** Sessions signed out before they expire (auth/sessions.ts); looked up by `jti` on each session request. */
  revokedSessions: Collection<RevokedSessionRecord>;
  /** Keys shared by every process of this Store (auth/shared-secrets.ts). */
  serverSecrets: Collection<ServerSecretRecord>;
  /** How far the expiry sweep (store/expiry.ts) has gone, per collection. */
  sweepCursors: Collection<SweepCursorRecord>;
  /** The app requests the routers forwarded, in batches (timeline/app-requests.ts); by `sandbox_id`. */
  appRequests: Collection<AppRequestBatchRecord>;
  /**
   * Runs `task` holding the lock `name` (1 to 200 characters), exclusively across every process that
   * shares this store, and in the order asked within one process; resolves or rejects as `task` does.
   * The embedded store has one process (its data-dir lock), so an in-process lock is all it takes;
   * PostgreSQL holds an advisory lock for the task's length (postgres/locks.ts). Not reentrant: a
   * task that asks for the lock it holds waits forever.
   */
  lock<T>(name: string, task: () => Promise<T>): Promise<T>;
  /**
   * Refuses every later write (`insert`, `update`, `delete`) and `lock` with StoreClosedError, and
   * resolves once the writes in flight are done; a second call resolves as the first. Reads after it:
   * PostgreSQL refuses them too (StoreClosedError), the embedded store still answers from memory.
   */
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

/** An insert `within` a tally that was full: `count` records already count, `max` may. */
export class TallyFullError extends Error {
  constructor(
    readonly collection: string,
    readonly count: number,
    readonly max: number,
  ) {
    super(`${collection}: ${count} records already count in the tally, at most ${max} may`);
    this.name = 'TallyFullError';
  }
}

/** Record ids a store accepts: the embedded store makes them file names. */
export const SAFE_RECORD_ID = /^[A-Za-z0-9_-]{1,128}$/;

export class UnsafeIdError extends Error {
  constructor(
    readonly collection: string,
    id: string,
  ) {
    super(`${collection}: record id ${JSON.stringify(id)} is not 1-128 of A-Z a-z 0-9 _ -`);
    this.name = 'UnsafeIdError';
  }
}

/**
 * A call on a store after its `close()`: refused by both stores alike, so a write that comes too late
 * (a timer or event handler outliving shutdown) fails loudly rather than landing on a store another
 * process may already own, or being lost with the pool.
 */
export class StoreClosedError extends Error {
  readonly kind = 'store_closed';
  constructor(readonly collection: string) {
    super(`${collection}: the store is closed`);
    this.name = 'StoreClosedError';
  }
}

/** Why a store refuses `name` as a lock name (Store.lock), or undefined when it is one. */
export function lockNameError(name: string): RangeError | undefined {
  if (typeof name === 'string' && name.length >= 1 && name.length <= 200 && !name.includes('\u0000'))
    return undefined;
  return new RangeError('a store lock name is 1 to 200 characters, NUL excepted');
}

/** The declared tally of `by` whose `where` set is exactly `values` (in any order), if there is one. */
export function declaredTally<S extends { by: string; where: string; in: readonly string[] }>(
  tallies: readonly S[],
  by: string,
  where: string,
  values: readonly string[],
): S | undefined {
  const asked = new Set(values);
  return tallies.find(
    (tally) =>
      tally.by === by &&
      tally.where === where &&
      new Set(tally.in).size === asked.size &&
      tally.in.every((value) => asked.has(value)),
  );
}
