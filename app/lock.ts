import { KeyedLock } from '../server/keyed-lock.ts';
import type { Store } from '../server/store/store.ts';

/**
 * The lock of a pull request: all work on one pull request (its events, commands and sandbox changes)
 * runs under it, one piece at a time, in every process that shares the store (Store.lock: a
 * PostgreSQL advisory lock, or the embedded store's own). That covers the read-then-write of its record
 * (`rememberPull`) and the edits of its comment and Deployment, which are rendered from the record and
 * sandbox as they are once the lock is held (comment-upkeep.ts): whoever holds it last writes the
 * newest state, so an older state can never overwrite a newer one.
 *
 * Waiters queue in memory first, so a process holds at most one store lock per pull request, and
 * `idle()` can tell when this process has no pull-request work left.
 */
export class PullLocks {
  private readonly local = new KeyedLock();

  constructor(private readonly store: Store) {}

  run<T>(key: string, task: () => Promise<T>): Promise<T> {
    return this.local.run(key, () => this.store.lock(`github-pull:${key}`, task));
  }

  /** Resolves once this process has no pull-request work running or waiting. */
  idle(): Promise<void> {
    return this.local.idle();
  }
}
