import t, { type Test } from 'tap';
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { request } from 'node:http';
import { promisify } from 'node:util';
import { WebSocket, WebSocketServer } from 'ws';
import { attachRouter, sandboxHosts } from '../../server/router/index.ts';
import { createUser, startTestTwinbox, tempDir } from '../helpers/twinbox.ts';
import { EndpointTable, fetchVia, loopback, startBackend } from './helpers.ts';
import { missingPart } from '../helpers/ci.ts';

const ADMIN = 'admin-token-of-the-operator-0123456789abcdef';

// One Twinbox (the real server, its routes and plugins) with the router in front, for every test.
const dir = await tempDir(t, 'twinbox-router-');
const twinbox = await startTestTwinbox(t, { TWINBOX_ADMIN_TOKEN: ADMIN });
const table = new EndpointTable();
const router = attachRouter(twinbox.server, {
  domain: 'localhost',
  endpoints: table,
  logger: twinbox.logger,
  adminToken: ADMIN,
});
t.teardown(() => router.close());
await twinbox.server.start();
const port = Number(twinbox.server.info.port);
const hosts = sandboxHosts('localhost', new URL(`http://localhost:${port}`));

let names = 0;
/** A live sandbox whose app answers with `handler`, and its id. */
async function liveApp(t: Test, handler: Parameters<typeof startBackend>[3]) {
  const id = randomUUID();
  const app = await startBackend(t, dir, `app-${++names}`, handler);
  table.live(id, { app: app.socketPath });
  return { id, app, url: hosts.appUrl(id) };
}

t.test(
  'the app host reaches the app socket, the twin host the twin socket, with path and query',
  async (t) => {
    const id = randomUUID();
    const app = await startBackend(t, dir, `app-${++names}`, (req, res) => res.end(`app ${req.url}`));
    const github = await startBackend(t, dir, `twin-${++names}`, (req, res) => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ twin: 'github', url: req.url }));
    });
    table.live(id, { app: app.socketPath, twins: { github: github.socketPath } });

    t.equal(hosts.appUrl(id), `http://${id}.localhost:${port}`);
    const fromApp = await fetchVia(`${hosts.appUrl(id)}/hello?x=1&y=2`);
    t.equal(fromApp.status, 200);
    t.equal(fromApp.body, 'app /hello?x=1&y=2');
    t.match(fromApp.headers['x-twinbox-request-id'], /^[0-9a-f-]{36}$/);

    const fromTwin = await fetchVia(`${hosts.twinUrl(id, 'github')}/_twinbox/state`);
    t.same(JSON.parse(fromTwin.body), { twin: 'github', url: '/_twinbox/state' });
    t.equal(app.seen.length, 1, 'the app saw only its own request');
    t.equal(github.seen.length, 1);

    const seen = app.seen[0]!.headers;
    t.equal(seen.host, `${id}.localhost:${port}`, 'the app sees the host it is reached at');
    t.equal(
      seen['x-twinbox-request-id'],
      fromApp.headers['x-twinbox-request-id'],
      'one request id both ways',
    );
    t.equal(seen['x-forwarded-for'], '127.0.0.1');
    t.equal(seen['x-forwarded-proto'], 'http');
    t.equal(seen['x-forwarded-host'], `${id}.localhost:${port}`);
  },
);

t.test(
  'request bodies and methods pass through; Expect: 100-continue is answered',
  { timeout: 10_000 },
  async (t) => {
    const { url } = await liveApp(t, (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => res.end(`${req.method} ${Buffer.concat(chunks).toString()}`));
    });
    const posted = await fetchVia(`${url}/items`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"a":1}',
    });
    t.equal(posted.body, 'POST {"a":1}');
    // The client sends the body only after the 100 Continue: without the router's, this would hang.
    const expecting = await new Promise<string>((resolve, reject) => {
      const req = request(
        `${url}/items`,
        {
          method: 'PUT',
          headers: { expect: '100-continue', 'content-length': '5' },
          lookup: loopback,
          agent: false,
        },
        (res) => {
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (body += chunk));
          res.on('end', () => resolve(body));
        },
      );
      req.on('continue', () => req.end('hello'));
      req.on('error', reject);
    });
    t.equal(expecting, 'PUT hello');
  },
);

