import { html, type Html } from '../../html.ts';
import { csrfField, type PageOptions } from '../../layout.ts';
import type { SignedIn } from '../../session.ts';
import type { SandboxRecord } from '../../../store/records.ts';
import type { TwinSummary } from '../../../twins/contract.ts';
import type { FaultRule } from '../../../twins/runtime/faults.ts';
import type { RequestLogEntry } from '../../../twins/runtime/request-log.ts';
import type { WebhookDelivery } from '../../../twins/runtime/webhooks.ts';
import { errorBox, notice, timeElement } from './parts.ts';
import { sandboxHead, sandboxPath, sandboxTabs } from './sandbox.ts';

/** A logged body is cut here on the page: the twin's log keeps up to its own cap, the page stays light. */
const BODY_CHARS = 8000;

export interface InspectorData {
  summary: TwinSummary | undefined;
  requests: { entries: RequestLogEntry[]; hasMore: boolean; lastId: number };
  target: { url: string; events: string[] } | null;
  deliveries: WebhookDelivery[];
  faults: FaultRule[];
}

export interface InspectorView {
  signedIn: SignedIn;
  sandbox: SandboxRecord;
  twin: string;
  /** The request log page asked for: entries before this id; undefined for the newest. */
  before?: number;
  /** Absent when the twin could not be read; `unavailable` says why. */
  data?: InspectorData;
  unavailable?: string;
  notice?: string;
  error?: string;
}

export const twinPath = (sandboxId: string, twin: string) =>
  `${sandboxPath(sandboxId)}/twins/${encodeURIComponent(twin)}`;

function bodyText(body: unknown): string {
  if (body === null || body === undefined || body === '') return '';
  const text = typeof body === 'string' ? body : JSON.stringify(body, null, 2);
  return text.length > BODY_CHARS
    ? `${text.slice(0, BODY_CHARS)}\n… (${text.length - BODY_CHARS} more characters)`
    : text;
}

/** One request of the twin's log: a row, and its (already redacted) bodies folded below it. */
export function requestRows(entries: RequestLogEntry[]): Html[] {
  // Newest first: what the app just did is what a person looks for.
  return [...entries].reverse().map((entry) => {
    const request = bodyText(entry.request_body);
    const response = bodyText(entry.response_body);
    const statusClass = entry.status >= 400 ? 'bad' : 'ok';
    return html`<tr data-request-id="${entry.id}">
      <td>${entry.id}</td>
      <td>${timeElement(entry.at)}</td>
      <td><code>${entry.method}</code></td>
      <td class="path"><code>${entry.path}</code></td>
      <td>
        <span class="http-${statusClass}">${entry.status}</span
        >${entry.fault ? html` <span class="tag">fault</span>` : html``}
      </td>
      <td>${Math.round(entry.duration_ms)} ms</td>
      <td>
        ${
          request || response
            ? html`<details>
                <summary>Bodies</summary>
                ${
                  request
                    ? html`<p class="muted">Request</p>
                        <pre class="body">${request}</pre>`
                    : html``
                }
                ${
                  response
                    ? html`<p class="muted">Response</p>
                        <pre class="body">${response}</pre>`
                    : html``
                }
              </details>`
            : html`<span class="muted">none</span>`
        }
      </td>
    </tr>`;
  });
}

function requestsSection(view: InspectorView, data: InspectorData): Html {
  const { entries, hasMore, lastId } = data.requests;
  const base = twinPath(view.sandbox.id, view.twin);
  const older =
    hasMore && entries.length
      ? html`<a href="${base}?before=${entries[0]!.id}#requests" rel="next">Older requests</a>`
      : html``;
  const newest = view.before !== undefined ? html`<a href="${base}#requests">Newest requests</a>` : html``;
  const live =
    view.before === undefined ? html` data-follow="${base}/requests" data-last-id="${lastId}"` : html``;
  return html`<section aria-labelledby="requests-title" id="requests">
    <h2 id="requests-title">Requests</h2>
    <p class="muted">
      What the app (or anyone with the twin's credentials) asked this twin, newest first. Secrets in bodies
      are masked by the twin.
    </p>
    <table aria-label="Requests to ${view.twin}" class="requests">
      <thead>
        <tr>
          <th scope="col">#</th>
          <th scope="col">Time</th>
          <th scope="col">Method</th>
          <th scope="col">Path</th>
          <th scope="col">Status</th>
          <th scope="col">Took</th>
          <th scope="col">Bodies</th>
        </tr>
      </thead>
      <tbody ${live}>
        ${requestRows(entries)}
      </tbody>
    </table>
    ${entries.length ? html`` : html`<p class="empty">No requests ${view.before !== undefined ? 'before these' : 'yet'}.</p>`}
    <nav class="pager" aria-label="Request pages">${newest} ${older}</nav>
  </section>`;
}

