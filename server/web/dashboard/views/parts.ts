import { html, type Html } from '../../html.ts';
import type { SandboxRecord } from '../../../store/records.ts';

/** The status as a badge; the text says it, the colour only repeats it. */
export function statusBadge(status: SandboxRecord['status']): Html {
  return html`<span class="status status-${status}" data-status="${status}">${status}</span>`;
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** "23 Nov 2026, 12:06 UTC": the same text for every visitor, whatever their browser's zone. */
export function readableTime(iso: string): string {
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  const two = (n: number) => String(n).padStart(2, '0');
  return (
    `${date.getUTCDate()} ${MONTHS[date.getUTCMonth()]} ${date.getUTCFullYear()}, ` +
    `${two(date.getUTCHours())}:${two(date.getUTCMinutes())} UTC`
  );
}

/** "in 25 min", "3 h ago": how far a time is from `now`, for expiry. */
export function relativeTime(iso: string, now = Date.now()): string {
  const ms = Date.parse(iso) - now;
  if (Number.isNaN(ms)) return '';
  const minutes = Math.round(Math.abs(ms) / 60_000);
  const span =
    minutes < 1
      ? 'less than a minute'
      : minutes < 120
        ? `${minutes} min`
        : minutes < 48 * 60
          ? `${Math.round(minutes / 60)} h`
          : `${Math.round(minutes / 1440)} days`;
  return ms >= 0 ? `in ${span}` : `${span} ago`;
}

/** A time as machines (`datetime`) and people read it. */
export function timeElement(iso: string, withRelative = false): Html {
  return html`<time datetime="${iso}">${readableTime(iso)}</time>${
      withRelative ? html` <span class="muted">(${relativeTime(iso)})</span>` : html``
    }`;
}

/** The pull request's number ("#12") from its URL, else the URL. */
export function pullLabel(prUrl: string): string {
  const match = /\/pull\/(\d+)\/?$/.exec(prUrl);
  return match ? `#${match[1]}` : prUrl;
}

/** A link only to http(s) URLs: a stored value never becomes a `javascript:` link. */
export function safeLink(url: string | null | undefined, label?: string | Html): Html {
  if (!url) return html``;
  let ok = false;
  try {
    ok = ['http:', 'https:'].includes(new URL(url).protocol);
  } catch {
    ok = false;
  }
  return ok ? html`<a href="${url}">${label ?? url}</a>` : html`<code>${label ?? url}</code>`;
}

/** What the sandbox deploys: the branch, or a link to the pull request. */
export function sourceRef(sandbox: Pick<SandboxRecord, 'branch' | 'pr_url'>): Html {
  if (sandbox.pr_url) return safeLink(sandbox.pr_url, pullLabel(sandbox.pr_url));
  if (sandbox.branch) return html`<code>${sandbox.branch}</code>`;
  return html`<span class="muted">default branch</span>`;
}

/** ANSI colour codes make logs unreadable as text; they are dropped for the page (never for the API). */
export function stripAnsi(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/\u001b\[[0-9;?]*[ -/]*[@-~]/g, '');
}

export function notice(text: string | undefined): Html {
  return text ? html`<div class="notice" role="status"><p>${text}</p></div>` : html``;
}

export function errorBox(text: string | undefined): Html {
  return text ? html`<div class="error" role="alert"><p id="detail">${text}</p></div>` : html``;
}
