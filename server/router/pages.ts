import type { SandboxRecord } from '../store/records.ts';

/**
 * What the router answers itself, when it cannot hand a request to a sandbox: a small HTML page for
 * browsers, or Twinbox's error body (`statusCode`, `error`, `message`, `detail`, `code`) for API clients.
 */

/** The fields of a sandbox the "expired / deleted" page shows. */
export type EndedSandbox = Pick<
  SandboxRecord,
  'id' | 'kind' | 'repo' | 'status' | 'branch' | 'pr_url' | 'ended_at' | 'updated_at'
>;

export interface RouterAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

const escapeHtml = (text: string) =>
  text.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!,
  );

const STYLE =
  'body{font:16px/1.5 system-ui,sans-serif;max-width:40em;margin:4em auto;padding:0 1em;color:#222}code{background:#f3f3f3;padding:0 .2em}';

/** A sandbox that expired or was deleted: what it was, when it ended, and how to get a new one. */
export function endedPage(sandbox: EndedSandbox): string {
  const how = sandbox.status === 'expired' ? 'expired' : 'was deleted';
  const when = sandbox.ended_at ?? sandbox.updated_at;
  const what = sandbox.pr_url ? `pull request ${sandbox.pr_url}` : `branch ${sandbox.branch ?? ''}`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Sandbox ${escapeHtml(how)} · Twinbox</title>
<style>${STYLE}</style>
</head><body>
<h1>This sandbox ${escapeHtml(how)}</h1>
<p>Sandbox <code>${escapeHtml(sandbox.id)}</code> of <code>${escapeHtml(sandbox.repo)}</code> (${escapeHtml(what)})
${escapeHtml(how)} at ${escapeHtml(when)}. Its app and twins have stopped and their data is gone.</p>
<p>To get a new one, create another sandbox (<code>POST /sandboxes</code>, the <code>twinbox create</code> command,
or a new push to the pull request).</p>
</body></html>
`;
}

/** A problem the router reports itself; `message` is also the body's `detail`. */
export interface RouterProblem {
  status: 400 | 404 | 410 | 502 | 503;
  code: string;
  title: string;
  message: string;
  /** 503 only: seconds after which to try again (also a refresh of the HTML page). */
  retryAfter?: number;
}

const REASONS: Record<RouterProblem['status'], string> = {
  400: 'Bad Request',
  404: 'Not Found',
  410: 'Gone',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
};

/**
 * Browsers get HTML; API clients get JSON. An app is browsed, so it gets HTML unless JSON is asked for
 * and HTML is not; a twin is an API, so it gets JSON unless HTML is asked for.
 */
export function prefersHtml(accept: string | undefined, target: 'app' | 'twin'): boolean {
  const text = accept?.toLowerCase() ?? '';
  if (text.includes('text/html')) return true;
  if (target === 'twin') return false;
  return !text.includes('json');
}

export function problemAnswer(problem: RouterProblem, html: boolean, htmlBody?: string): RouterAnswer {
  const headers: Record<string, string> = { 'cache-control': 'no-store' };
  if (problem.retryAfter !== undefined) headers['retry-after'] = String(problem.retryAfter);
  if (html) {
    headers['content-type'] = 'text/html; charset=utf-8';
    headers['content-security-policy'] = "default-src 'none'; style-src 'unsafe-inline'";
    const refresh =
      problem.retryAfter !== undefined ? `<meta http-equiv="refresh" content="${problem.retryAfter}">\n` : '';
    const body =
      htmlBody ??
      `<!doctype html>
<html lang="en"><head><meta charset="utf-8">${refresh}<title>${escapeHtml(problem.title)} · Twinbox</title>
<style>${STYLE}</style>
</head><body>
<h1>${escapeHtml(problem.title)}</h1>
<p>${escapeHtml(problem.message)}</p>
</body></html>
`;
    return { status: problem.status, headers, body };
  }
  headers['content-type'] = 'application/json; charset=utf-8';
  const body = JSON.stringify({
    statusCode: problem.status,
    error: REASONS[problem.status],
    message: problem.message,
    detail: problem.message,
    code: problem.code,
  });
  return { status: problem.status, headers, body };
}

export function endedProblem(sandbox: EndedSandbox): RouterProblem {
  const expired = sandbox.status === 'expired';
  const when = sandbox.ended_at ?? sandbox.updated_at;
  return {
    status: 410,
    code: expired ? 'sandbox_expired' : 'sandbox_deleted',
    title: expired ? 'This sandbox expired' : 'This sandbox was deleted',
    message:
      sandbox.kind === 'twins'
        ? `Twin set ${sandbox.id} ${expired ? 'expired' : 'was deleted'} at ${when}; its twins have stopped and their data is gone. Create another (POST /twin-sets) to get new ones.`
        : `Sandbox ${sandbox.id} of ${sandbox.repo} ${expired ? 'expired' : 'was deleted'} at ${when}; its app and twins have stopped and their data is gone. Create another sandbox to get a new one.`,
  };
}

/** The app's URL of a twin set (twins alone): there is no app, only the twins at their own URLs. */
export function twinSetAppProblem(id: string, twins: readonly string[] = []): RouterProblem {
  return {
    status: 404,
    code: 'twin_set_has_no_app',
    title: 'Twins only, no app',
    message:
      `${id} is a twin set: twins with no app, so there is no page at this address. ` +
      (twins.length ? `Its twins answer at their own URLs (${twins.join(', ')}); ` : '') +
      `GET /twin-sets/${id} lists them.`,
  };
}

/**
 * The app's URL of a sandbox whose app has no HTTP port (`port: false`: a worker, a Socket Mode bot). It
 * is running, so not a 502 nor a 503 to retry: there is nothing at this address, and the page says why.
 */
export function noHttpPortProblem(sandboxId: string, twins: readonly string[] = []): RouterProblem {
  return {
    status: 404,
    code: 'app_has_no_http_port',
    title: 'This app has no HTTP port',
    message:
      `The app of sandbox ${sandboxId} is running, but it has no HTTP port (port: false in .github/twinbox.yml: ` +
      `a worker or a bot that only makes outbound connections), so there is no page to show here. ` +
      (twins.length ? `Its twins answer at their own URLs (${twins.join(', ')}). ` : '') +
      `What it prints: GET /sandboxes/${sandboxId}/logs.`,
  };
}