function summarySection(summary: TwinSummary | undefined): Html {
  if (!summary) return html`<p class="muted">This twin has no summary of its state.</p>`;
  return html`${summary.tables.map(
    (table) =>
      html`<h3>${table.title}</h3>
        ${
          table.rows.length
            ? html`<table aria-label="${table.title}">
                  <thead>
                    <tr>
                      ${table.columns.map((c) => html`<th scope="col">${c}</th>`)}
                    </tr>
                  </thead>
                  <tbody>
                    ${table.rows.map(
                      (row) =>
                        html`<tr>
                          ${row.map((cell) => html`<td>${cell}</td>`)}
                        </tr>`,
                    )}
                  </tbody>
                </table>
                ${table.omitted ? html`<p class="muted">and ${table.omitted} older not shown</p>` : html``}`
            : html`<p class="muted">None.</p>`
        }`,
  )}`;
}

function webhooksSection(view: InspectorView, data: InspectorData): Html {
  const base = twinPath(view.sandbox.id, view.twin);
  const target = data.target
    ? html`<p>Sent to <code>${data.target.url}</code> (events: ${data.target.events.join(', ')}).</p>`
    : html`<p class="muted">No webhook target: this twin sends no events.</p>`;
  const deliveries = [...data.deliveries].reverse().slice(0, 50);
  const result = (d: WebhookDelivery) => {
    const state = (d as { state?: string }).state;
    if (state === 'pending') return html`<span class="tag">pending</span>`;
    return d.success
      ? html`<span class="http-ok">delivered</span>`
      : html`<span class="http-bad">failed</span>`;
  };
  return html`<section aria-labelledby="webhooks-title">
    <h2 id="webhooks-title">Webhook deliveries</h2>
    ${target}
    ${
      deliveries.length
        ? html`<table aria-label="Webhook deliveries">
            <thead>
              <tr>
                <th scope="col">#</th>
                <th scope="col">Event</th>
                <th scope="col">Sent</th>
                <th scope="col">App's answer</th>
                <th scope="col">Result</th>
                <th scope="col">Redeliver</th>
              </tr>
            </thead>
            <tbody>
              ${deliveries.map(
                (d) =>
                  html`<tr>
                    <td>
                      ${d.id}${d.redelivery_of ? html` <span class="muted">(of ${d.redelivery_of})</span>` : html``}
                    </td>
                    <td><code>${d.event}${d.action ? `.${d.action}` : ''}</code></td>
                    <td>${timeElement(d.delivered_at)}</td>
                    <td>${d.status_code ?? html`<span class="muted">${d.error ?? 'no answer'}</span>`}</td>
                    <td>${result(d)}</td>
                    <td>
                      ${
                        data.target
                          ? html`<form
                              method="post"
                              action="${base}/deliveries/${d.id}/redeliver"
                              class="inline"
                            >
                              ${csrfField(view.signedIn)}<button
                                type="submit"
                                class="secondary"
                                aria-label="Redeliver delivery ${d.id}"
                              >
                                Redeliver
                              </button>
                            </form>`
                          : html``
                      }
                    </td>
                  </tr>`,
              )}
            </tbody>
          </table>`
        : html`<p class="muted">No deliveries yet.</p>`
    }
  </section>`;
}

function faultText(rule: FaultRule): string {
  const parts = [
    rule.rate_limit ? 'rate-limit error' : rule.status ? `status ${rule.status}` : undefined,
    rule.latency_ms ? `${rule.latency_ms} ms delay` : undefined,
  ].filter(Boolean);
  return parts.join(' + ');
}

