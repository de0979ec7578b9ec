import { randomUUID } from 'node:crypto';
import {
  Agent,
  ServerResponse,
  STATUS_CODES,
  type IncomingHttpHeaders,
  type IncomingMessage,
} from 'node:http';
import type { Socket } from 'node:net';
import { TLSSocket } from 'node:tls';
import type { Server as HapiServer } from '@hapi/hapi';
import { ProxyServer } from 'http-proxy-3';
import type { Logger } from 'pino';
import { parseSandboxHost, type SandboxHost } from './hosts.ts';
import { UpstreamPools } from './upstream.ts';
import {
  forwardRequestHeaders,
  forwardResponseHeaders,
  REQUEST_ID_HEADER,
  twinboxCredentials,
  type CredentialCheck,
} from './headers.ts';
import {
  endedPage,
  endedProblem,
  noHttpPortProblem,
  twinSetAppProblem,
  prefersHtml,
  problemAnswer,
  type EndedSandbox,
  type RouterAnswer,
  type RouterProblem,
} from './pages.ts';

export type RouteTarget = { kind: 'app' } | { kind: 'twin'; name: string };

/**
 * Where a sandbox stands, as far as routing cares:
 * - `live`: queued, building or ready; requests go to `socketFor`, or get 503 while it has none yet.
 *   `twins`, when given, are the twin names the sandbox has: another name gets 404 instead of 503.
 *   `noHttpPort`: its app runs with none (`port: false`): the app's URL says so (404), its twins answer.
 *   `twinSet`: twins alone (POST /twin-sets): there is no app, and the app's URL says so (404).
 * - `resuming`: `ready` before a Twinbox restart and being brought back (its app and twins started again):
 *   503 with `Retry-After` until it is `live` again (or `failed`), never a request to a half-started pod.
 * - `failed`: 502 with the error.
 * - `ended`: expired or deleted recently: 410 with the "expired / deleted" page.
 * - `unknown`: no such sandbox (or ended long ago): 404.
 */
export type SandboxState =
  | { state: 'live'; twins?: readonly string[]; noHttpPort?: boolean; twinSet?: boolean }
  | { state: 'resuming'; twins?: readonly string[] }
  | { state: 'failed'; error?: string | null }
  | { state: 'ended'; sandbox: EndedSandbox }
  | { state: 'unknown' };

/** What the router needs from the rest of Twinbox; answered synchronously on every request. */
export interface SandboxEndpoints {
  /** Unix socket of a sandbox's app or one of its twins, or undefined when it is not running. */
  socketFor(sandboxId: string, target: RouteTarget): string | undefined;
  stateOf(sandboxId: string): SandboxState;
}

/**
 * Where a sandbox this process has no pod of is served, on several processes (docs/routing.md, "Several
 * processes"): the internal URL of the runner holding it, or its state, which this router answers.
 */
export type RemoteLocation = { runnerUrl: string } | { state: SandboxState };

/** Finds sandboxes held by other processes (server/runners/locator.ts); asked per request, async. */
export interface RemoteSandboxes {
  locate(sandboxId: string): Promise<RemoteLocation>;
}

/**
 * Set on a request one router forwards to another (API process to runner): the runner answers it from
 * what it has and never forwards it again, so two processes that disagree cannot bounce it between them.
 */
export const FORWARDED_HEADER = 'x-twinbox-forwarded';

/** A request the router forwards to a sandbox's app or twin, as an observer (the timeline) sees it. */
export interface ForwardedRequest {
  sandboxId: string;
  target: RouteTarget;
  /** The `x-twinbox-request-id` the backend receives. */
  requestId: string;
  method: string;
  /** Path and query as the client sent them. */
  url: string;
  /** The headers as forwarded (Twinbox's credentials already taken out). */
  headers: IncomingHttpHeaders;
  startedAt: number;
}

