import t from 'tap';
import { randomUUID } from 'node:crypto';
import { request } from 'node:http';
import { connect } from 'node:net';
import { join } from 'node:path';
import { attachRouter, sandboxHosts } from '../../server/router/index.ts';
import { TwinHost } from '../../server/twins/runtime/host.ts';
import { startTestTwinbox, tempDir } from '../helpers/twinbox.ts';
import { EndpointTable, fetchVia, loopback, startBackend } from './helpers.ts';
import { twinFactories } from '../../server/twins/registry.ts';
import { postBody } from '../helpers/upload.ts';

/**
 * Issue 20, part 4, at the router: a backend's refusal reaches the client as the backend's own status
 * (a twin's 413 used to come out as the router's 502, or a reset), and a sandbox being resumed answers
 * 503 with Retry-After, never 404. The same on a real sandbox: test/deploy/honest-edges.test.ts.
 */

const MiB = 1024 * 1024;
const ROUNDS = 20;

const dir = await tempDir(t, 'twinbox-edges-');
const twinbox = await startTestTwinbox(t);
const table = new EndpointTable();
const router = attachRouter(twinbox.server, {
  domain: 'localhost',
  endpoints: table,
  logger: twinbox.logger,
});
t.teardown(() => router.close());
await twinbox.server.start();
const port = Number(twinbox.server.info.port);
const hosts = sandboxHosts('localhost', new URL(`http://localhost:${port}`));

t.test("a twin's 413 through the router: 20 bodies of 2 MiB, with a length and chunked", async (t) => {
  const twinDir = await tempDir(t, 'twinbox-edges-twin-');
  const host = new TwinHost({
    factories: twinFactories,
    dataDir: twinDir,
    publicHost: '127.0.0.1',
    socketDir: twinDir,
    bodyLimitBytes: MiB,
  });
  t.teardown(() => host.close());
  const id = randomUUID();
  const stripe = (await host.start(id, ['stripe'], { adminToken: 'admin-token-of-the-edges-test' })).stripe!;
  const socketPath = join(twinDir, 'twin-stripe.sock');
  table.live(id, { twins: { stripe: socketPath } }, ['stripe']);
  const headers = {
    authorization: `Bearer ${stripe.env_vars.STRIPE_SECRET_KEY}`,
    'content-type': 'application/x-www-form-urlencoded',
  };
  const targets = [
    { name: 'router', target: `${hosts.twinUrl(id, 'stripe')}/v1/customers` },
    { name: 'socket', target: { socketPath, path: '/v1/customers' } },
  ];
  let rounds = 0;
  for (const { name, target } of targets)
    for (const chunked of [false, true])
      for (let round = 1; round <= ROUNDS; round++) {
        const what = `${name}, ${chunked ? 'chunked' : 'content-length'} #${round}`;
        const answer = await postBody(target, 2 * MiB, headers, chunked, {
          lookup: loopback,
          timeoutMs: 30_000,
        });
        t.equal(answer.status, 413, `${what}: 413`);
        t.match(
          JSON.parse(answer.body),
          { error: { type: 'invalid_request_error', message: /larger than 1048576 bytes/ } },
          `${what}: the twin's own body`,
        );
        rounds++;
      }
  t.equal(rounds, 4 * ROUNDS, 'every round ran');

  const made = await postBody(targets[0]!.target, 0, headers, false, { lookup: loopback, timeoutMs: 30_000 });
  t.equal(made.status, 200, 'the twin still serves afterwards');
});

