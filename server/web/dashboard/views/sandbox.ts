import { html, type Html } from '../../html.ts';
import { csrfField, type PageOptions } from '../../layout.ts';
import type { SignedIn } from '../../session.ts';
import type { SandboxRecord } from '../../../store/records.ts';
import { ACTIVE_STATUSES } from '../../../sandboxes/states.ts';
import { errorBox, notice, safeLink, sourceRef, statusBadge, stripAnsi, timeElement } from './parts.ts';

export const sandboxPath = (id: string) => `/dashboard/sandboxes/${encodeURIComponent(id)}`;

/** Minutes the Extend form offers; the plan's lifetime cap still decides (403 with the reason). */
export const EXTEND_CHOICES = [15, 30, 60, 120];

/** The part that changes with the sandbox's status: re-rendered by the live endpoint too. */
export function sandboxHead(sandbox: SandboxRecord): Html {
  const app =
    sandbox.status === 'ready'
      ? safeLink(sandbox.app_url)
      : html`<span class="muted"
          >${ACTIVE_STATUSES.has(sandbox.status) ? 'not deployed yet' : 'stopped'}</span
        >`;
  return html`<dl class="facts">
    <div>
      <dt>Status</dt>
      <dd>${statusBadge(sandbox.status)}</dd>
    </div>
    <div>
      <dt>Repository</dt>
      <dd>${sandbox.repo}</dd>
    </div>
    <div>
      <dt>Branch or PR</dt>
      <dd>${sourceRef(sandbox)}</dd>
    </div>
    <div class="wide">
      <dt>App</dt>
      <dd id="app-url">${app}</dd>
    </div>
    <div>
      <dt>Created</dt>
      <dd>${timeElement(sandbox.created_at)}</dd>
    </div>
    <div>
      <dt>${sandbox.ended_at ? 'Ended' : 'Expires'}</dt>
      <dd>${sandbox.ended_at ? timeElement(sandbox.ended_at) : timeElement(sandbox.expires_at, true)}</dd>
    </div>
  </dl>`;
}

/** Overview, Timeline, then one tab per twin: each a page of its own, readable without script. */
export function sandboxTabs(sandbox: SandboxRecord, current: string): Html {
  const base = sandboxPath(sandbox.id);
  const tab = (href: string, label: string, key: string) =>
    html`<a href="${href}" ${current === key ? html`aria-current="page"` : html``}>${label}</a>`;
  const twins = Object.keys(sandbox.twins).length ? Object.keys(sandbox.twins) : sandbox.twin_names;
  return html`<nav class="tabs" aria-label="Sandbox">
    ${tab(base, 'Overview', 'overview')} ${tab(`${base}/timeline`, 'Timeline', 'timeline')}
    ${twins.map((name) => tab(`${base}/twins/${encodeURIComponent(name)}`, `Twin: ${name}`, `twin:${name}`))}
  </nav>`;
}

function twinsSection(sandbox: SandboxRecord): Html {
  const entries = Object.entries(sandbox.twins).sort(([a], [b]) => a.localeCompare(b));
  if (!entries.length) {
    return sandbox.twin_names.length
      ? html`<p class="muted">
          ${sandbox.twin_names.join(', ')}:
          ${ACTIVE_STATUSES.has(sandbox.status) ? 'starting with the app.' : 'not running.'}
        </p>`
      : html`<p class="muted">No twins attached.</p>`;
  }
  return html`<table aria-label="Twins">
    <thead>
      <tr>
        <th scope="col">Twin</th>
        <th scope="col">Base URL</th>
        <th scope="col">Inspect</th>
      </tr>
    </thead>
    <tbody>
      ${entries.map(
        ([name, twin]) =>
          html`<tr>
            <td>${name}</td>
            <td><code>${twin.base_url}</code></td>
            <td>
              <a href="${sandboxPath(sandbox.id)}/twins/${encodeURIComponent(name)}"
                >Requests, state, webhooks</a
              >
            </td>
          </tr>`,
      )}
    </tbody>
  </table>`;
}

