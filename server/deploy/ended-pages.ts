import { createServer, type Server } from 'node:http';
import type { Logger } from 'pino';
import type { SandboxRecord } from '../store/records.ts';

/**
 * After a sandbox ends, its app URL keeps answering for a while with a clear page, instead of a refused
 * connection that looks like an outage: 410 Gone, saying that the sandbox expired or was deleted, when,
 * and what it was. Embedded default only (one port per app); with host-based routing the gateway serves
 * the same page (docs/deploy.md).
 *
 * The page holds the port it serves until it is closed, so the port is not handed to a new app in the
 * meantime; the OS picks new app ports among free ones.
 */
export class EndedPages {
  private readonly servers = new Map<string, { server: Server; timer: NodeJS.Timeout }>();

  constructor(
    private readonly keepMs: number,
    private readonly logger: Logger,
  ) {}

  /** Serves the page at the ended sandbox's app URL; does nothing for sandboxes that never had one. */
  async open(sandbox: SandboxRecord): Promise<void> {
    if (!sandbox.app_url || (sandbox.status !== 'expired' && sandbox.status !== 'deleted')) return;
    if (this.servers.has(sandbox.id) || this.keepMs === 0) return;
    const url = new URL(sandbox.app_url);
    const body = endedPage(sandbox);
    const server = createServer((_request, response) => {
      response.writeHead(410, {
        'content-type': 'text/html; charset=utf-8',
        'cache-control': 'no-store',
        'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'",
      });
      response.end(body);
    });
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        // The same interfaces the app listened on (all), so the same URL reaches the page.
        server.listen(Number(url.port), resolve);
      });
    } catch (error) {
      // The port went to someone else first: no page then, which is only a lesser answer, not an error.
      this.logger.debug({ sandbox_id: sandbox.id, err: error }, 'ended page not served');
      return;
    }
    // A courtesy page must never keep a stopping process alive.
    server.unref();
    const timer = setTimeout(() => void this.closeOne(sandbox.id), this.keepMs);
    timer.unref();
    this.servers.set(sandbox.id, { server, timer });
  }

  async close(): Promise<void> {
    await Promise.all([...this.servers.keys()].map((id) => this.closeOne(id)));
  }

  private async closeOne(id: string): Promise<void> {
    const entry = this.servers.get(id);
    if (!entry) return;
    this.servers.delete(id);
    clearTimeout(entry.timer);
    await new Promise<void>((resolve) => entry.server.close(() => resolve()));
  }
}

const escapeHtml = (text: string) =>
  text.replace(
    /[&<>"']/g,
    (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!,
  );

export function endedPage(sandbox: SandboxRecord): string {
  const how = sandbox.status === 'expired' ? 'expired' : 'was deleted';
  const when = sandbox.ended_at ?? sandbox.updated_at;
  const what = sandbox.pr_url ? `pull request ${sandbox.pr_url}` : `branch ${sandbox.branch ?? ''}`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Sandbox ${escapeHtml(how)} · Twinbox</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:40em;margin:4em auto;padding:0 1em;color:#222}code{background:#f3f3f3;padding:0 .2em}</style>
</head><body>
<h1>This sandbox ${escapeHtml(how)}</h1>
<p>Sandbox <code>${escapeHtml(sandbox.id)}</code> of <code>${escapeHtml(sandbox.repo)}</code> (${escapeHtml(what)})
${escapeHtml(how)} at ${escapeHtml(when)}. Its app and twins have stopped and their data is gone.</p>
<p>To get a new one, create another sandbox (<code>POST /sandboxes</code>, the <code>twinbox create</code> command,
or a new push to the pull request).</p>
</body></html>
`;
}
