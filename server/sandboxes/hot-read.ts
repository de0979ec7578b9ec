import type { Plugin, Server } from '@hapi/hapi';
import type { IncomingMessage, ServerResponse } from 'node:http';
import Joi from 'joi';
import type { Logger } from 'pino';
import { BEARER, BEARER_PATTERN, bearerCredentials, type BearerOptions } from '../auth/bearer.ts';
import type { SandboxService } from './service.ts';
import { toSandboxView } from './representation.ts';

/**
 * The hot read: `GET /sandboxes/{id}` answered on hapi's listener, in front of hapi.
 *
 * Why: the CLI and the GitHub Action poll this one read until a sandbox is ready, and hapi's lifecycle
 * for an authenticated, validated route (auth scheme, joi on the path, hapi-pino's child logger, the
 * onPreResponse extensions, marshalling) cost about 60 µs of CPU a request against 23 µs for a bare
 * hapi route answering the same bytes (docs/benchmarks.md, issue 24). Most of that is the lifecycle,
 * not our code, so no setting inside hapi brings it near a bare route; answering the read before hapi
 * does.
 *
 * What it serves: exactly `GET /sandboxes/<lower-case UUID>`, no query string, no body, no cookie,
 * `Authorization: Bearer <token>` that the bearer strategy accepts (the same bearerCredentials), for a
 * sandbox of that account (SandboxService.get), rendered by toSandboxView: hapi's status, headers and
 * body byte for byte (test/sandboxes/hot-read.test.ts compares them over a socket). Everything else goes
 * to hapi's own 'request' listener unchanged: every error (401, 404, a refused or unknown token, another
 * account's sandbox, a store failure), HEAD, a query, a trailing slash, a cookie, a body, and a body
 * hapi would compress. So every error text stays hapi's, and nothing is refused here.
 *
 * The completion line is the one hapi-pino writes (`[response] get <path> <status> (<ms>ms)`, its
 * `req_id` from hapi's own request counter), only when `info` is on; the token is never logged.
 */

/** Exactly the path of one sandbox: lower-case, as Twinbox makes ids (randomUUID). */
const SANDBOX_PATH = /^\/sandboxes\/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const SANDBOX_PATH_LENGTH = '/sandboxes/'.length + 36;
const PREFIX_LENGTH = '/sandboxes/'.length;
/** A path of the route, to ask hapi for its settings (response validation) and its auth strategy. */
const PROBE_PATH = '/sandboxes/00000000-0000-0000-0000-000000000000';

type RequestListener = (req: IncomingMessage, res: ServerResponse) => void;

/** Turns the hot read off or on, and counts what it answered (the equivalence test reads both). */
export interface HotReadControl {
  /** Off: every request goes to hapi. */
  enabled: boolean;
  /** Requests answered here rather than by hapi. */
  served: number;
}

export const HOT_READ_PLUGIN = 'twinbox-hot-read';

declare module '@hapi/hapi' {
  interface PluginProperties {
    [HOT_READ_PLUGIN]: { control: HotReadControl };
  }
}

/** The hot read was set up on a server it cannot mirror: a programming error, found at start. */
export class HotReadSetupError extends Error {
  constructor(message: string) {
    super(`The hot read of GET /sandboxes/{id} cannot be set up: ${message}`);
    this.name = 'HotReadSetupError';
  }
}

export interface HotReadOptions extends Pick<BearerOptions, 'store' | 'apiKeys' | 'sessions'> {
  sandboxes: SandboxService;
  logger: Logger;
}

/** hapi's request counter (its request ids are `<ms>:<server id>:<counter>`): not public API. */
interface HapiCore {
  _counter(): number;
}

/**
 * Registered after the sandbox routes and the bearer strategy, and before anything else takes the
 * listener's 'request' event (the sandbox router, which then puts itself in front of this).
 */
export const hotSandboxRead: Plugin<HotReadOptions> = {
  name: HOT_READ_PLUGIN,
  register(server, options) {
    const control: HotReadControl = { enabled: true, served: 0 };
    server.expose('control', control);
    const hapi = takeRequestListeners(server);
    const answer = hotReader(server, options, control);
    server.listener.on('request', (req: IncomingMessage, res: ServerResponse) => {
      if (control.enabled && servable(req, server)) answer(req, res, hapi);
      else hapi(req, res);
    });
  },
};

/** Takes hapi's own 'request' listeners off the listener; the function calls them as before. */
function takeRequestListeners(server: Server): RequestListener {
  const listener = server.listener;
  const listeners = listener.listeners('request') as RequestListener[];
  if (listeners.length === 0) throw new HotReadSetupError("the listener has no 'request' listener");
  listener.removeAllListeners('request');
  return (req, res) => {
    for (const handler of listeners) handler.call(listener, req, res);
  };
}