function variablesSection(sandbox: SandboxRecord, signedIn: SignedIn): Html {
  const names = Object.keys(sandbox.env_vars).sort();
  if (!names.length)
    return html`<p class="muted">None yet: the twins' variables appear when it is ready.</p>`;
  return html`<form method="post" action="${sandboxPath(sandbox.id)}/variables" class="reveal" data-reveal>
      ${csrfField(signedIn)}
      <button type="submit" class="secondary">Reveal values</button>
      <span class="muted">Values are sent only when you ask.</span>
    </form>
    <table aria-label="Variables">
      <thead>
        <tr>
          <th scope="col">Name</th>
          <th scope="col">Value</th>
        </tr>
      </thead>
      <tbody>
        ${names.map(
          (name) =>
            html`<tr>
              <td><code>${name}</code></td>
              <td data-var="${name}"><span class="muted">hidden</span></td>
            </tr>`,
        )}
      </tbody>
    </table>`;
}

function blockedSection(sandbox: SandboxRecord): Html {
  const blocked = sandbox.blocked_egress ?? [];
  if (!blocked.length) return html`<p class="muted">None.</p>`;
  return html`<p>The code tried to reach these and was refused (use the twins' variables instead):</p>
    <table aria-label="Blocked outbound calls">
      <thead>
        <tr>
          <th scope="col">Host</th>
          <th scope="col">Port</th>
          <th scope="col">Attempts</th>
          <th scope="col">First</th>
        </tr>
      </thead>
      <tbody>
        ${blocked.map(
          (b) =>
            html`<tr>
              <td><code>${b.host}</code></td>
              <td>${b.port}</td>
              <td>${b.count}</td>
              <td>${timeElement(b.first_seen)}</td>
            </tr>`,
        )}
      </tbody>
    </table>`;
}

function actions(sandbox: SandboxRecord, signedIn: SignedIn): Html {
  if (!ACTIVE_STATUSES.has(sandbox.status)) {
    return sandbox.status === 'failed'
      ? html`<p><a class="danger-link" href="${sandboxPath(sandbox.id)}/delete">Delete this sandbox…</a></p>`
      : html``;
  }
  return html`<div class="actions">
    <form method="post" action="${sandboxPath(sandbox.id)}/extend" class="inline-form">
      ${csrfField(signedIn)}
      <label
        >Extend by
        <select name="minutes">
          ${EXTEND_CHOICES.map((m) => html`<option value="${m}" ${m === 30 ? html`selected` : html``}>${m} minutes</option>`)}
        </select></label
      >
      <button type="submit">Extend</button>
    </form>
    <a class="danger-link" href="${sandboxPath(sandbox.id)}/delete">Delete this sandbox…</a>
  </div>`;
}

/** What can be done now, and why it failed: above the log, re-rendered live when the sandbox changes. */
export function sandboxStatus(sandbox: SandboxRecord, signedIn: SignedIn): Html {
  const failed =
    sandbox.status === 'failed' || sandbox.error
      ? html`<section aria-labelledby="error-title">
          <h2 id="error-title">Why it failed</h2>
          <div class="error" role="alert">
            <pre class="plain" id="sandbox-error">${sandbox.error ?? 'unknown error'}</pre>
          </div>
        </section>`
      : html``;
  return html`${actions(sandbox, signedIn)}${failed}`;
}

/** Twins, variables, seed notes and blocked calls: below the log, re-rendered live when the sandbox changes. */
export function sandboxDetails(sandbox: SandboxRecord, signedIn: SignedIn): Html {
  const notes = sandbox.seed_notes.length
    ? html`<section aria-labelledby="notes-title">
        <h2 id="notes-title">Seed notes</h2>
        <ul>
          ${sandbox.seed_notes.map((n) => html`<li>${n}</li>`)}
        </ul>
      </section>`
    : html``;
  return html`<section aria-labelledby="twins-title">
      <h2 id="twins-title">Twins</h2>
      ${twinsSection(sandbox)}
    </section>
    <section aria-labelledby="vars-title">
      <h2 id="vars-title">Variables</h2>
      ${variablesSection(sandbox, signedIn)}
    </section>
    ${notes}
    <section aria-labelledby="egress-title">
      <h2 id="egress-title">Blocked outbound calls</h2>
      ${blockedSection(sandbox)}
    </section>`;
}

