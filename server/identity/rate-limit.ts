import { createHash } from 'node:crypto';
import type { Collection } from '../store/store.ts';
import { UniqueViolationError } from '../store/store.ts';
import type { RateLimitRecord } from '../store/records.ts';
import { expiresAt } from '../store/expiry.ts';
import type { Clock } from './clock.ts';

/**
 * A sliding-window counter: at most `limit` hits per key within `windowMs`. The hits are kept in the
 * Store (`rateLimits`), one record per key updated under the Store's per-record serialisation (a row
 * lock on PostgreSQL), so every process sharing the Store counts against the same limit. The record
 * lapses a window after its last hit and is swept (store/expiry.ts).
 */
export class RateLimiter {
  constructor(
    /** Tells this limiter's keys apart from another's in the shared collection. */
    private readonly name: string,
    private readonly limit: number,
    private readonly windowMs: number,
    private readonly clock: Clock,
    private readonly records: Collection<RateLimitRecord>,
  ) {}

  /** Counts a hit for `key`; resolves undefined when allowed, else the seconds until one is allowed. */
  async take(key: string): Promise<number | undefined> {
    const now = this.clock.now().getTime();
    // Keys are e-mail addresses and IP addresses: hashed, so they are neither record ids nor kept.
    const id = createHash('sha256').update(`${this.name}\0${key}`).digest('base64url');
    let wait: number | undefined;
    const count = (current: RateLimitRecord): RateLimitRecord => {
      const recent = current.hits.filter((at) => now - at < this.windowMs);
      if (recent.length >= this.limit) {
        wait = Math.max(1, Math.ceil((recent[0]! + this.windowMs - now) / 1000));
      } else {
        wait = undefined;
        recent.push(now);
      }
      return { ...current, hits: recent, ...expiresAt((recent.at(-1) ?? now) + this.windowMs) };
    };
    for (;;) {
      if (await this.records.update(id, count)) return wait;
      try {
        // A first hit, or the record was swept: start it.
        await this.records.insert(count({ id, hits: [], ...expiresAt(now + this.windowMs) }));
        return wait;
      } catch (error) {
        // Another process started it at the same moment: count on its record.
        if (!(error instanceof UniqueViolationError)) throw error;
      }
    }
  }
}