t.test('the API host and any other host still reach hapi', async (t) => {
  for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `api.example.com`, `${randomUUID()}.other`]) {
    const reply = await fetchVia(`http://127.0.0.1:${port}/healthz`, { headers: { host } });
    t.equal(reply.status, 200, host);
    t.match(JSON.parse(reply.body), { status: 'ok' }, host);
  }
  const missing = await fetchVia(`http://127.0.0.1:${port}/nope`);
  t.equal(missing.status, 404);
  t.match(JSON.parse(missing.body), { detail: String }, "hapi's own 404, with detail");
});

t.test('a request that also asks for h2c is served as the plain request it is', async (t) => {
  const h2c = {
    connection: 'Upgrade, HTTP2-Settings',
    upgrade: 'h2c',
    'http2-settings': 'AAMAAABkAAQCAAAAAAIAAAAA',
  };
  const api = await fetchVia(`http://127.0.0.1:${port}/healthz`, { headers: h2c });
  t.equal(api.status, 200, 'hapi answers');
  const { url, app } = await liveApp(t, (_req, res) => res.end('plain'));
  const proxied = await fetchVia(`${url}/`, { headers: h2c });
  t.equal(proxied.body, 'plain', 'the app answers');
  t.notOk(app.seen[0]!.headers.upgrade, 'without the Upgrade it did not ask for');
  t.notOk(app.seen[0]!.headers['http2-settings'], 'nor what Connection listed');
});

t.test('unknown, starting, failed and unreachable sandboxes: clear answers with detail', async (t) => {
  const unknown = randomUUID();
  const asJson = { accept: 'application/json' };
  const notFound = await fetchVia(`${hosts.appUrl(unknown)}/`, { headers: asJson });
  t.equal(notFound.status, 404);
  t.match(JSON.parse(notFound.body), {
    statusCode: 404,
    error: 'Not Found',
    code: 'sandbox_not_found',
    detail: `There is no sandbox ${unknown} here: it never existed, or it ended long ago.`,
  });
  const notFoundPage = await fetchVia(`${hosts.appUrl(unknown)}/`, { headers: { accept: 'text/html' } });
  t.match(notFoundPage.headers['content-type'], /text\/html/);
  t.match(notFoundPage.body, `There is no sandbox ${unknown} here`);
  const twinDefault = await fetchVia(`${hosts.twinUrl(unknown, 'stripe')}/v1/customers`);
  t.match(twinDefault.headers['content-type'], /json/, 'a twin host answers JSON by default');

  const starting = randomUUID();
  table.live(starting, {}, ['github']);
  const notYet = await fetchVia(`${hosts.appUrl(starting)}/`);
  t.equal(notYet.status, 503);
  t.equal(notYet.headers['retry-after'], '2');
  t.match(notYet.body, '<meta http-equiv="refresh" content="2">', 'the page refreshes itself');
  t.match(notYet.body, 'is not running yet');
  t.equal((await fetchVia(`${hosts.twinUrl(starting, 'github')}/`)).status, 503, 'twin not started yet');
  const noTwin = await fetchVia(`${hosts.twinUrl(starting, 'slack')}/`);
  t.equal(noTwin.status, 404);
  t.match(JSON.parse(noTwin.body), {
    code: 'twin_not_found',
    detail: /has no twin "slack"; its twins: github/,
  });

  const failed = randomUUID();
  table.states.set(failed, { state: 'failed', error: 'Build failed: `npm run build` exited with code 1' });
  const broken = await fetchVia(`${hosts.appUrl(failed)}/`, { headers: asJson });
  t.equal(broken.status, 502);
  t.match(JSON.parse(broken.body), {
    code: 'sandbox_failed',
    detail: /Build failed: `npm run build`.*\/logs/,
  });

  const gone = randomUUID();
  table.live(gone, { app: `${dir}/never-listened.sock` });
  const unreachable = await fetchVia(`${hosts.appUrl(gone)}/`, { headers: asJson });
  t.equal(unreachable.status, 502);
  t.match(JSON.parse(unreachable.body), { code: 'sandbox_unreachable', detail: /did not answer \(ENOENT\)/ });
});

