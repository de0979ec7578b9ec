import type { IncomingMessage, ServerResponse } from 'node:http';
import { PassThrough } from 'node:stream';
import type { Dispatcher, Pool } from 'undici';
// Not imported: loaded after the process's built-in fetch takes its own dispatcher (see the module).
import { undici } from './undici-package.ts';
import { forwardRawResponseHeaders, upstreamRequestHeaders } from './headers.ts';

/**
 * The hot path of the router: a request to an app's or twin's Unix socket, sent with undici over a
 * keep-alive pool per socket, its answer written to the client as it arrives. One pool per backend
 * socket, made on its first request; pools idle for a sweep interval are closed (their sandbox may be
 * gone), so the map holds only backends in use.
 */
export class UpstreamPools {
  private readonly pools = new Map<string, { pool: Pool; used: boolean }>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(sweepMs = 60_000) {
    this.sweeper = setInterval(() => this.sweep(), sweepMs);
    this.sweeper.unref();
  }

  /**
   * Sends `req` (its headers already rewritten) to the backend at `socketPath` and streams the answer to
   * `res`. `failed` is told when no answer could be given, with whether one had arrived whole before
   * (a backend that answered, then stopped reading the body: its answer stands).
   */
  forward(
    socketPath: string,
    req: IncomingMessage,
    res: ServerResponse,
    requestId: string,
    failed: (error: Error, answered: boolean) => void,
  ): void {
    let entry = this.pools.get(socketPath);
    if (!entry) {
      entry = {
        pool: new (undici().Pool)('http://localhost', {
          socketPath,
          // An app may take its time to answer, or stream (server-sent events) with long pauses: the
          // router does not judge; a client that goes away ends the request (see ProxyHandler).
          headersTimeout: 0,
          bodyTimeout: 0,
          // Idle connections close before the backend's own `Keep-Alive: timeout` would close them.
          keepAliveTimeout: 60_000,
          keepAliveMaxTimeout: 60_000,
        }),
        used: true,
      };
      this.pools.set(socketPath, entry);
    }
    entry.used = true;
    const handler = new ProxyHandler(req, res, requestId, failed);
    // `servername` is read by undici's Request (lib/core/request.js) but missing from its DispatchOptions
    // type. Only TLS would use it; given, undici does not work it out from each request's Host.
    const options: Dispatcher.DispatchOptions & { servername: string } = {
      origin: 'http://localhost',
      path: req.url ?? '/',
      method: req.method as Dispatcher.HttpMethod,
      headers: upstreamRequestHeaders(req.headers),
      body: handler.body(),
      servername: 'localhost',
    };
    entry.pool.dispatch(options, handler);
  }

  /** Closes the pools not used since the last sweep; run every `sweepMs`. */
  sweep(): void {
    for (const [socketPath, entry] of this.pools) {
      if (entry.used) entry.used = false;
      else {
        this.pools.delete(socketPath);
        void entry.pool.close();
      }
    }
  }

  /** Ends every pooled connection (requests in flight with them). */
  async close(): Promise<void> {
    clearInterval(this.sweeper);
    const pools = [...this.pools.values()];
    this.pools.clear();
    await Promise.all(pools.map(({ pool }) => pool.destroy()));
  }
}

/** One proxied request, as undici's dispatch handler: its answer goes to `res` as it arrives. */
class ProxyHandler implements Dispatcher.DispatchHandler {
  private abort: ((error?: Error) => void) | undefined;
  private resume: (() => void) | undefined;
  private upload: PassThrough | undefined;
  private answered = false;

  constructor(
    private readonly req: IncomingMessage,
    private readonly res: ServerResponse,
    private readonly requestId: string,
    private readonly failed: (error: Error, answered: boolean) => void,
  ) {
    // A client that goes away (a closed tab on a server-sent event stream) ends the backend's request.
    res.once('close', () => {
      if (!res.writableFinished) this.abort?.();
    });
  }

  /**
   * The body to send: none for a request without one. Otherwise a pipe from the client's request, not
   * the request itself: undici destroys the stream it was given when the backend stops reading, and the
   * client's connection must outlive that (see onComplete).
   */
  body(): PassThrough | null {
    const { headers } = this.req;
    if (headers['content-length'] === undefined && headers['transfer-encoding'] === undefined) return null;
    if (headers['content-length'] === '0') return null;
    this.upload = new PassThrough();
    this.req.pipe(this.upload);
    return this.upload;
  }

  onConnect(abort: (error?: Error) => void): void {
    this.abort = abort;
    if (this.res.destroyed) abort();
  }

  onHeaders(statusCode: number, rawHeaders: Buffer[], resume: () => void, statusText: string): boolean {
    // 1xx informational answers (103 Early Hints) are not relayed.
    if (statusCode < 200) return true;
    const { res } = this;
    // Headers, body and end, when they arrive together, leave in one write.
    res.cork();
    process.nextTick(uncork, res);
    res.writeHead(statusCode, statusText, forwardRawResponseHeaders(rawHeaders, this.requestId));
    this.resume = resume;
    return true;
  }

  onData(chunk: Buffer): boolean {
    // Chunks go out as they arrive (server-sent events, chunked): false pauses the backend until drain.
    if (this.res.write(chunk)) return true;
    this.res.once('drain', this.resume!);
    return false;
  }

  onComplete(): void {
    this.answered = true;
    this.res.end();
    this.dropRestOfUpload();
  }

  onError(error: Error): void {
    this.dropRestOfUpload();
    this.failed(error, this.answered);
  }

  /**
   * A backend may answer before it has the whole body, then close (a twin refusing a body too large): the
   * rest of the client's body has nowhere to go. It is read and dropped, so the client finishes sending
   * and reads the answer on an intact connection instead of stalling on a closed socket.
   */
  private dropRestOfUpload(): void {
    if (!this.upload || this.req.complete) return;
    this.req.unpipe(this.upload);
    this.req.resume();
  }
}

function uncork(res: ServerResponse): void {
  res.uncork();
}
