import { html, type Html } from '../../html.ts';
import type { PageOptions } from '../../layout.ts';
import type { SignedIn } from '../../session.ts';
import type { SandboxRecord } from '../../../store/records.ts';
import type { TimelineEntry } from '../../../timeline/index.ts';
import { ACTIVE_STATUSES } from '../../../sandboxes/states.ts';
import { readableTime } from './parts.ts';
import { sandboxHead, sandboxPath, sandboxTabs } from './sandbox.ts';

const KIND_LABELS: Record<string, string> = {
  app_request: 'app request',
  twin_call: 'twin call',
  webhook: 'webhook',
  state_change: 'state change',
  deploy_step: 'deploy step',
  status: 'status',
  crash: 'crash',
  extended: 'extended',
  blocked_egress: 'blocked call',
};

/** Kinds whose duration is not in their summary. */
const TIMED = new Set(['app_request', 'twin_call', 'webhook']);

const LINK_LABELS: Record<string, string> = {
  header: 'tied by the request id the app passed on',
  inferred: 'tied by time: the only app request in flight',
};

/** "12:06:47.123": entries are seconds apart, so the page shows milliseconds (UTC, as elsewhere). */
function clock(iso: string): string {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toISOString().slice(11, 23);
}

function sourceLabel(source: string): string {
  return source.startsWith('twin:') ? source.slice(5) : source;
}

/** One entry's line, without its children: the same markup on the page and in the live updates. */
function entryLine(entry: TimelineEntry): Html {
  const extras = [
    // Deploy steps say their duration in their summary already.
    entry.duration_ms !== undefined && TIMED.has(entry.kind)
      ? `${Math.round(entry.duration_ms)} ms`
      : undefined,
    entry.link && LINK_LABELS[entry.link] ? LINK_LABELS[entry.link] : undefined,
  ].filter(Boolean);
  return html`<div class="tl-line">
    <time class="tl-time" datetime="${entry.at}" title="${readableTime(entry.at)}">${clock(entry.at)}</time>
    <span class="tl-source">${sourceLabel(entry.source)}</span>
    <span class="tl-kind">${KIND_LABELS[entry.kind] ?? entry.kind.replace(/_/g, ' ')}</span>
    <span class="tl-summary">${entry.summary}</span>
    ${extras.length ? html`<span class="muted">${extras.join(' · ')}</span>` : html``}
  </div>`;
}

function entryItem(entry: TimelineEntry, children: Html[] = []): Html {
  return html`<li
    class="tl tl-${entry.kind}"
    id="tl-${entry.id}"
    data-id="${entry.id}"
    ${entry.caused_by ? html`data-caused-by="${entry.caused_by}"` : html``}
  >
    ${entryLine(entry)}
    ${
      children.length
        ? html`<ul class="tl-children">
            ${children}
          </ul>`
        : html``
    }
  </li>`;
}

/** An entry alone, for the live updates: the page's script puts it under its cause. */
export function entryHtml(entry: TimelineEntry): string {
  return entryItem(entry).text;
}

/**
 * The entries as a tree: each under the entry that caused it when that is on the same page (an app
 * request's twin calls, a call's state change); the rest at the top, in time order.
 */
export function entryTree(entries: TimelineEntry[]): Html[] {
  const ids = new Set(entries.map((e) => e.id));
  const children = new Map<string, TimelineEntry[]>();
  const roots: TimelineEntry[] = [];
  for (const entry of entries) {
    if (entry.caused_by && ids.has(entry.caused_by) && entry.caused_by !== entry.id) {
      const list = children.get(entry.caused_by) ?? [];
      list.push(entry);
      children.set(entry.caused_by, list);
    } else roots.push(entry);
  }
  // Causes form a tree in practice; the depth cap keeps a malformed cycle from recursing forever.
  const render = (entry: TimelineEntry, depth: number): Html =>
    entryItem(entry, depth > 8 ? [] : (children.get(entry.id) ?? []).map((c) => render(c, depth + 1)));
  return roots.map((entry) => render(entry, 0));
}

export interface TimelineView {
  signedIn: SignedIn;
  sandbox: SandboxRecord;
  entries: TimelineEntry[];
  nextCursor: string;
  notes: string[];
  /** Entries asked for: a full page means more may follow at once. */
  pageSize: number;
  /** The page started at a cursor (a visitor without script paging on). */
  fromCursor: boolean;
}

export function timelinePage(view: TimelineView): PageOptions {
  const { sandbox, entries } = view;
  const base = sandboxPath(sandbox.id);
  const full = entries.length >= view.pageSize;
  return {
    title: `Timeline · ${sandbox.repo}`,
    section: 'dashboard',
    signedIn: view.signedIn,
    scripts: ['dashboard.js'],
    body: html`<p class="crumbs">
        <a href="/dashboard">Sandboxes</a> / <a href="${base}">${sandbox.repo}</a> / timeline
      </p>
      <div id="sandbox-head">${sandboxHead(sandbox)}</div>
      ${sandboxTabs(sandbox, 'timeline')}
      <p class="muted">
        Everything this sandbox did, oldest first: deploy steps, each request to the app with the twin calls
        it made and what they changed, webhooks, crashes and blocked calls. New entries appear at the bottom.
      </p>
      <p id="timeline-notes" class="muted" aria-live="polite">${view.notes.join(' ')}</p>
      <ul
        id="timeline"
        aria-label="Timeline"
        data-follow="${base}/timeline/entries"
        data-cursor="${view.nextCursor}"
        data-page-size="100"
        data-ended="${ACTIVE_STATUSES.has(sandbox.status) ? 'false' : 'true'}"
      >
        ${entryTree(entries)}
      </ul>
      ${entries.length ? html`` : html`<p id="timeline-empty" class="empty">Nothing ${view.fromCursor ? 'after this' : 'yet'}.</p>`}
      <nav class="pager" aria-label="Timeline pages">
        ${view.fromCursor ? html`<a href="${base}/timeline">From the start</a>` : html``}
        <a href="${base}/timeline?cursor=${encodeURIComponent(view.nextCursor)}" rel="next"
          >${full ? 'Later entries' : 'Newer entries, if any'}</a
        >
      </nav>`,
  };
}