/** Told of each forwarded request as it starts; the function it returns is called once it is over. */
export type ForwardObserver = (
  request: ForwardedRequest,
) => (outcome: { status: number | undefined; endedAt: number }) => void;

export interface RouterOptions {
  /** `TWINBOX_SANDBOX_DOMAIN` (config `sandboxDomain`). */
  domain: string;
  endpoints: SandboxEndpoints;
  logger: Logger;
  /** `TWINBOX_ADMIN_TOKEN`, so that too is never forwarded to a sandbox. */
  adminToken?: string;
  /** Hears of every request forwarded to an app or twin (WebSocket tunnels excepted). */
  observe?: ForwardObserver;
  /**
   * Sandboxes of other processes: a request for a sandbox with no pod here is proxied, Host kept, to
   * the runner holding it. The observer is not told of those: the runner's own router tells its own.
   */
  remote?: RemoteSandboxes;
}

export interface Router {
  /** Gives the listener back to hapi alone, closes WebSocket tunnels and pooled backend connections. */
  close(): Promise<void>;
}

type RequestListener = (req: IncomingMessage, res: ServerResponse) => void;
type UpgradeListener = (req: IncomingMessage, socket: Socket, head: Buffer) => void;

/** Found: the socket to proxy to. Not found: what to answer instead. */
type Decision = { socketPath: string } | { problem: RouterProblem; page?: string };

/**
 * Puts the sandbox router in front of hapi on hapi's own listener: requests for a sandbox host
 * (`<id>.<domain>`, `<id>--<twin>.<domain>`) are proxied to the app's or twin's Unix socket without
 * entering hapi; every other request reaches hapi exactly as before. WebSocket handshakes are
 * tunnelled; responses are streamed, never buffered.
 *
 * Dispatching on the raw listener, not in a hapi extension, spares each proxied request a hapi request
 * lifecycle (bench/router/run.ts measures both).
 */
