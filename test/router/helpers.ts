import {
  createServer,
  request,
  type IncomingHttpHeaders,
  type RequestListener,
  type Server,
} from 'node:http';
import type { LookupFunction } from 'node:net';
import { join } from 'node:path';
import type { Test } from 'tap';
import type { RouteTarget, SandboxEndpoints, SandboxState } from '../../server/router/index.ts';

/**
 * Stand-in for what the runner knows: which sandboxes exist, in what state, and the Unix socket of
 * each app and twin.
 */
export class EndpointTable implements SandboxEndpoints {
  readonly states = new Map<string, SandboxState>();
  readonly sockets = new Map<string, string>();

  live(id: string, sockets: { app?: string; twins?: Record<string, string> }, twins?: string[]): void {
    this.states.set(id, { state: 'live', twins });
    if (sockets.app) this.sockets.set(id, sockets.app);
    for (const [name, path] of Object.entries(sockets.twins ?? {})) this.sockets.set(`${id}--${name}`, path);
  }

  socketFor(sandboxId: string, target: RouteTarget): string | undefined {
    return this.sockets.get(target.kind === 'app' ? sandboxId : `${sandboxId}--${target.name}`);
  }

  stateOf(sandboxId: string): SandboxState {
    return this.states.get(sandboxId) ?? { state: 'unknown' };
  }
}

export interface Backend {
  server: Server;
  socketPath: string;
  /** Every request's headers, in order. */
  seen: Array<{ method: string; url: string; headers: IncomingHttpHeaders }>;
  /** TCP-like connections the backend accepted (Unix socket connections). */
  connections(): number;
}

/** A real node:http server on a Unix socket in `dir`, standing in for a deployed app or twin. */
export async function startBackend(
  t: Test,
  dir: string,
  name: string,
  handler: RequestListener,
): Promise<Backend> {
  const socketPath = join(dir, `${name}.sock`);
  const seen: Backend['seen'] = [];
  let connections = 0;
  const server = createServer((req, res) => {
    seen.push({ method: req.method!, url: req.url!, headers: { ...req.headers } });
    handler(req, res);
  });
  server.on('connection', () => connections++);
  await new Promise<void>((resolve) => server.listen(socketPath, resolve));
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return { server, socketPath, seen, connections: () => connections };
}

/** Every name resolves to loopback, as curl and Chromium do for `*.localhost` (Node's dns does not). */
export const loopback: LookupFunction = (_hostname, options, callback) => {
  if (options.all)
    (callback as (e: null, a: Array<{ address: string; family: number }>) => void)(null, [
      { address: '127.0.0.1', family: 4 },
    ]);
  else callback(null, '127.0.0.1', 4);
};

export interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

/** One HTTP request over loopback to `url`, whose host name goes into the Host header as a browser would. */
export function fetchVia(
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: options.method ?? 'GET', headers: options.headers, lookup: loopback, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({
            status: res.statusCode!,
            headers: res.headers,
            body: Buffer.concat(chunks).toString('utf8'),
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}