export interface LogView {
  text: string;
  /** Offset to follow the log from. */
  end: number;
  /** Bytes of earlier output not shown on the page. */
  trimmed: boolean;
}

export interface SandboxPageView {
  signedIn: SignedIn;
  sandbox: SandboxRecord;
  log: LogView;
  notice?: string;
  error?: string;
}

export function sandboxPage(view: SandboxPageView): PageOptions {
  const { sandbox, signedIn, log } = view;
  const id = sandbox.id;
  return {
    title: `${sandbox.repo} · sandbox`,
    section: 'dashboard',
    signedIn,
    scripts: ['dashboard.js'],
    body: html`<p class="crumbs"><a href="/dashboard">Sandboxes</a> / <code>${id}</code></p>
      ${notice(view.notice)}${errorBox(view.error)}
      <div
        id="sandbox"
        data-live="${sandboxPath(id)}/live"
        data-updated="${sandbox.updated_at}"
        data-status="${sandbox.status}"
      >
        <div id="sandbox-head">${sandboxHead(sandbox)}</div>
        ${sandboxTabs(sandbox, 'overview')}
        <div id="sandbox-status">${sandboxStatus(sandbox, signedIn)}</div>
        <section aria-labelledby="log-title">
          <h2 id="log-title">Deploy and app log</h2>
          <p class="muted">
            ${log.trimmed ? html`Earlier output is left out here; ` : html``}The whole log:
            <code>GET /sandboxes/${id}/logs</code>.
            <span id="live-state" aria-live="polite"></span>
          </p>
          <pre id="log" data-offset="${log.end}" tabindex="0" aria-label="Log">${stripAnsi(log.text)}</pre>
        </section>
        <div id="sandbox-details">${sandboxDetails(sandbox, signedIn)}</div>
      </div>`,
  };
}

export function deleteConfirmPage(signedIn: SignedIn, sandbox: SandboxRecord): PageOptions {
  return {
    title: 'Delete this sandbox?',
    section: 'dashboard',
    signedIn,
    body: html`<p>
        <strong>${sandbox.repo}</strong> (${sourceRef(sandbox)}), sandbox <code>${sandbox.id}</code>, is
        ${statusBadge(sandbox.status)}. Deleting it stops its app and twins now; its record and log stay.
      </p>
      <form method="post" action="${sandboxPath(sandbox.id)}/delete" class="inline-form">
        ${csrfField(signedIn)}<button type="submit" class="danger">Delete sandbox</button>
      </form>
      <a href="${sandboxPath(sandbox.id)}">Cancel</a>`,
  };
}

/** The values, for a visitor without script who pressed "Reveal values". */
export function variablesPage(signedIn: SignedIn, sandbox: SandboxRecord): PageOptions {
  const names = Object.keys(sandbox.env_vars).sort();
  return {
    title: 'Variables',
    section: 'dashboard',
    signedIn,
    body: html`<p class="crumbs">
        <a href="/dashboard">Sandboxes</a> / <a href="${sandboxPath(sandbox.id)}">${sandbox.repo}</a>
      </p>
      <p>What the app of sandbox <code>${sandbox.id}</code> gets in its environment.</p>
      <table aria-label="Variables">
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Value</th>
          </tr>
        </thead>
        <tbody>
          ${names.map(
            (name) =>
              html`<tr>
                <td><code>${name}</code></td>
                <td><code>${sandbox.env_vars[name]}</code></td>
              </tr>`,
          )}
        </tbody>
      </table>`,
  };
}
