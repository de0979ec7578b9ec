import type { Feed } from './entries.ts';

/**
 * Where a reader of a sandbox's timeline has got to: the last position taken from each feed. Feeds are
 * keyed `events`, `app`, `calls:<twin>`, `hooks:<twin>`. A feed not named has given nothing yet.
 */
export type Positions = Record<string, number>;

/** The position before anything: Twinbox's own "created" event has position 0. */
export const START = -1;

export class BadCursorError extends Error {}

const VERSION = 1;
/** Enough of the sandbox id to refuse another sandbox's cursor by mistake; not a secret. */
const tag = (sandboxId: string) => sandboxId.slice(0, 8);
const FEED_KEY = /^(events|app|calls:[a-z0-9_-]{1,64}|hooks:[a-z0-9_-]{1,64})$/;

export function encodeCursor(sandboxId: string, positions: Positions): string {
  return Buffer.from(JSON.stringify({ v: VERSION, s: tag(sandboxId), p: positions })).toString('base64url');
}

export function decodeCursor(sandboxId: string, cursor: string): Positions {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    throw new BadCursorError('"cursor" is not a cursor returned by this API.');
  }
  const { v, s, p } = (parsed ?? {}) as { v?: unknown; s?: unknown; p?: unknown };
  if (v !== VERSION || typeof s !== 'string' || !p || typeof p !== 'object' || Array.isArray(p))
    throw new BadCursorError('"cursor" is not a cursor returned by this API.');
  if (s !== tag(sandboxId)) throw new BadCursorError('"cursor" belongs to the timeline of another sandbox.');
  const positions: Positions = {};
  for (const [key, value] of Object.entries(p)) {
    if (!FEED_KEY.test(key) || !Number.isSafeInteger(value) || (value as number) < START)
      throw new BadCursorError('"cursor" is not a cursor returned by this API.');
    positions[key] = value as number;
  }
  return positions;
}

/**
 * Merges feeds into one page in time order and moves the positions past what it took. Each feed is
 * taken in its own order (a k-way merge on time), so what is left of a feed always comes after the
 * page: an entry that arrives late in one feed (an app request is known once it ends) is never skipped,
 * it only comes in a later page.
 */
export function mergeFeeds(
  feeds: Feed[],
  positions: Positions,
  limit: number,
): { entries: Feed['entries']; positions: Positions } {
  const next: Positions = { ...positions };
  const heads = feeds.map(() => 0);
  const taken: Feed['entries'] = [];
  while (taken.length < limit) {
    let best = -1;
    for (let i = 0; i < feeds.length; i++) {
      const head = feeds[i]!.entries[heads[i]!];
      if (!head) continue;
      // Ties go to the feed listed first: Twinbox's events, then the app, then the twins.
      if (best === -1 || head.atMs < feeds[best]!.entries[heads[best]!]!.atMs) best = i;
    }
    if (best === -1) break;
    const entry = feeds[best]!.entries[heads[best]!++]!;
    taken.push(entry);
    next[feeds[best]!.key] = entry.position;
  }
  return { entries: taken, positions: next };
}
