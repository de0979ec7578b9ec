import { badRequest } from '../errors.ts';
import type { SandboxService } from '../sandboxes/service.ts';
import type { SandboxKind } from '../store/records.ts';
import type { AccountRecord } from '../store/records.ts';
import type { TwinDescriptor } from '../twins/contract.ts';
import type { AppRequestRecorder } from './app-requests.ts';
import { BadCursorError, decodeCursor, encodeCursor, mergeFeeds, START, type Positions } from './cursor.ts';
import type { Feed, TimelineEntry } from './entries.ts';
import type { SandboxEvents } from './events.ts';
import { appFeed, callFeed, callLogAfter, deliveryFeed, eventFeed, type TwinTraffic } from './feeds.ts';
import type { TwinLogs } from './twin-logs.ts';

export const DEFAULT_LIMIT = 100;
export const MAX_LIMIT = 500;

export interface TimelinePage {
  entries: TimelineEntry[];
  /** Always given: ask again with it for what comes next, now or later. */
  next_cursor: string;
  /** Parts of the timeline that could not be read this time (a twin not running, say). */
  notes: string[];
}

export interface TimelineDeps {
  sandboxes: SandboxService;
  events: SandboxEvents;
  requests: AppRequestRecorder;
  twinLogs: TwinLogs;
  descriptors: ReadonlyMap<string, TwinDescriptor>;
}

/**
 * One timeline per sandbox, merged in time order from Twinbox's own events, the app's requests (as
 * the router saw them) and each twin's calls, state changes and webhook deliveries, with cause and
 * effect linked where it can be known (docs/timeline.md).
 */
export class TimelineService {
  constructor(private readonly deps: TimelineDeps) {}

  /**
   * A page of the caller's sandbox's (or, with `kind` twins, twin set's) timeline after `cursor`; another
   * account's is a 404.
   */
  async page(
    account: AccountRecord,
    sandboxId: string,
    { limit = DEFAULT_LIMIT, cursor }: { limit?: number; cursor?: string },
    kind: SandboxKind = 'app',
  ): Promise<TimelinePage> {
    const { sandboxes, events, requests, twinLogs, descriptors } = this.deps;
    const sandbox = await sandboxes.get(account, sandboxId, kind);
    let positions: Positions;
    try {
      positions = cursor ? decodeCursor(sandbox.id, cursor) : {};
    } catch (error) {
      if (error instanceof BadCursorError) throw badRequest(error.message, 'invalid_cursor');
      throw error;
    }
    const at = (key: string) => positions[key] ?? START;
    // Every app request kept, whichever process's router forwarded it (the store's, and this process's
    // not yet written): one read serves the feed and the links.
    const kept = await requests.ended(sandbox.id);
    // Kept in memory only, the app's feed counts from 1 again after a restart (or once an idle sandbox's
    // requests were forgotten); stored, its seqs continue, and a position past them is only not there yet.
    if (!requests.durable && (kept.at(-1)?.seq ?? 0) < at('app')) positions.app = START;

    const notes: string[] = [];
    const names = [
      ...new Set([
        ...Object.keys(sandbox.twins),
        ...sandbox.twin_names,
        ...(await twinLogs.archivedNames(sandbox.id)),
      ]),
    ].sort();
    const read = async (twin: string): Promise<TwinTraffic | string> => {
      const callsKey = `calls:${twin}`;
      let log = await twinLogs.read(sandbox, twin, callLogAfter(at(callsKey)), limit);
      // The twin's log starts again at id 1 when its pod is restarted: read it from its start.
      if (!('unavailable' in log) && log.lastId < Math.floor(at(callsKey) / 2)) {
        positions[callsKey] = START;
        log = await twinLogs.read(sandbox, twin, 0, limit);
      }
      if ('unavailable' in log) return log.unavailable;
      const hooksKey = `hooks:${twin}`;
      const newestDelivery = Math.max(0, ...log.deliveries.map((d) => d.id));
      if (newestDelivery < at(hooksKey)) positions[hooksKey] = START;
      if (log.archived) notes.push(`The ${twin} twin has stopped; its log is the copy kept when it did.`);
      return { twin, descriptor: descriptors.get(twin), calls: log.calls, deliveries: log.deliveries };
    };
    const traffic: TwinTraffic[] = [];
    for (const result of await Promise.all(names.map(read))) {
      if (typeof result === 'string') notes.push(result);
      else traffic.push(result);
    }

    const forwarded = [...kept, ...requests.inFlight(sandbox.id)];
    const feeds: Feed[] = [
      eventFeed(sandbox, await events.after(sandbox.id, at('events')), at('events')),
      appFeed(kept, at('app'), traffic, forwarded),
    ];
    const now = Date.now();
    for (const twin of traffic) {
      feeds.push(callFeed(twin, at(`calls:${twin.twin}`), forwarded));
      feeds.push(deliveryFeed(twin, at(`hooks:${twin.twin}`), now));
    }
    const merged = mergeFeeds(feeds, positions, limit);
    return {
      entries: merged.entries.map((positioned) => positioned.entry),
      next_cursor: encodeCursor(sandbox.id, merged.positions),
      notes,
    };
  }
}
