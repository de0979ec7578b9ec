import { html, type Html } from '../../html.ts';
import type { PageOptions } from '../../layout.ts';
import type { SignedIn } from '../../session.ts';
import type { SandboxRecord, SandboxStatus } from '../../../store/records.ts';
import { SANDBOX_STATUSES } from '../../../sandboxes/states.ts';
import { errorBox, safeLink, sourceRef, statusBadge, timeElement } from './parts.ts';

export interface ListFilterView {
  status?: SandboxStatus;
  repo?: string;
  cursor?: string;
}

export interface ListView {
  signedIn: SignedIn;
  sandboxes: SandboxRecord[];
  filter: ListFilterView;
  nextCursor: string | null;
  /** Why the filter could not be applied (a malformed repo name), shown above the form. */
  error?: string;
}

/** `/dashboard` with these filters (and cursor), as a link. */
export function listHref(filter: ListFilterView): string {
  const query = new URLSearchParams();
  if (filter.status) query.set('status', filter.status);
  if (filter.repo) query.set('repo', filter.repo);
  if (filter.cursor) query.set('cursor', filter.cursor);
  const search = query.toString();
  return `/dashboard${search ? `?${search}` : ''}`;
}

function row(sandbox: SandboxRecord): Html {
  const page = `/dashboard/sandboxes/${encodeURIComponent(sandbox.id)}`;
  return html`<tr>
    <td>${statusBadge(sandbox.status)}</td>
    <td><a href="${page}">${sandbox.repo}</a></td>
    <td>${sourceRef(sandbox)}</td>
    <td>${timeElement(sandbox.created_at)}</td>
    <td>${timeElement(sandbox.expires_at)}</td>
    <td>
      ${sandbox.status === 'ready' ? safeLink(sandbox.app_url, 'Open app') : html`<span class="muted">—</span>`}
    </td>
  </tr>`;
}

function filterForm(filter: ListFilterView): Html {
  const option = (value: string, label: string) =>
    html`<option
      value="${value}"
      ${filter.status === value || (!filter.status && value === '') ? html`selected` : html``}
    >
      ${label}
    </option>`;
  return html`<form method="get" action="/dashboard" class="filters" role="search">
    <label
      >Status
      <select name="status">
        ${option('', 'Any status')} ${SANDBOX_STATUSES.map((s) => option(s, s))}
      </select></label
    >
    <label
      >Repository
      <input
        name="repo"
        value="${filter.repo ?? ''}"
        placeholder="owner/name"
        maxlength="140"
        autocomplete="off"
    /></label>
    <button type="submit">Filter</button>
    ${filter.status || filter.repo ? html`<a href="/dashboard">Clear filters</a>` : html``}
  </form>`;
}

/** The list of the account's sandboxes, newest first, one page at a time. */
export function listPage(view: ListView): PageOptions {
  const { sandboxes, filter, nextCursor } = view;
  const filtered = Boolean(filter.status || filter.repo);
  const empty = filtered
    ? html`<p class="empty">No sandbox matches these filters.</p>`
    : html`<p class="empty">
        No sandboxes yet. Create one with an <a href="/settings/api-keys">API key</a> and
        <code>POST /sandboxes</code> (see <a href="/openapi.json">the API</a>), the CLI (<code
          >twinbox create</code
        >) or the GitHub App on a pull request.
      </p>`;
  const table = sandboxes.length
    ? html`<table class="sandboxes" aria-label="Your sandboxes, newest first">
        <thead>
          <tr>
            <th scope="col">Status</th>
            <th scope="col">Repository</th>
            <th scope="col">Branch or PR</th>
            <th scope="col">Created</th>
            <th scope="col">Expires</th>
            <th scope="col">App</th>
          </tr>
        </thead>
        <tbody>
          ${sandboxes.map(row)}
        </tbody>
      </table>`
    : empty;
  const pager = html`<nav class="pager" aria-label="Pages">
    ${filter.cursor ? html`<a href="${listHref({ ...filter, cursor: undefined })}">Newest</a>` : html``}
    ${nextCursor ? html`<a href="${listHref({ ...filter, cursor: nextCursor })}" rel="next">Older sandboxes</a>` : html``}
  </nav>`;
  return {
    title: 'Sandboxes',
    section: 'dashboard',
    signedIn: view.signedIn,
    body: html`${errorBox(view.error)}${filterForm(filter)}${table}${pager}`,
  };
}