t.test('an ended sandbox answers 410 with the "expired / deleted" page', async (t) => {
  const id = randomUUID();
  table.states.set(id, {
    state: 'ended',
    sandbox: {
      id,
      repo: 'acme/shop',
      status: 'expired',
      branch: 'feature/<b>x</b>',
      pr_url: null,
      ended_at: '2026-11-23T10:00:00.000Z',
      updated_at: '2026-11-23T10:00:00.000Z',
    },
  });
  const page = await fetchVia(`${hosts.appUrl(id)}/anything`);
  t.equal(page.status, 410);
  t.match(page.headers['content-type'], /text\/html/);
  t.equal(page.headers['cache-control'], 'no-store');
  t.match(page.headers['content-security-policy'], /default-src 'none'/);
  t.match(page.body, '<h1>This sandbox expired</h1>');
  t.match(page.body, `<code>${id}</code> of <code>acme/shop</code> (branch feature/&lt;b&gt;x&lt;/b&gt;)`);
  t.match(page.body, 'expired at 2026-11-23T10:00:00.000Z');

  const json = await fetchVia(`${hosts.twinUrl(id, 'github')}/user`);
  t.equal(json.status, 410, 'its twins too');
  t.match(JSON.parse(json.body), {
    statusCode: 410,
    error: 'Gone',
    code: 'sandbox_expired',
    detail: /expired at/,
  });

  const head = await fetchVia(`${hosts.appUrl(id)}/`, { method: 'HEAD' });
  t.equal(head.status, 410);
  t.equal(head.body, '');
});

t.test('Set-Cookie comes back without Domain; the app keeps its own cookies', async (t) => {
  const { url } = await liveApp(t, (_req, res) => {
    res.setHeader('set-cookie', [
      'sid=abc; Domain=localhost; Path=/; HttpOnly',
      'theme=dark; path=/; domain=.localhost; SameSite=Lax; Domain=evil.example',
      'plain=1; Path=/',
      'tricky=domain; Max-Age=60; Domainx=1',
    ]);
    res.end('ok');
  });
  const reply = await fetchVia(`${url}/`);
  t.same(reply.headers['set-cookie'], [
    'sid=abc; Path=/; HttpOnly',
    'theme=dark; path=/; SameSite=Lax',
    'plain=1; Path=/',
    'tricky=domain; Max-Age=60; Domainx=1',
  ]);
});

t.test("Twinbox's cookies and credentials never reach the app; the app's own do", async (t) => {
  const { url, app } = await liveApp(t, (_req, res) => res.end('ok'));
  const user = await createUser(twinbox);
  const session = await twinbox.sessions.issue(user.id);
  const send = (headers: Record<string, string>) => fetchVia(`${url}/`, { headers });

  await send({
    cookie: `cart=3; twinbox_session=${session}; twinbox_oauth=state; lang=en`,
    authorization: `Bearer ${user.key}`,
  });
  await send({ cookie: `twinbox_session=${session}`, authorization: `Bearer ${session}` });
  await send({ authorization: `bearer ${ADMIN}` });
  await send({ cookie: 'cart=3', authorization: 'Bearer app-own-token.abc' });
  await send({ authorization: 'Basic dXNlcjpwYXNz' });
  await send({ authorization: `Bearer twinadm_${'x'.repeat(32)}` });

  const seen = app.seen.map((request) => ({
    cookie: request.headers.cookie,
    auth: request.headers.authorization,
  }));
  t.same(seen, [
    { cookie: 'cart=3; lang=en', auth: undefined },
    { cookie: undefined, auth: undefined },
    { cookie: undefined, auth: undefined },
    { cookie: 'cart=3', auth: 'Bearer app-own-token.abc' },
    { cookie: undefined, auth: 'Basic dXNlcjpwYXNz' },
    { cookie: undefined, auth: `Bearer twinadm_${'x'.repeat(32)}` },
  ]);
  t.notOk(JSON.stringify(app.seen).includes(session), 'the session token nowhere');
  t.notOk(JSON.stringify(app.seen).includes(user.key), 'the API key nowhere');
});

