import type { IncomingHttpHeaders } from 'node:http';

/** A bounded in-memory log of the vendor-API requests an instance served (admin API: GET /requests). */
import type { RequestLogEntry } from '../contract.ts';

export type { RequestLogEntry };

/**
 * The router's request id header (server/router/headers.ts REQUEST_ID_HEADER). Spelt out here because
 * twins run in the pod process, which has no business loading the router.
 */
export const REQUEST_ID_HEADER = 'x-twinbox-request-id';

/** Ids and trace contexts are short tokens; anything else is not one, and is not kept. */
const CORRELATION_VALUE = /^[A-Za-z0-9._:-]{1,128}$/;

/** The correlation headers of a request, as the log keeps them (absent or malformed: not kept). */
export function correlationOf(
  headers: IncomingHttpHeaders,
): Pick<RequestLogEntry, 'request_id' | 'traceparent'> {
  const out: Pick<RequestLogEntry, 'request_id' | 'traceparent'> = {};
  const requestId = headers[REQUEST_ID_HEADER];
  if (typeof requestId === 'string' && CORRELATION_VALUE.test(requestId)) out.request_id = requestId;
  const traceparent = headers.traceparent;
  if (typeof traceparent === 'string' && CORRELATION_VALUE.test(traceparent)) out.traceparent = traceparent;
  return out;
}

/** What GET /requests asks for: entries after and/or before an id, at most `limit` of them. */
export interface RequestLogQuery {
  after?: number;
  before?: number;
  limit?: number;
}

export interface RequestLogPage {
  requests: RequestLogEntry[];
  /** More entries match beyond this page (later ones with `after`, earlier ones otherwise). */
  has_more: boolean;
  /** The id of the newest entry in the whole log (0 when empty): a client sees a restart when it drops. */
  last_id: number;
}

/** A logged body computed when first read (see RequestLog.add). */
export class LazyBody {
  constructor(readonly compute: () => unknown) {}
}

export class RequestLog {
  private entries: RequestLogEntry[] = [];
  private nextId = 1;

  constructor(readonly capacity = 500) {}

  /**
   * `request_body` and `response_body` may be given as a LazyBody: redacting a body (parse, walk, mask)
   * cost more than the rest of the twin layer on a GitHub read, and most entries are never read. The entry
   * then computes the body the first time anything reads it (the admin API, the timeline, a summary) and
   * keeps it; readers see a plain property either way.
   */
  add(
    entry: Omit<RequestLogEntry, 'id' | 'request_body' | 'response_body'> & {
      request_body: unknown;
      response_body: unknown;
    },
  ): void {
    const stored: RequestLogEntry = { id: this.nextId++, ...entry };
    for (const key of ['request_body', 'response_body'] as const) {
      const value = stored[key];
      if (value instanceof LazyBody) {
        Object.defineProperty(stored, key, {
          enumerable: true,
          configurable: true,
          get: () => {
            const computed = value.compute();
            Object.defineProperty(stored, key, { value: computed, enumerable: true, writable: true });
            return computed;
          },
        });
      }
    }
    this.entries.push(stored);
    if (this.entries.length > this.capacity) this.entries.splice(0, this.entries.length - this.capacity);
  }

  list(limit = this.capacity): RequestLogEntry[] {
    return this.entries.slice(-limit);
  }

  /**
   * Entries oldest first. With `after`, the first `limit` entries whose id is above it (a client
   * following the log asks with the last id it has); otherwise the last `limit` below `before` (or the
   * newest), so paging back goes `before=<first id of the page>`.
   */
  page({ after, before, limit = this.capacity }: RequestLogQuery): RequestLogPage {
    // Ids grow with the position, so the bounds are found by binary search, not by a scan.
    const from = after === undefined ? 0 : this.indexAbove(after);
    const to = before === undefined ? this.entries.length : this.indexAbove(before - 1);
    const span = Math.max(0, to - from);
    const take = Math.min(span, limit);
    const start = after === undefined ? to - take : from;
    return {
      requests: this.entries.slice(start, start + take),
      has_more: span > take,
      last_id: this.entries.at(-1)?.id ?? 0,
    };
  }

  clear(): void {
    this.entries = [];
  }

  /** Index of the first entry whose id is above `id`. */
  private indexAbove(id: number): number {
    let low = 0;
    let high = this.entries.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (this.entries[mid]!.id > id) high = mid;
      else low = mid + 1;
    }
    return low;
  }
}

/** The method and path (no query) of a logged request that succeeded and may have changed state. */
export function successfulMutation(entry: RequestLogEntry): { method: string; pathname: string } | undefined {
  if (entry.status < 200 || entry.status > 299 || entry.fault) return undefined;
  const method = entry.method.toUpperCase();
  if (method === 'GET' || method === 'HEAD' || method === 'OPTIONS') return undefined;
  return { method, pathname: entry.path.split('?')[0] ?? '/' };
}

/** A top-level field of a logged body (a JSON object, or form text as the log keeps it), as a string. */
export function bodyField(body: unknown, name: string): string | undefined {
  if (typeof body === 'string') {
    // The log keeps form bodies decoded (redact.ts), so pairs are split by hand, on the first `=`.
    for (const pair of body.split('&')) {
      const eq = pair.indexOf('=');
      if (eq > 0 && pair.slice(0, eq) === name) return pair.slice(eq + 1);
    }
    return undefined;
  }
  if (!body || typeof body !== 'object' || Array.isArray(body)) return undefined;
  const value = (body as Record<string, unknown>)[name];
  return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean'
    ? String(value)
    : undefined;
}

/** A logged body that is a JSON object, else undefined. */
export function bodyObject(body: unknown): Record<string, unknown> | undefined {
  return body && typeof body === 'object' && !Array.isArray(body)
    ? (body as Record<string, unknown>)
    : undefined;
}
