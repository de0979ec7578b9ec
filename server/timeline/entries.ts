/** What the timeline of a sandbox is made of (docs/timeline.md). */

export const TIMELINE_KINDS = [
  'app_request',
  'twin_call',
  'webhook',
  'state_change',
  'deploy_step',
  'status',
  'crash',
  'extended',
  'blocked_egress',
] as const;

export type TimelineKind = (typeof TIMELINE_KINDS)[number];

/**
 * How `caused_by` was established: `header` when the twin call carried the app request's id (or its
 * trace), `inferred` when exactly one app request was in flight, `direct` for a state change made by
 * the call it names.
 */
export type LinkKind = 'header' | 'inferred' | 'direct';

export interface TimelineEntry {
  id: string;
  at: string;
  kind: TimelineKind;
  /** `app`, `twin:<name>` or `twinbox`. */
  source: string;
  summary: string;
  /** HTTP status, for requests, calls and webhooks. */
  status?: number;
  duration_ms?: number;
  method?: string;
  /** Without the query string. */
  path?: string;
  /** The router's id of the app request this entry belongs to. */
  request_id?: string;
  caused_by?: string;
  link?: LinkKind;
  detail?: Record<string, unknown>;
}

/**
 * The timeline is merged from independent feeds (Twinbox's events, the app's requests, each twin's
 * request log and webhook deliveries). Each feed is append-only in its own order, so a cursor is one
 * position per feed; an entry knows its feed and its position there.
 */
export interface Positioned {
  entry: TimelineEntry;
  /** Milliseconds, possibly fractional, for ordering. */
  atMs: number;
  position: number;
}

/** One feed's new entries, in feed order (ascending `position`). */
export interface Feed {
  key: string;
  entries: Positioned[];
}

export const SOURCE_TWINBOX = 'twinbox';
export const SOURCE_APP = 'app';
export const twinSource = (twin: string) => `twin:${twin}`;

export function iso(ms: number): string {
  return new Date(Math.floor(ms)).toISOString();
}

/** The path of a URL or request target without its query (which may carry secrets). */
export function pathOnly(url: string): string {
  const cut = url.search(/[?#]/);
  return cut === -1 ? url : url.slice(0, cut);
}

/** "1.2 s" or "340 ms". */
export function formatDuration(ms: number): string {
  return ms >= 1000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms)} ms`;
}