t.test('hop-by-hop headers stay on their hop; a spoofed request id is replaced', async (t) => {
  const { url, app } = await liveApp(t, (_req, res) => {
    res.setHeader('connection', 'x-backend-hop');
    res.setHeader('x-backend-hop', '1');
    res.setHeader('x-app', '1');
    res.end('ok');
  });
  const reply = await fetchVia(`${url}/`, {
    headers: {
      connection: 'keep-alive, x-secret-hop, host',
      'x-secret-hop': '1',
      'proxy-authorization': 'Basic eDp5',
      'x-twinbox-request-id': 'spoofed',
      'x-forwarded-for': '203.0.113.7',
    },
  });
  const seen = app.seen[0]!.headers;
  t.notOk(seen['x-secret-hop'], 'what Connection names is not forwarded');
  t.notOk(seen['proxy-authorization']);
  t.ok(seen.host, 'but Host is never dropped');
  t.not(seen['x-twinbox-request-id'], 'spoofed');
  t.equal(seen['x-forwarded-for'], '203.0.113.7, 127.0.0.1');
  t.equal(reply.headers['x-app'], '1');
  t.notOk(reply.headers['x-backend-hop'], "what the backend's Connection names stays on its hop");
});

t.test('server-sent events arrive one by one, not buffered', { timeout: 10_000 }, async (t) => {
  let second!: () => void;
  const secondSent = new Promise<void>((resolve) => (second = resolve));
  const { url } = await liveApp(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.write('data: one\n\n');
    void secondSent.then(() => res.end('data: two\n\n'));
  });
  const chunks: string[] = [];
  await new Promise<void>((resolve, reject) => {
    const req = request(`${url}/events`, { lookup: loopback, agent: false }, (res) => {
      t.equal(res.headers['content-type'], 'text/event-stream');
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        chunks.push(chunk);
        // The first event is here while the backend has not sent the second: nothing waits for the end.
        if (chunks.length === 1) second();
      });
      res.on('end', resolve);
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
  t.same(chunks, ['data: one\n\n', 'data: two\n\n']);
});

t.test(
  'a backend that dies mid-response, or a client that leaves mid-stream: both sides are closed',
  { timeout: 10_000 },
  async (t) => {
    const { url } = await liveApp(t, (req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('partial');
      if (req.url === '/die') setTimeout(() => res.socket?.destroy(), 20);
    });
    const outcome = await new Promise<string>((resolve) => {
      const req = request(`${url}/die`, { lookup: loopback, agent: false }, (res) => {
        res.on('data', () => {});
        res.on('end', () => resolve(res.complete ? 'complete' : 'incomplete'));
        res.on('error', () => resolve('error'));
        res.on('aborted', () => resolve('aborted'));
      });
      req.on('error', () => resolve('error'));
      req.end();
    });
    t.not(outcome, 'complete', `the client learns the response was cut (${outcome})`);

    let backendSawClose!: () => void;
    const closed = new Promise<void>((resolve) => (backendSawClose = resolve));
    const { url: streamUrl } = await liveApp(t, (req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: hello\n\n');
      res.on('close', () => backendSawClose());
    });
    const req = request(`${streamUrl}/events`, { lookup: loopback, agent: false }, (res) => {
      res.once('data', () => req.destroy());
    });
    req.on('error', () => {});
    req.end();
    await closed;
    t.pass('the app saw the stream closed when the client left');
  },
);

t.test('WebSocket echo through the router', async (t) => {
  const { id, app } = await liveApp(t, (_req, res) => res.end('http'));
  const wss = new WebSocketServer({ server: app.server });
  const handshakes: Array<Record<string, unknown>> = [];
  wss.on('connection', (socket, req) => {
    handshakes.push({ ...req.headers });
    socket.on('message', (data, binary) => socket.send(binary ? data : `echo: ${String(data)}`));
  });
  t.teardown(() => wss.close());

  const ws = new WebSocket(`ws://${id}.localhost:${port}/socket`, {
    lookup: loopback,
    headers: { cookie: 'twinbox_session=secret; mine=1' },
  });
  const replies: string[] = [];
  await new Promise<void>((resolve, reject) => {
    ws.on('open', () => ws.send('hello'));
    ws.on('message', (data) => {
      replies.push(String(data));
      if (replies.length === 1) ws.send('again');
      else ws.close();
    });
    ws.on('close', () => resolve());
    ws.on('error', reject);
  });
  t.same(replies, ['echo: hello', 'echo: again']);
  t.equal(handshakes.length, 1);
  t.equal(handshakes[0]!.cookie, 'mine=1', "Twinbox's cookie is not in the handshake");
  t.match(handshakes[0]!['x-twinbox-request-id'], /^[0-9a-f-]{36}$/);

  // A WebSocket to a sandbox that is not there gets a plain answer, not a hang.
  const lost = new WebSocket(`ws://${randomUUID()}.localhost:${port}/`, { lookup: loopback });
  const refused = await new Promise<Error>((resolve) => lost.on('error', resolve));
  t.match(refused.message, 'Unexpected server response: 404');
});

t.test('keep-alive: many sequential requests share few backend connections', async (t) => {
  const { url, app } = await liveApp(t, (_req, res) => res.end('ok'));
  const bodies: string[] = [];
  // Each client request on a new connection: the pooling is the router's, not the client's.
  for (let i = 0; i < 50; i++) bodies.push((await fetchVia(`${url}/${i}`)).body);
  t.same(new Set(bodies), new Set(['ok']));
  t.equal(app.seen.length, 50);
  t.ok(app.connections() <= 2, `50 requests over ${app.connections()} backend connection(s)`);
});

const curlMissing = await promisify(execFile)('curl', ['--version']).then(
  () => undefined,
  () => 'curl is not installed (apt-get install curl)',
);
// curl resolves *.localhost to loopback itself, as Chromium does.
t.test('curl reaches http://<id>.localhost:<port>/ with no DNS setup', async (t) => {
  if (curlMissing) return missingPart(t, curlMissing);
  const { url } = await liveApp(t, (req, res) => res.end(`curl saw ${req.headers.host}`));
  const { stdout } = await promisify(execFile)('curl', ['-s', `${url}/`]);
  t.equal(stdout, `curl saw ${new URL(url).host}`);
});

t.test('close gives the listener back to hapi alone', async (t) => {
  const other = await startTestTwinbox(t);
  const second = attachRouter(other.server, { domain: 'localhost', endpoints: table, logger: other.logger });
  await other.server.start();
  const otherPort = Number(other.server.info.port);
  const { id } = await liveApp(t, (_req, res) => res.end('app'));
  const url = `http://${id}.localhost:${otherPort}/healthz`;
  t.equal((await fetchVia(url)).body, 'app');
  await second.close();
  t.equal((await fetchVia(url)).status, 200, 'hapi answers that host now');
  t.match(JSON.parse((await fetchVia(url)).body), { status: 'ok' });
});
