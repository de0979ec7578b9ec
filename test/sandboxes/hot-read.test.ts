// The hot read (server/sandboxes/hot-read.ts) answers GET /sandboxes/{id} in front of hapi. Its answers
// must be hapi's, byte for byte: each request here goes over a real socket twice, once with the hot read
// on and once with it off (hapi's own answer; server.inject would skip the listener altogether), and the
// two answers are compared. The hot read must also have served exactly where it should.
import t, { type Test } from 'tap';
import { connect } from 'node:net';
import { generateApiKey } from '../../server/auth/api-key-format.ts';
import type { Deployer } from '../../server/sandboxes/deployer.ts';
import { HOT_READ_PLUGIN } from '../../server/sandboxes/hot-read.ts';
import { freshSchema, postgresSkip } from '../helpers/postgres.ts';
import { call, createSandbox, createUser, startTestTwinbox, type TestTwinbox } from '../helpers/twinbox.ts';

/** Headers that differ between any two answers, whoever sends them. */
const VARYING_HEADERS = new Set(['date']);

interface RawAnswer {
  statusLine: string;
  /** In the order they were sent, names as sent. */
  headers: Array<[string, string]>;
  body: Buffer;
}

/**
 * Sends `head` (request line and headers, without the blank line) and `body` on a fresh connection and reads one
 * answer: by its content-length, its chunks, or none for HEAD.
 */
function send(port: number, head: string, isHead = false, body = ''): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    let data = Buffer.alloc(0);
    socket.on('error', reject);
    socket.on('data', (chunk: Buffer) => {
      data = Buffer.concat([data, chunk]);
      const end = data.indexOf('\r\n\r\n');
      if (end < 0) return;
      const [statusLine, ...lines] = data.subarray(0, end).toString('latin1').split('\r\n');
      const headers = lines.map((line): [string, string] => {
        const colon = line.indexOf(':');
        return [line.slice(0, colon), line.slice(colon + 1).trim()];
      });
      const rest = data.subarray(end + 4);
      const length = headers.find(([name]) => name.toLowerCase() === 'content-length')?.[1];
      const chunked = headers.some(
        ([name, value]) => name.toLowerCase() === 'transfer-encoding' && value === 'chunked',
      );
      let body: Buffer | undefined;
      if (isHead) body = Buffer.alloc(0);
      else if (length !== undefined && rest.length >= Number(length)) body = rest.subarray(0, Number(length));
      else if (chunked && rest.includes('\r\n0\r\n\r\n')) body = rest;
      if (body === undefined) return;
      socket.destroy();
      resolve({ statusLine: statusLine!, headers, body });
    });
    socket.write(`${head}\r\nHost: 127.0.0.1:${port}\r\n\r\n${body}`);
  });
}

interface Case {
  name: string;
  /** The request line and headers, Host excepted. */
  head: string;
  /** Whether the hot read answers it (else hapi does, both times). */
  hot: boolean;
  status: number;
  isHead?: boolean;
  body?: string;
}

async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (check()) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** The completion lines ("[response] ...") logged since line `from`. */
function completionLines(tb: TestTwinbox, from: number): Array<Record<string, unknown>> {
  return tb.logs.lines
    .slice(from)
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((entry) => typeof entry.msg === 'string' && entry.msg.startsWith('[response] '));
}

/**
 * Asks each case twice, hot read on then off, and compares the answers and their completion lines.
 * Answers the number of cases compared.
 */
async function compareAll(t: Test, tb: TestTwinbox, cases: Case[], secrets: string[]): Promise<number> {
  const control = tb.server.plugins[HOT_READ_PLUGIN].control;
  const port = Number(tb.server.info.port);
  const serverId = tb.server.info.id.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  let compared = 0;
  for (const c of cases) {
    const ask = async (enabled: boolean) => {
      control.enabled = enabled;
      const served = control.served;
      const lines = tb.logs.lines.length;
      const answer = await send(port, c.head, c.isHead, c.body);
      // The completion line is written once the answer has gone out, by either path.
      await until(() => completionLines(tb, lines).length > 0, `${c.name}: its completion line`);
      const [line, ...more] = completionLines(tb, lines);
      t.equal(more.length, 0, `${c.name}: one completion line`);
      return { answer, hot: control.served - served, line: line! };
    };
    const hot = await ask(true);
    const hapi = await ask(false);
    control.enabled = true;

    t.equal(hot.hot, c.hot ? 1 : 0, `${c.name}: ${c.hot ? 'served by the hot read' : 'left to hapi'}`);
    t.equal(hapi.hot, 0, `${c.name}: hot read off, hapi answered`);
    t.equal(hapi.answer.statusLine, `HTTP/1.1 ${c.status} ${statusText(c.status)}`, `${c.name}: status`);
    t.equal(hot.answer.statusLine, hapi.answer.statusLine, `${c.name}: same status line`);
    const comparable = (answer: RawAnswer) =>
      answer.headers.filter(([name]) => !VARYING_HEADERS.has(name.toLowerCase()));
    t.same(comparable(hot.answer), comparable(hapi.answer), `${c.name}: same headers, same order`);
    t.ok(hot.answer.body.equals(hapi.answer.body), `${c.name}: same body bytes`);

    // The same completion line but for its time, request id and duration; ids from hapi's one counter.
    const { time: _t1, req_id: idHot, responseTime: msHot, msg: msgHot, ...restHot } = hot.line;
    const { time: _t2, req_id: idHapi, responseTime: msHapi, msg: msgHapi, ...restHapi } = hapi.line;
    t.same(restHot, restHapi, `${c.name}: same completion line`);
    t.equal(msgHot, String(msgHapi).replace(/\(\d+ms\)$/, `(${msHot}ms)`), `${c.name}: same message`);
    t.equal(typeof msHapi, 'number');
    const idPattern = new RegExp(`^\\d+:${serverId}:(\\d+)$`);
    t.match(idHot, idPattern, `${c.name}: hapi's request id format`);
    t.match(idHapi, idPattern);
    t.equal(
      Number(idPattern.exec(String(idHapi))?.[1]),
      Number(idPattern.exec(String(idHot))?.[1]) + 1,
      `${c.name}: the next number of hapi's request counter`,
    );
    compared++;
  }
  for (const secret of secrets) t.notOk(tb.logs.text().includes(secret), 'no token in the log');
  return compared;
}

