import type { Clock } from './clock.ts';

/**
 * A sliding-window counter kept in memory: at most `limit` hits per key within `windowMs`. In memory
 * because the limits guard one process's endpoints; several Twinbox processes would each count alone.
 */
export class RateLimiter {
  private readonly hits = new Map<string, number[]>();

  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
    private readonly clock: Clock,
  ) {}

  /** Counts a hit for `key`; returns undefined when allowed, else the seconds until one is allowed. */
  take(key: string): number | undefined {
    const now = this.clock.now().getTime();
    const recent = (this.hits.get(key) ?? []).filter((at) => now - at < this.windowMs);
    if (recent.length >= this.limit) {
      this.hits.set(key, recent);
      return Math.max(1, Math.ceil((recent[0]! + this.windowMs - now) / 1000));
    }
    recent.push(now);
    this.hits.set(key, recent);
    if (this.hits.size > 10_000) this.prune(now);
    return undefined;
  }

  private prune(now: number): void {
    for (const [key, times] of this.hits) {
      if (times.every((at) => now - at >= this.windowMs)) this.hits.delete(key);
    }
  }
}