export function attachRouter(server: HapiServer, options: RouterOptions): Router {
  const { endpoints, logger } = options;
  const domain = options.domain.toLowerCase();
  const isTwinboxCredential: CredentialCheck = twinboxCredentials(options.adminToken);
  const listener = server.listener;

  // Plain requests go through keep-alive undici pools, one per backend socket (upstream.ts). WebSocket
  // handshakes go through http-proxy-3, which tunnels them; its Agent pools nothing (an upgraded socket
  // is never reused), so it keeps none.
  const upstream = new UpstreamPools();
  const proxy = new ProxyServer({});
  const tunnels = new Set<Socket>();

  proxy.on('proxyReqWs', (proxyReq, req) => {
    const requestId = String(req.headers[REQUEST_ID_HEADER]);
    // Before http-proxy-3 writes the 101 (or another answer) to the client from these same headers.
    proxyReq.prependListener('upgrade', (proxyRes: IncomingMessage) => {
      forwardResponseHeaders(proxyRes.headers, requestId, true);
    });
    proxyReq.prependListener('response', (proxyRes: IncomingMessage) => {
      forwardResponseHeaders(proxyRes.headers, requestId);
    });
  });
  // http-proxy-3 reports client socket errors of WebSocket tunnels here; without a listener they throw.
  proxy.on('error', (error, _req, target) => {
    logger.debug({ err: error }, 'router: connection error');
    if (!(target instanceof ServerResponse)) target.destroy();
  });

  function decide(host: SandboxHost, state: SandboxState = endpoints.stateOf(host.id)): Decision {
    // Only the router's own answers name it; a proxied request does not pay for the string.
    const what = () =>
      host.twin ? `The twin "${host.twin}" of sandbox ${host.id}` : `The app of sandbox ${host.id}`;
    switch (state.state) {
      case 'unknown':
        return {
          problem: {
            status: 404,
            code: 'sandbox_not_found',
            title: 'No such sandbox',
            message: `There is no sandbox ${host.id} here: it never existed, or it ended long ago.`,
          },
        };
      case 'ended':
        return { problem: endedProblem(state.sandbox), page: endedPage(state.sandbox) };
      case 'failed':
        return {
          problem: {
            status: 502,
            code: 'sandbox_failed',
            title: 'This sandbox failed',
            message: `Sandbox ${host.id} failed${state.error ? `: ${state.error}` : '.'} Its logs: GET /sandboxes/${host.id}/logs.`,
          },
        };
      case 'resuming':
        if (host.twin && state.twins && !state.twins.includes(host.twin))
          return noSuchTwin(host, state.twins);
        return {
          problem: {
            status: 503,
            code: 'sandbox_resuming',
            title: 'Coming back',
            message: `${what()} is coming back after a Twinbox restart: its app and twins are starting again. Try again in a few seconds.`,
            retryAfter: 2,
          },
        };
      case 'live': {
        if (!host.twin && state.noHttpPort) return { problem: noHttpPortProblem(host.id, state.twins) };
        if (!host.twin && state.twinSet) return { problem: twinSetAppProblem(host.id, state.twins) };
        const target: RouteTarget = host.twin ? { kind: 'twin', name: host.twin } : { kind: 'app' };
        const socketPath = endpoints.socketFor(host.id, target);
        if (socketPath) return { socketPath };
        if (host.twin && state.twins && !state.twins.includes(host.twin))
          return noSuchTwin(host, state.twins);
        return {
          problem: {
            status: 503,
            code: 'sandbox_not_running',
            title: 'Not running yet',
            message: `${what()} is not running yet: the sandbox is still being deployed. Try again in a few seconds.`,
            retryAfter: 2,
          },
        };
      }
    }
  }

  function noSuchTwin(host: SandboxHost, twins: readonly string[]): Decision {
    return {
      problem: {
        status: 404,
        code: 'twin_not_found',
        title: 'No such twin',
        message: `Sandbox ${host.id} has no twin "${host.twin}"; its twins: ${twins.join(', ') || 'none'}.`,
      },
    };
  }

  function answer(req: IncomingMessage, res: ServerResponse, host: SandboxHost, decision: Decision): void {
    if (!('problem' in decision)) return;
    const html = prefersHtml(req.headers.accept, host.twin ? 'twin' : 'app');
    const reply = problemAnswer(decision.problem, html, decision.page);
    send(res, req.method === 'HEAD', reply, randomUUID());
  }

  function proxyWeb(
    req: IncomingMessage,
    res: ServerResponse,
    host: SandboxHost,
    expectContinue = false,
    state?: SandboxState,
  ): void {
    const decision = decide(host, state);
    if (!('socketPath' in decision)) return answer(req, res, host, decision);
    if (!forwardableTarget(req.url)) return answer(req, res, host, { problem: unforwardableTarget(req.url) });
    if (expectContinue) {
      // We take the body, so we say so; the backend never sees the Expect it would answer to nobody.
      res.writeContinue();
      delete req.headers.expect;
    }
    const requestId = randomUUID();
    forwardRequestHeaders(req.headers, {
      requestId,
      remoteAddress: req.socket.remoteAddress,
      encrypted: req.socket instanceof TLSSocket,
      upgrade: false,
      isTwinboxCredential,
    });
    const over = options.observe?.({
      sandboxId: host.id,
      target: host.twin ? { kind: 'twin', name: host.twin } : { kind: 'app' },
      requestId,
      method: req.method ?? 'GET',
      url: req.url ?? '/',
      headers: req.headers,
      startedAt: Date.now(),
    });
    // `close` comes once the response is sent or the client went away; no status means no answer reached it.
    if (over)
      res.once('close', () =>
        over({ status: res.headersSent ? res.statusCode : undefined, endedAt: Date.now() }),
      );
    upstream.forward(decision.socketPath, req, res, requestId, (error, answered) => {
      if (answered) {
        // The backend answered in full, then stopped taking the body: its answer stands.
        logger.debug(
          { err: error, sandbox_id: host.id, request_id: requestId },
          'router: the backend closed the upload after its answer',
        );
        return;
      }
      if (res.destroyed) return;
      logger.warn(
        { err: error, sandbox_id: host.id, twin: host.twin, request_id: requestId },
        'router: backend did not answer',
      );
      if (res.headersSent) {
        res.destroy();
        return;
      }
      const what = host.twin ? `The twin "${host.twin}"` : 'The app';
      const problem: RouterProblem = {
        status: 502,
        code: 'sandbox_unreachable',
        title: 'The sandbox did not answer',
        message: `${what} of sandbox ${host.id} did not answer (${(error as NodeJS.ErrnoException).code ?? error.message}). It may have crashed: see GET /sandboxes/${host.id}/logs.`,
      };
      send(
        res,
        req.method === 'HEAD',
        problemAnswer(problem, prefersHtml(req.headers.accept, host.twin ? 'twin' : 'app')),
        requestId,
      );
    });
  }

  function proxyWebSocket(
    req: IncomingMessage,
    socket: Socket,
    head: Buffer,
    host: SandboxHost,
    state?: SandboxState,
  ): void {
    const decision = decide(host, state);
    if (!('socketPath' in decision)) {
      const html = prefersHtml(req.headers.accept, host.twin ? 'twin' : 'app');
      return refuseUpgrade(socket, problemAnswer(decision.problem, html, decision.page));
    }
    const requestId = randomUUID();
    forwardRequestHeaders(req.headers, {
      requestId,
      remoteAddress: socket.remoteAddress,
      encrypted: socket instanceof TLSSocket,
      upgrade: true,
      isTwinboxCredential,
    });
    tunnels.add(socket);
    socket.once('close', () => tunnels.delete(socket));
    proxy.ws(req, socket, head, { target: backend(decision.socketPath) }, (error) => {
      logger.warn(
        { err: error, sandbox_id: host.id, twin: host.twin, request_id: requestId },
        'router: WebSocket backend did not answer',
      );
      socket.destroy();
    });
  }

  // Sandboxes held by other processes: proxied as they are (Host kept, response streamed untouched); the
  // runner's router does the rest (credentials out, request id, timeline).
  const remoteAgent = new Agent({ keepAlive: true, timeout: 60_000, scheduling: 'lifo' });
  const remoteProxy = new ProxyServer({ xfwd: true });
  remoteProxy.on('error', (error, _req, target) => {
    logger.debug({ err: error }, 'router: connection error to a runner');
    if (!(target instanceof ServerResponse)) target.destroy();
  });

  /** Should this request be looked up elsewhere? Only when this process has no pod for it. */
  function elsewhere(req: IncomingMessage, host: SandboxHost): boolean {
    if (!options.remote || req.headers[FORWARDED_HEADER] !== undefined) return false;
    const target: RouteTarget = host.twin ? { kind: 'twin', name: host.twin } : { kind: 'app' };
    return endpoints.socketFor(host.id, target) === undefined;
  }

  function lookupFailed(host: SandboxHost, error: unknown): RouterProblem {
    logger.warn({ err: error, sandbox_id: host.id }, 'router: could not find where the sandbox runs');
    return {
      status: 503,
      code: 'sandbox_lookup_failed',
      title: 'Try again',
      message: `Could not find where sandbox ${host.id} runs just now. Try again in a few seconds.`,
      retryAfter: 2,
    };
  }

  function remoteWeb(req: IncomingMessage, res: ServerResponse, host: SandboxHost, expectContinue = false) {
    options.remote!.locate(host.id).then(
      (location) => {
        if ('state' in location) return proxyWeb(req, res, host, expectContinue, location.state);
        if (expectContinue) {
          res.writeContinue();
          delete req.headers.expect;
        }
        req.headers[FORWARDED_HEADER] = '1';
        const agent = location.runnerUrl.startsWith('http:') ? remoteAgent : undefined;
        remoteProxy.web(req, res, { target: location.runnerUrl, agent }, (error) => {
          logger.warn({ err: error, sandbox_id: host.id }, 'router: the runner did not answer');
          if (res.headersSent) return void res.destroy();
          send(
            res,
            req.method === 'HEAD',
            problemAnswer(
              {
                status: 502,
                code: 'sandbox_unreachable',
                title: 'The sandbox did not answer',
                message: `The runner holding sandbox ${host.id} did not answer (${(error as NodeJS.ErrnoException).code ?? error.message}).`,
              },
              prefersHtml(req.headers.accept, host.twin ? 'twin' : 'app'),
            ),
            randomUUID(),
          );
        });
      },
      (error: unknown) =>
        send(
          res,
          req.method === 'HEAD',
          problemAnswer(
            lookupFailed(host, error),
            prefersHtml(req.headers.accept, host.twin ? 'twin' : 'app'),
          ),
          randomUUID(),
        ),
    );
  }

  function remoteWebSocket(req: IncomingMessage, socket: Socket, head: Buffer, host: SandboxHost) {
    options.remote!.locate(host.id).then(
      (location) => {
        if ('state' in location) return proxyWebSocket(req, socket, head, host, location.state);
        req.headers[FORWARDED_HEADER] = '1';
        tunnels.add(socket);
        socket.once('close', () => tunnels.delete(socket));
        const agent = location.runnerUrl.startsWith('http:') ? remoteAgent : undefined;
        remoteProxy.ws(req, socket, head, { target: location.runnerUrl, agent }, (error) => {
          logger.warn({ err: error, sandbox_id: host.id }, 'router: the runner did not answer a WebSocket');
          socket.destroy();
        });
      },
      (error: unknown) => refuseUpgrade(socket, problemAnswer(lookupFailed(host, error), false)),
    );
  }

  // Take hapi's listeners out and put the dispatcher in front of them.
  const hapiRequest = listener.listeners('request') as RequestListener[];
  const hapiContinue = listener.listeners('checkContinue') as RequestListener[];
  const previousUpgrade = listener.listeners('upgrade') as UpgradeListener[];
  const toHapi = (listeners: RequestListener[]) => (req: IncomingMessage, res: ServerResponse) => {
    for (const handler of listeners) handler.call(listener, req, res);
  };
  const hapi = toHapi(hapiRequest);
  const hapiExpectContinue = toHapi(hapiContinue);

  const onRequest: RequestListener = (req, res) => {
    const host = parseSandboxHost(req.headers.host, domain);
    if (host && elsewhere(req, host)) remoteWeb(req, res, host);
    else if (host) proxyWeb(req, res, host);
    else hapi(req, res);
  };
  const onCheckContinue: RequestListener = (req, res) => {
    const host = parseSandboxHost(req.headers.host, domain);
    if (host && elsewhere(req, host)) remoteWeb(req, res, host, true);
    else if (host) proxyWeb(req, res, host, true);
    else hapiExpectContinue(req, res);
  };
  const onUpgrade: UpgradeListener = (req, socket, head) => {
    const host = parseSandboxHost(req.headers.host, domain);
    const webSocket = req.method === 'GET' && req.headers.upgrade?.toLowerCase() === 'websocket';
    if (host && webSocket && elsewhere(req, host)) return remoteWebSocket(req, socket, head, host);
    if (host && webSocket) return proxyWebSocket(req, socket, head, host);
    if (!host && previousUpgrade.length > 0) {
      for (const handler of previousUpgrade) handler.call(listener, req, socket, head);
      return;
    }
    // With an 'upgrade' listener, Node hands over every request that names an Upgrade (`curl --http2`
    // asks for h2c on plain HTTP). Such a request is served as the ordinary request it also is.
    serveAsPlainRequest(req, socket, head, host ? (q, s) => proxyWeb(q, s, host) : hapi);
  };

  listener.removeAllListeners('request');
  listener.removeAllListeners('checkContinue');
  listener.removeAllListeners('upgrade');
  listener.on('request', onRequest);
  listener.on('checkContinue', onCheckContinue);
  listener.on('upgrade', onUpgrade);

  let closed = false;
  return {
    async close() {
      if (closed) return;
      closed = true;
      listener.removeListener('request', onRequest);
      listener.removeListener('checkContinue', onCheckContinue);
      listener.removeListener('upgrade', onUpgrade);
      for (const handler of hapiRequest) listener.on('request', handler);
      for (const handler of hapiContinue) listener.on('checkContinue', handler);
      for (const handler of previousUpgrade) listener.on('upgrade', handler);
      for (const socket of tunnels) socket.destroy();
      tunnels.clear();
      // The proxy keeps its listeners: a tunnel socket may still report an error, which must not throw.
      remoteAgent.destroy();
      await upstream.close();
    },
  };
}