function statusText(status: number): string {
  return { 200: 'OK', 302: 'Found', 401: 'Unauthorized', 404: 'Not Found' }[status] ?? String(status);
}

/**
 * The lifecycle's seam (as in lifecycle.test.ts), so sandboxes really become `ready` through the
 * lifecycle: deploys at once, with connection details the size of a real sandbox's, except a sandbox of
 * branch `hold`, whose deploy lasts until it is aborted (with one deploy at a time, the next stays queued).
 */
const deployer: Deployer = {
  async deploy(sandbox, signal) {
    if (sandbox.branch === 'hold') {
      await new Promise((_resolve, reject) =>
        signal.addEventListener('abort', () => reject(new Error('aborted'))),
      );
    }
    const twin = (name: string) => ({
      base_url: `http://${sandbox.id}--${name}.sandbox.localhost:3000`,
      admin_url: `http://${sandbox.id}--${name}.sandbox.localhost:3000/_twin`,
      env_vars: { [`${name.toUpperCase()}_API_URL`]: `http://${sandbox.id}--${name}.sandbox.localhost:3000` },
    });
    const twins = { github: twin('github'), stripe: twin('stripe'), slack: twin('slack') };
    return {
      app_url: `http://${sandbox.id}.sandbox.localhost:3000`,
      twins,
      env_vars: Object.assign({}, ...Object.values(twins).map((entry) => entry.env_vars)),
      isolation: 'none',
    };
  },
  async teardown() {},
};

/** The sandbox once its status is `status` (the lifecycle works in the background). */
async function statusOf(tb: TestTwinbox, token: string, id: string, status: string) {
  for (let i = 0; i < 400; i++) {
    const view = (await call(tb, { url: `/sandboxes/${id}`, token })).body;
    if (view.status === status) return view;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`sandbox ${id} never became ${status}`);
}

