import type { Logger } from 'pino';
import type { Store } from '../store/store.ts';
import type { RunnerRecord } from '../store/records.ts';

export interface RunnerRegistryOptions {
  store: Store;
  logger: Logger;
  /** A runner whose heartbeat is older than this is lost (TWINBOX_RUNNER_STALE_SECONDS). */
  staleMs: number;
  /** How long a looked-up runner URL is reused before it is read again (the router asks per request). */
  cacheMs?: number;
}

/**
 * The runners sharing one database (docs/scaling.md): each writes its internal URL and renews a
 * heartbeat; any process looks a runner up to reach the sandboxes it holds, and tells a live runner
 * from a lost one by the age of its heartbeat. Clocks of the hosts are assumed in step to well under
 * the stale time (NTP); the stale time is seconds, not milliseconds, for that reason too.
 */
export class RunnerRegistry {
  private timer: NodeJS.Timeout | undefined;
  private readonly cache = new Map<string, { record: RunnerRecord | undefined; until: number }>();

  constructor(private readonly options: RunnerRegistryOptions) {}

  get staleMs(): number {
    return this.options.staleMs;
  }

  /** Is `record`'s heartbeat recent enough at `now` for the runner to count as alive? */
  isAlive(record: RunnerRecord, now = Date.now()): boolean {
    return record.lost_at === null && now - Date.parse(record.heartbeat_at) <= this.options.staleMs;
  }

  /**
   * Records this process as runner `id` at `url` and renews its heartbeat every third of the stale
   * time until stop(). Starting again under an id that was declared lost clears the mark: the lost
   * sandboxes were failed already, and new deploys may come here again.
   */
  async register(id: string, url: string): Promise<void> {
    const now = new Date().toISOString();
    const record: RunnerRecord = { id, url, started_at: now, heartbeat_at: now, lost_at: null };
    const updated = await this.options.store.runners.update(id, () => record);
    if (!updated)
      await this.options.store.runners.insert(record).catch(async () => {
        // Another start under the same id inserted it first (a misconfiguration, or a quick restart).
        await this.options.store.runners.update(id, () => record);
      });
    this.options.logger.info({ runner_id: id, url }, 'runner registered');
    const beat = () => {
      this.heartbeat(id).catch((error: unknown) =>
        this.options.logger.warn({ err: error, runner_id: id }, 'runner heartbeat not recorded'),
      );
    };
    this.timer = setInterval(beat, Math.max(250, Math.floor(this.options.staleMs / 3)));
    this.timer.unref();
  }

  /** Renews the heartbeat; a runner that was declared lost while it still ran is told in the log. */
  async heartbeat(id: string): Promise<void> {
    const updated = await this.options.store.runners.update(id, (current) => {
      if (current.lost_at)
        this.options.logger.error(
          { runner_id: id, lost_at: current.lost_at },
          'this runner was declared lost (its heartbeat went stale) and its sandboxes were failed',
        );
      return { ...current, heartbeat_at: new Date().toISOString(), lost_at: null };
    });
    if (!updated) this.options.logger.warn({ runner_id: id }, 'runner record gone; not registered');
  }

  /** The record of runner `id`, read at most once per `cacheMs` (the router asks on every request). */
  async get(id: string): Promise<RunnerRecord | undefined> {
    const now = Date.now();
    const cached = this.cache.get(id);
    if (cached && cached.until > now) return cached.record;
    const record = await this.options.store.runners.get(id);
    this.cache.set(id, { record, until: now + (this.options.cacheMs ?? 1000) });
    return record;
  }

  /** The internal URL of runner `id` while it is alive; undefined when unknown or lost. */
  async urlOf(id: string): Promise<string | undefined> {
    const record = await this.get(id);
    return record && this.isAlive(record) ? record.url : undefined;
  }

  /** Marks runner `id` lost, once: true for the caller that made the mark. */
  async markLost(id: string, heartbeatBefore: number): Promise<boolean> {
    let marked = false;
    await this.options.store.runners.update(id, (current) => {
      // Re-checked under the record's lock: a heartbeat that came in meanwhile wins.
      if (current.lost_at || Date.parse(current.heartbeat_at) > heartbeatBefore) return current;
      marked = true;
      return { ...current, lost_at: new Date().toISOString() };
    });
    this.cache.delete(id);
    return marked;
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }
}