t.test(
  'a backend that answers, then closes on the upload: the answer stands, the connection lives',
  async (t) => {
    const id = randomUUID();
    const backend = await startBackend(t, dir, 'refuses-and-closes', (req, res) => {
      res.writeHead(413, { 'content-type': 'text/plain' });
      res.end('too big, says the backend');
      res.once('finish', () => req.socket.destroy());
    });
    table.live(id, { app: backend.socketPath });
    const size = 2 * MiB;
    // Raw HTTP: a part of the body, then (once the answer is in) the rest and a second request on the same
    // connection. The router used to reset the connection, or stall on the rest of the body.
    const socket = connect(port, '127.0.0.1');
    t.teardown(() => socket.destroy());
    let received = '';
    const outcome = await new Promise<string>((resolve) => {
      let sentRest = false;
      const timer = setTimeout(
        () => resolve(`no second answer in 30 s: ${JSON.stringify(received)}`),
        30_000,
      );
      socket.on('data', (data: Buffer) => {
        received += data.toString('latin1');
        if (!sentRest && received.includes('too big, says the backend')) {
          sentRest = true;
          socket.write(Buffer.alloc(size - 64 * 1024, 'a'));
          socket.write(`GET /healthz HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\n\r\n`);
        }
        if (sentRest && /\r\n\r\n\{[^]*"status"/.test(received.split('too big, says the backend')[1] ?? '')) {
          clearTimeout(timer);
          resolve('answered');
        }
      });
      socket.on('error', () => {}); // reported by 'close', with what was received
      socket.on('close', () => {
        clearTimeout(timer);
        resolve(`closed: ${JSON.stringify(received.slice(-200))}`);
      });
      socket.write(`POST / HTTP/1.1\r\nhost: ${id}.localhost:${port}\r\ncontent-length: ${size}\r\n\r\n`);
      socket.write(Buffer.alloc(64 * 1024, 'a'));
    });
    t.match(received, /^HTTP\/1\.1 413 /, "the backend's own status");
    t.equal(outcome, 'answered', 'the rest of the body was taken and the next request answered');
    t.match(
      received.split('too big, says the backend')[1],
      /HTTP\/1\.1 200 OK[^]*\{"status":"ok"\}/,
      'by hapi, on the same connection',
    );
  },
);

t.test('a sandbox being resumed: 503 with Retry-After on its app and twins, never 404', async (t) => {
  const id = randomUUID();
  table.states.set(id, { state: 'resuming', twins: ['stripe'] });
  const app = await fetchVia(`${hosts.appUrl(id)}/`, { headers: { accept: 'application/json' } });
  t.equal(app.status, 503);
  t.equal(app.headers['retry-after'], '2');
  t.equal(app.headers['cache-control'], 'no-store');
  t.match(JSON.parse(app.body), {
    statusCode: 503,
    error: 'Service Unavailable',
    code: 'sandbox_resuming',
    detail: /coming back after a Twinbox restart/,
  });
  const page = await fetchVia(`${hosts.appUrl(id)}/`, { headers: { accept: 'text/html' } });
  t.equal(page.status, 503);
  t.match(page.body, /<meta http-equiv="refresh" content="2">/);
  t.match(page.body, /Coming back/);
  const twin = await fetchVia(`${hosts.twinUrl(id, 'stripe')}/v1/customers`);
  t.equal(twin.status, 503, 'its twin too');
  t.equal(JSON.parse(twin.body).code, 'sandbox_resuming');
  const missing = await fetchVia(`${hosts.twinUrl(id, 'slack')}/api/auth.test`);
  t.equal(missing.status, 404, 'a twin it does not have');
  t.equal(JSON.parse(missing.body).code, 'twin_not_found');
  // Not proxied even when a socket is known: a half-started pod is not served.
  const backend = await startBackend(t, dir, 'half-started', (_req, res) => res.end('too early'));
  table.sockets.set(id, backend.socketPath);
  t.equal((await fetchVia(`${hosts.appUrl(id)}/`)).status, 503, 'a socket does not make it servable');
  t.equal(backend.seen.length, 0, 'the app saw nothing');
  table.states.set(id, { state: 'live', twins: ['stripe'] });
  const live = await fetchVia(`${hosts.appUrl(id)}/`);
  t.equal(live.status, 200, 'live again: the app');
  t.equal(live.body, 'too early');
});

t.test('request targets: the asterisk form gets 400, the absolute form reaches the app', async (t) => {
  const id = randomUUID();
  const app = await startBackend(t, dir, 'targets', (req, res) => res.end(`app ${req.url}`));
  table.live(id, { app: app.socketPath });
  const host = `${id}.localhost:${port}`;
  const raw = (head: string) =>
    new Promise<string>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () => socket.write(head));
      let out = '';
      socket.on('data', (chunk: Buffer) => (out += chunk.toString('latin1')));
      socket.on('end', () => resolve(out));
      socket.on('error', reject);
    });

  const asterisk = await raw(
    `OPTIONS * HTTP/1.1\r\nHost: ${host}\r\nAccept: application/json\r\nConnection: close\r\n\r\n`,
  );
  t.match(asterisk, /^HTTP\/1\.1 400 /);
  const body = JSON.parse(asterisk.slice(asterisk.indexOf('\r\n\r\n') + 4)) as Record<string, unknown>;
  t.equal(body.code, 'unsupported_request_target');
  t.match(body.detail, 'only requests for a path');
  t.equal(app.seen.length, 0, 'the app saw nothing');

  const absolute = await raw(
    `GET http://${host}/abs?x=1 HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`,
  );
  t.match(absolute, /^HTTP\/1\.1 200 /);
  t.equal(app.seen.length, 1);
  t.match(absolute, /app (http:\/\/[^ ]+)?\/abs\?x=1/);
});