/**
 * What can be decided from the request line and headers alone. A request hapi would read a body or
 * cookies from, or answer differently for its method or query, is hapi's.
 */
function servable(req: IncomingMessage, server: Server): boolean {
  const url = req.url;
  if (req.method !== 'GET' || url === undefined || url.length !== SANDBOX_PATH_LENGTH) return false;
  if (!SANDBOX_PATH.test(url)) return false;
  const headers = req.headers;
  return (
    typeof headers.authorization === 'string' &&
    headers.cookie === undefined &&
    headers['content-length'] === undefined &&
    headers['transfer-encoding'] === undefined &&
    // Stopping or not started: hapi closes connections after their answer then; leave it all to hapi.
    server.info.started !== 0
  );
}

function hotReader(
  server: Server,
  options: HotReadOptions,
  control: HotReadControl,
): (req: IncomingMessage, res: ServerResponse, hapi: RequestListener) => void {
  const { sandboxes, logger } = options;
  const credentialsOf = bearerCredentials(options);
  const route = server.match('GET', PROBE_PATH);
  // The route's own auth settings, or the server's default where it names none.
  const auth = route?.settings.auth ?? server.auth.settings.default;
  const strategies = auth ? auth.strategies : undefined;
  if (!route || route.path !== '/sandboxes/{sandbox_id}' || strategies?.join() !== BEARER)
    throw new HotReadSetupError(`GET /sandboxes/{sandbox_id} is not a route of the ${BEARER} strategy`);
  // hapi checks the answer against the route's schema where response validation is on (tests): so does
  // the hot read, with the same schema, and an answer that fails it is left to hapi (its 500).
  const response = route.settings.response;
  const schema = response?.sample ? response.status?.[200] : undefined;
  if (response?.sample && !Joi.isSchema(schema))
    throw new HotReadSetupError('its 200 response is validated without a joi schema');
  const validation = schema as Joi.Schema | undefined;
  const validationOptions = response?.options ?? {};
  // hapi compresses a body of at least minBytes when asked to, and names accept-encoding in `vary`.
  const compression = server.settings.compression;
  const minBytes =
    typeof compression === 'object' ? (compression.minBytes ?? 1024) : compression ? 1024 : Infinity;
  const core = (server as unknown as { _core?: Partial<HapiCore> })._core;
  if (typeof core?._counter !== 'function')
    throw new HotReadSetupError("hapi's request counter (server._core._counter) is not there");
  const nextRequestNumber = () => (core as HapiCore)._counter();

  return (req, res, hapi) => {
    const received = Date.now();
    const token = BEARER_PATTERN.exec(req.headers.authorization!)?.[1];
    if (token === undefined) hapi(req, res);
    else void serve(req, res, hapi, token, received);
  };

  async function serve(
    req: IncomingMessage,
    res: ServerResponse,
    hapi: RequestListener,
    token: string,
    received: number,
  ): Promise<void> {
    let body: string;
    try {
      const { account } = await credentialsOf(token);
      const view = toSandboxView(await sandboxes.get(account, req.url!.slice(PREFIX_LENGTH)));
      if (validation?.validate(view, validationOptions).error) return hapi(req, res);
      body = JSON.stringify(view);
    } catch {
      // Refused, not found, or the store failed: hapi answers it, with its own error.
      return hapi(req, res);
    }
    const length = Buffer.byteLength(body);
    if (length >= minBytes && req.headers['accept-encoding'] !== undefined) return hapi(req, res);
    // The client went away while the store answered: nothing to send, nobody to send it to.
    if (res.destroyed) return;
    control.served++;
    if (logger.isLevelEnabled('info')) logCompletion(req, res, received, nextRequestNumber());
    // hapi's headers, in hapi's order (lib/headers.js, lib/transmit.js).
    res.setHeader('content-type', 'application/json; charset=utf-8');
    res.setHeader('cache-control', 'no-cache');
    res.setHeader('content-length', length);
    if (length >= minBytes) res.setHeader('vary', 'accept-encoding');
    res.writeHead(200);
    res.end(body);
  }

  /** hapi-pino's completion line (its message, `res` and `responseTime`), with hapi's request id. */
  function logCompletion(req: IncomingMessage, res: ServerResponse, received: number, n: number): void {
    const reqId = `${received}:${server.info.id}:${n}`;
    res.once('close', () => {
      const responseTime = Date.now() - received;
      logger.info(
        { req_id: reqId, res, responseTime },
        `[response] get ${req.url} ${res.headersSent ? res.statusCode : '-'} (${responseTime}ms)`,
      );
    });
  }
}
