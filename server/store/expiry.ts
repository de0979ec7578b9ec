import type { Collection } from './store.ts';
import { UniqueViolationError } from './store.ts';
import type { ExpiringRecord, SweepCursorRecord } from './records.ts';

const HOUR_MS = 3_600_000;

/** The UTC hour of a time, `YYYY-MM-DDTHH`: the `expires_hour` of a record that lapses then. */
export function hourOf(time: number | Date): string {
  return new Date(time).toISOString().slice(0, 13);
}

/** The expiry fields of a record that lapses at `at` (epoch milliseconds or a Date). */
export function expiresAt(at: number | Date): Pick<ExpiringRecord, 'expires_at' | 'expires_hour'> {
  return { expires_at: new Date(at).toISOString(), expires_hour: hourOf(at) };
}

/** Whether an expiring record has lapsed at `now` (epoch milliseconds). */
export function lapsed(record: Pick<ExpiringRecord, 'expires_at'>, now: number): boolean {
  return now >= Date.parse(record.expires_at);
}

/** One collection the sweeper keeps clean. */
export interface Swept {
  /** Its table name: the id of its sweep cursor. */
  name: string;
  /** The longest a record of it lives once written: where the very first sweep starts looking. */
  maxLifetimeMs: number;
  inHour(hour: string): Promise<ExpiringRecord[]>;
  delete(id: string): Promise<boolean>;
}

export function swept<T extends ExpiringRecord>(
  name: string,
  collection: Collection<T>,
  maxLifetimeMs: number,
): Swept {
  return {
    name,
    maxLifetimeMs,
    inHour: (hour) => collection.findBy('expires_hour', hour),
    delete: (id) => collection.delete(id),
  };
}

/**
 * Deletes lapsed records of expiring collections (OAuth flows, rate-limit counters, revoked sessions),
 * which nothing else would ever delete. The Store looks records up by equality only, so they are found
 * by their indexed `expires_hour`, one hour at a time, from where the last sweep of any process
 * stopped (kept in `sweepCursors`, so hours that passed while no process ran are still swept) to the
 * current hour. Sweeps of several processes may overlap: deleting twice is harmless.
 */
export class ExpirySweeper {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<number> | undefined;

  constructor(
    private readonly cursors: Collection<SweepCursorRecord>,
    private readonly targets: Swept[],
    private readonly now: () => number,
    private readonly onError: (error: unknown) => void,
  ) {}

  /** Sweeps now and every `intervalMs`; the timer does not keep the process alive. */
  start(intervalMs: number): void {
    if (this.timer) return;
    const tick = () => void this.sweep().catch(this.onError);
    tick();
    this.timer = setInterval(tick, intervalMs);
    this.timer.unref();
  }

  /** Stops the timer and waits for a sweep in progress. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    await this.running?.catch(() => {});
  }

  /** One sweep of every collection (joined when one is running); answers how many records it deleted. */
  sweep(): Promise<number> {
    this.running ??= this.sweepAll().finally(() => (this.running = undefined));
    return this.running;
  }

  private async sweepAll(): Promise<number> {
    let deleted = 0;
    for (const target of this.targets) deleted += await this.sweepOne(target);
    return deleted;
  }

  private async sweepOne(target: Swept): Promise<number> {
    const now = this.now();
    const currentHour = hourOf(now);
    const cursor = (await this.cursors.get(target.name))?.swept_before;
    let hour = cursor ?? hourOf(now - target.maxLifetimeMs - HOUR_MS);
    let deleted = 0;
    // Up to the current hour included: its lapsed records go too, but it stays to sweep again.
    while (hour <= currentHour) {
      for (const record of await target.inHour(hour)) {
        if (lapsed(record, now) && (await target.delete(record.id))) deleted++;
      }
      hour = hourOf(Date.parse(`${hour}:00:00Z`) + HOUR_MS);
    }
    if (cursor !== currentHour) await this.advance(target.name, currentHour);
    return deleted;
  }

  /** Moves the cursor forward (never back: another process may have swept further). */
  private async advance(name: string, sweptBefore: string): Promise<void> {
    const forward = (current: SweepCursorRecord) =>
      current.swept_before >= sweptBefore ? current : { ...current, swept_before: sweptBefore };
    if (await this.cursors.update(name, forward)) return;
    try {
      await this.cursors.insert({ id: name, swept_before: sweptBefore });
    } catch (error) {
      if (!(error instanceof UniqueViolationError)) throw error;
      await this.cursors.update(name, forward);
    }
  }
}