/**
 * A request target the upstream pool can send: a path (`/...`), or the absolute form a proxy may be sent.
 * `OPTIONS *` (the asterisk form) asks about the server itself, here Twinbox's router, not an app.
 */
function forwardableTarget(url: string | undefined): boolean {
  return url !== undefined && (url.startsWith('/') || /^https?:\/\//i.test(url));
}

function unforwardableTarget(url: string | undefined): RouterProblem {
  return {
    status: 400,
    code: 'unsupported_request_target',
    title: 'Not a request for a path',
    message: `The request target "${url ?? ''}" names no path of the sandbox: only requests for a path (/...) are passed on to an app or twin.`,
  };
}

/** A Unix socket target for a WebSocket handshake; host and port only name it in errors. */
function backend(socketPath: string) {
  return { socketPath, host: 'localhost', port: 80 };
}

function send(res: ServerResponse, head: boolean, reply: RouterAnswer, requestId: string): void {
  res.writeHead(reply.status, {
    ...reply.headers,
    'content-length': Buffer.byteLength(reply.body),
    [REQUEST_ID_HEADER]: requestId,
  });
  res.end(head ? undefined : reply.body);
}

/** An answer on a socket whose HTTP parser has let go of it (an upgrade we do not carry out). */
function refuseUpgrade(socket: Socket, reply: RouterAnswer): void {
  const headers = { ...reply.headers, 'content-length': Buffer.byteLength(reply.body), connection: 'close' };
  const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}`);
  socket.end(
    `HTTP/1.1 ${reply.status} ${STATUS_CODES[reply.status]}\r\n${lines.join('\r\n')}\r\n\r\n${reply.body}`,
  );
}

/**
 * Serves a request Node handed over as an upgrade through an ordinary response on its socket, then
 * closes the connection (Node's parser has let go of it). Only without a body: its bytes are no longer
 * parsed, so one could not be passed on.
 */
function serveAsPlainRequest(
  req: IncomingMessage,
  socket: Socket,
  head: Buffer,
  handle: RequestListener,
): void {
  const length = Number(req.headers['content-length'] ?? 0);
  if (req.headers['transfer-encoding'] !== undefined || length > 0 || head.length > 0) {
    const body = JSON.stringify({
      statusCode: 400,
      error: 'Bad Request',
      message: 'A request that asks for a protocol upgrade cannot carry a body here.',
      detail: 'A request that asks for a protocol upgrade cannot carry a body here.',
      code: 'upgrade_with_body',
    });
    return refuseUpgrade(socket, {
      status: 400,
      headers: { 'content-type': 'application/json; charset=utf-8' },
      body,
    });
  }
  // What Connection lists with it (HTTP2-Settings) goes when the request is forwarded.
  delete req.headers.upgrade;
  // The parser will never end this message: end it, so whoever reads the (empty) body finishes.
  req.push(null);
  const res = new ServerResponse(req);
  res.shouldKeepAlive = false;
  res.assignSocket(socket);
  res.once('finish', () => {
    res.detachSocket(socket);
    socket.end();
  });
  handle(req, res);
}
