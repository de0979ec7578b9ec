import t from 'tap';
import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { forwardRequestHeaders, twinboxCredentials } from '../../server/router/headers.ts';
import { UpstreamPools } from '../../server/router/upstream.ts';
import { tempDir } from '../helpers/twinbox.ts';
import { startBackend } from './helpers.ts';

/**
 * The router's upstream pools on their own: a front server forwarding every request to one backend socket
 * with `UpstreamPools`, as the router does once it has decided where a request goes.
 */
const dir = await tempDir(t, 'twinbox-upstream-');

async function front(pools: UpstreamPools, socketPath: string) {
  const failures: Array<{ error: Error; answered: boolean }> = [];
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    forwardRequestHeaders(req.headers, {
      requestId: 'request-1',
      remoteAddress: req.socket.remoteAddress,
      encrypted: false,
      upgrade: false,
      isTwinboxCredential: twinboxCredentials(),
    });
    pools.forward(socketPath, req, res, 'request-1', (error, answered) => {
      failures.push({ error, answered });
      res.destroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(
    () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))),
  );
  return { port: (server.address() as AddressInfo).port, failures };
}

function call(
  port: number,
  options: { method?: string; path?: string; headers?: Record<string, string>; body?: string[] } = {},
) {
  return new Promise<{ status: number; headers: IncomingMessage['headers']; body: string }>(
    (resolve, reject) => {
      const req = request(
        {
          port,
          host: '127.0.0.1',
          method: options.method ?? 'GET',
          path: options.path ?? '/',
          headers: options.headers,
          agent: false,
        },
        (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (body += chunk));
          res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
        },
      );
      req.on('error', reject);
      for (const chunk of options.body ?? []) req.write(chunk);
      req.end();
    },
  );
}

t.test('bodies of both framings arrive whole; answers keep their status, headers and body', async (t) => {
  const app = await startBackend(t, dir, 'echo', (req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      res.writeHead(201, {
        'content-type': 'text/plain',
        'set-cookie': ['a=1; Domain=localhost; Path=/', 'b=2'],
      });
      res.end(`${req.method} ${req.url} ${body}`);
    });
  });
  const pools = new UpstreamPools();
  t.teardown(() => pools.close());
  const { port, failures } = await front(pools, app.socketPath);

  const sized = await call(port, {
    method: 'POST',
    path: '/sized?x=1',
    headers: { 'content-length': '11' },
    body: ['hello', ' world'],
  });
  t.equal(sized.status, 201);
  t.equal(sized.body, 'POST /sized?x=1 hello world');
  t.same(sized.headers['set-cookie'], ['a=1; Path=/', 'b=2'], 'Domain taken out of every cookie');
  t.equal(sized.headers['x-twinbox-request-id'], 'request-1');

  const chunked = await call(port, { method: 'PUT', path: '/chunked', body: ['a', 'b', 'c'] });
  t.equal(chunked.body, 'PUT /chunked abc');
  // Framed again by the pool: chunked while it streams, or sized when it had all of it before sending.
  const framing = app.seen[1]!.headers;
  t.ok(
    framing['transfer-encoding'] === 'chunked' || framing['content-length'] === '3',
    `framed as it arrives: ${JSON.stringify(framing)}`,
  );

  const empty = await call(port, { method: 'DELETE', path: '/none' });
  t.equal(empty.body, 'DELETE /none ');
  t.same(failures, []);
});

t.test('one pool per backend, kept alive across requests, closed once idle for a sweep', async (t) => {
  const app = await startBackend(t, dir, 'idle', (_req, res) => res.end('ok'));
  const closed: Array<Promise<void>> = [];
  app.server.on('connection', (socket) =>
    closed.push(new Promise((resolve) => socket.once('close', () => resolve()))),
  );
  // The backend would keep its connections for a minute: only the sweep can close this one.
  app.server.keepAliveTimeout = 60_000;
  // Swept by hand below, not by the timer: a loaded machine may pause between any two requests.
  const pools = new UpstreamPools(3_600_000);
  t.teardown(() => pools.close());
  const { port } = await front(pools, app.socketPath);

  for (let i = 0; i < 20; i++) t.equal((await call(port)).body, 'ok');
  t.equal(app.connections(), 1, '20 sequential requests over one backend connection');

  pools.sweep();
  t.equal((await call(port)).body, 'ok', 'a pool used since the last sweep stays');
  t.equal(app.connections(), 1);
  // Unused for a whole sweep: the pool is closed, and with it its connection.
  pools.sweep();
  pools.sweep();
  await Promise.all(closed);
  t.pass('the idle pool closed its connection');
  t.equal((await call(port)).body, 'ok', 'a later request makes a new pool');
  t.equal(app.connections(), 2);
});

t.test('a backend that is not there: the caller is told, with no answer given', async (t) => {
  const pools = new UpstreamPools();
  t.teardown(() => pools.close());
  const { port, failures } = await front(pools, `${dir}/nobody.sock`);
  await t.rejects(call(port));
  t.equal(failures.length, 1);
  t.equal((failures[0]!.error as NodeJS.ErrnoException).code, 'ENOENT');
  t.equal(failures[0]!.answered, false);
});

t.test('a client that stops reading pauses the backend; nothing piles up in the router', async (t) => {
  const chunk = Buffer.alloc(64 * 1024, 'x');
  const total = 1024 * chunk.length; // 64 MiB, far above what the sockets between can hold
  let written = 0;
  let finished = false;
  const app = await startBackend(t, dir, 'stream', (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(total) });
    const more = () => {
      while (written < total) {
        written += chunk.length;
        if (!res.write(chunk)) return void res.once('drain', more);
      }
      finished = true;
      res.end();
    };
    more();
  });
  const pools = new UpstreamPools();
  t.teardown(() => pools.close());
  const { port } = await front(pools, app.socketPath);

  const received = await new Promise<number>((resolve, reject) => {
    const req = request({ port, host: '127.0.0.1', path: '/', agent: false }, (res) => {
      res.pause();
      // Until the backend stops making progress (or, without backpressure, finishes).
      let last = -1;
      let still = 0;
      const poll = setInterval(() => {
        still = written === last ? still + 1 : 0;
        last = written;
        if (still < 5 && !finished) return;
        clearInterval(poll);
        t.notOk(finished, 'the backend did not get to write everything');
        t.ok(written < total / 2, `the backend stalled after ${written} of ${total} bytes`);
        let length = 0;
        res.on('data', (data: Buffer) => (length += data.length));
        res.on('end', () => resolve(length));
        res.resume();
      }, 50);
    });
    req.on('error', reject);
    req.end();
  });
  t.equal(received, total, 'once the client reads again, all of it arrives');
  t.ok(finished);
});