function faultsSection(view: InspectorView, data: InspectorData): Html {
  const base = twinPath(view.sandbox.id, view.twin);
  const csrf = csrfField(view.signedIn);
  return html`<section aria-labelledby="faults-title">
    <h2 id="faults-title">Fault injection</h2>
    ${
      data.faults.length
        ? html`<table aria-label="Active faults">
              <thead>
                <tr>
                  <th scope="col">#</th>
                  <th scope="col">Answer</th>
                  <th scope="col">Requests</th>
                  <th scope="col">Share</th>
                  <th scope="col">Method</th>
                  <th scope="col">Path prefix</th>
                </tr>
              </thead>
              <tbody>
                ${data.faults.map(
                  (rule) =>
                    html`<tr>
                      <td>${rule.id}</td>
                      <td>${faultText(rule)}</td>
                      <td>${rule.count === undefined ? 'until cleared' : `next ${rule.count}`}</td>
                      <td>${rule.ratio === undefined ? 'all' : `${Math.round(rule.ratio * 100)}%`}</td>
                      <td>${rule.method ?? 'any'}</td>
                      <td>${rule.path_prefix ? html`<code>${rule.path_prefix}</code>` : 'any'}</td>
                    </tr>`,
                )}
              </tbody>
            </table>
            <form method="post" action="${base}/faults/clear">
              ${csrf}<button type="submit" class="secondary">Clear all faults</button>
            </form>`
        : html`<p class="muted">No faults: every request is served normally.</p>`
    }
    <form method="post" action="${base}/faults" class="fault-form">
      ${csrf}
      <label
        >Answer with
        <select name="kind">
          <option value="status">an error status</option>
          <option value="rate_limit">the vendor's rate-limit error</option>
          <option value="latency">only a delay</option>
        </select></label
      >
      <label>Status <input name="status" type="number" min="400" max="599" value="503" /></label>
      <label
        >Delay (ms) <input name="latency_ms" type="number" min="0" max="60000" placeholder="none"
      /></label>
      <label>For the next <input name="count" type="number" min="1" placeholder="all" /> requests</label>
      <label
        >Method
        <select name="method">
          <option value="">any</option>
          ${['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].map((m) => html`<option value="${m}">${m}</option>`)}
        </select></label
      >
      <label>Path starts with <input name="path_prefix" placeholder="/v1/customers" maxlength="200" /></label>
      <button type="submit">Add fault</button>
    </form>
  </section>`;
}

function resetSection(view: InspectorView): Html {
  return html`<section aria-labelledby="reset-title">
    <h2 id="reset-title">Reset</h2>
    <form method="post" action="${twinPath(view.sandbox.id, view.twin)}/reset">
      ${csrfField(view.signedIn)}
      <p>
        Back to the state the sandbox was seeded with: what the app created goes, and so do the request log
        and the faults (the timeline loses those calls too); credentials stay.
      </p>
      <button type="submit" class="danger">Reset ${view.twin}</button>
    </form>
  </section>`;
}

export function inspectorPage(view: InspectorView): PageOptions {
  const { sandbox, twin, data } = view;
  const body = data
    ? html`${requestsSection(view, data)}
        <section aria-labelledby="state-title">
          <h2 id="state-title">State</h2>
          ${summarySection(data.summary)}
        </section>
        ${webhooksSection(view, data)} ${faultsSection(view, data)} ${resetSection(view)}`
    : html`<p class="notice">${view.unavailable ?? 'This twin cannot be reached now.'}</p>`;
  return {
    title: `${twin} twin · ${sandbox.repo}`,
    section: 'dashboard',
    signedIn: view.signedIn,
    scripts: ['dashboard.js'],
    body: html`<p class="crumbs">
        <a href="/dashboard">Sandboxes</a> / <a href="${sandboxPath(sandbox.id)}">${sandbox.repo}</a> /
        ${twin}
      </p>
      ${notice(view.notice)}${errorBox(view.error)}
      <div id="sandbox-head">${sandboxHead(sandbox)}</div>
      ${sandboxTabs(sandbox, `twin:${twin}`)} ${body}`,
  };
}