async function equivalence(t: Test, env: Record<string, string>) {
  const tb = await startTestTwinbox(t, { TWINBOX_DEPLOY_CONCURRENCY: '1', ...env }, { deployer });
  await tb.server.start();
  const alice = await createUser(tb);
  const bob = await createUser(tb);
  const session = await tb.sessions.issue(alice.id);
  const revoked = await tb.apiKeys.issue(alice.id);
  t.equal(await tb.apiKeys.revoke(alice.id, revoked.record.id), true);

  const create = async (branch = 'main') =>
    (await createSandbox(tb, alice.key, { repo: 'a/b', branch })).body.sandbox_id as string;
  const ready = await create();
  const readyView = await statusOf(tb, alice.key, ready, 'ready');
  t.ok(JSON.stringify(readyView).length >= 1024, 'a ready body is one hapi compresses when asked');
  const deleted = await create();
  await statusOf(tb, alice.key, deleted, 'ready');
  t.equal((await call(tb, { method: 'DELETE', url: `/sandboxes/${deleted}`, token: alice.key })).status, 200);
  const building = await create('hold');
  await statusOf(tb, alice.key, building, 'building');
  const queued = await create();
  await new Promise((resolve) => setTimeout(resolve, 50));
  await statusOf(tb, alice.key, queued, 'queued');

  const get = (path: string, ...headers: string[]) => [`GET ${path} HTTP/1.1`, ...headers].join('\r\n');
  const key = `Authorization: Bearer ${alice.key}`;
  const cases: Case[] = [
    { name: 'queued sandbox, API key', head: get(`/sandboxes/${queued}`, key), hot: true, status: 200 },
    { name: 'building sandbox, API key', head: get(`/sandboxes/${building}`, key), hot: true, status: 200 },
    { name: 'ready sandbox, API key', head: get(`/sandboxes/${ready}`, key), hot: true, status: 200 },
    {
      name: 'ready sandbox, JWT session',
      head: get(`/sandboxes/${ready}`, `Authorization: Bearer ${session}`),
      hot: true,
      status: 200,
    },
    {
      name: 'ready sandbox, gzip accepted: hapi compresses it',
      head: get(`/sandboxes/${ready}`, key, 'Accept-Encoding: gzip'),
      hot: false,
      status: 200,
    },
    {
      name: 'deleted sandbox, lower-case scheme and extra spaces',
      head: get(`/sandboxes/${deleted}`, `authorization: bearer   ${alice.key} `),
      hot: true,
      status: 200,
    },
    {
      name: 'small body with Accept-Encoding (not compressed by hapi either)',
      head: get(`/sandboxes/${queued}`, key, 'Accept-Encoding: gzip, deflate'),
      hot: true,
      status: 200,
    },
    {
      name: "another account's sandbox",
      head: get(`/sandboxes/${ready}`, `Authorization: Bearer ${bob.key}`),
      hot: false,
      status: 404,
    },
    {
      name: 'revoked key',
      head: get(`/sandboxes/${ready}`, `Authorization: Bearer ${revoked.key}`),
      hot: false,
      status: 401,
    },
    {
      name: 'unknown key',
      head: get(`/sandboxes/${ready}`, `Authorization: Bearer ${generateApiKey()}`),
      hot: false,
      status: 401,
    },
    {
      name: 'garbage token',
      head: get(`/sandboxes/${ready}`, 'Authorization: Bearer not-a-token'),
      hot: false,
      status: 401,
    },
    { name: 'no Authorization', head: get(`/sandboxes/${ready}`), hot: false, status: 401 },
    {
      name: 'Basic scheme',
      head: get(`/sandboxes/${ready}`, 'Authorization: Basic dXNlcjpwYXNz'),
      hot: false,
      status: 401,
    },
    {
      name: 'two tokens',
      head: get(`/sandboxes/${ready}`, `Authorization: Bearer ${alice.key} extra`),
      hot: false,
      status: 401,
    },
    {
      name: 'empty Authorization',
      head: get(`/sandboxes/${ready}`, 'Authorization: '),
      hot: false,
      status: 401,
    },
    {
      name: 'a browser without a token: redirected to the dashboard',
      head: get(`/sandboxes/${ready}`, 'Accept: text/html'),
      hot: false,
      status: 302,
    },
    { name: 'not an id', head: get('/sandboxes/nope', key), hot: false, status: 404 },
    {
      name: 'a UUID of no sandbox',
      head: get('/sandboxes/6f1c2b9e-4c8e-4b0a-9d7e-2f3a4b5c6d7e', key),
      hot: false,
      status: 404,
    },
    { name: 'upper-case id', head: get(`/sandboxes/${ready.toUpperCase()}`, key), hot: false, status: 404 },
    {
      name: 'HEAD',
      head: `HEAD /sandboxes/${ready} HTTP/1.1\r\n${key}`,
      hot: false,
      status: 200,
      isHead: true,
    },
    { name: 'a query string', head: get(`/sandboxes/${ready}?verbose=1`, key), hot: false, status: 200 },
    { name: 'an empty query string', head: get(`/sandboxes/${ready}?`, key), hot: false, status: 200 },
    { name: 'a trailing slash', head: get(`/sandboxes/${ready}/`, key), hot: false, status: 200 },
    {
      name: 'a cookie',
      head: get(`/sandboxes/${ready}`, key, 'Cookie: twinbox_session=stale'),
      hot: false,
      status: 200,
    },
    {
      name: 'a body',
      head: get(`/sandboxes/${ready}`, key, 'Content-Type: application/json', 'Content-Length: 2'),
      body: '{}',
      hot: false,
      status: 200,
    },
  ];
  const compared = await compareAll(t, tb, cases, [alice.key, bob.key, session, revoked.key]);
  t.equal(compared, cases.length, 'every case compared');
  const served = cases.filter((c) => c.hot).length;
  t.ok(served >= 4 && served < cases.length, 'both paths are exercised');
}

t.test('the hot read answers as hapi does, on the embedded store', async (t) => {
  await equivalence(t, {});
});

t.test('the hot read answers as hapi does, on PostgreSQL', { skip: await postgresSkip() }, async (t) => {
  await equivalence(t, { TWINBOX_DATABASE_URL: (await freshSchema()).url });
});

t.test('with info off, the hot read still serves and logs no completion line', async (t) => {
  const tb = await startTestTwinbox(t, { LOG_LEVEL: 'warn' });
  await tb.server.start();
  const user = await createUser(tb);
  const id = (await createSandbox(tb, user.key)).body.sandbox_id as string;
  const control = tb.server.plugins[HOT_READ_PLUGIN].control;
  const before = control.served;
  const answer = await send(
    Number(tb.server.info.port),
    `GET /sandboxes/${id} HTTP/1.1\r\nAuthorization: Bearer ${user.key}`,
  );
  t.equal(answer.statusLine, 'HTTP/1.1 200 OK');
  t.equal(JSON.parse(answer.body.toString()).sandbox_id, id);
  t.equal(control.served - before, 1, 'served by the hot read');
  t.equal(tb.logs.lines.filter((line) => line.includes('[response]')).length, 0, 'no completion line');
});
