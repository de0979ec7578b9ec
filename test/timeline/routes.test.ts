import t, { type Test } from 'tap';
import { attachRouter, sandboxHosts } from '../../server/router/index.ts';
import { EndpointTable, fetchVia, startBackend } from '../router/helpers.ts';
import {
  call,
  createSandbox,
  createUser,
  startTestTwinbox,
  tempDir,
  type TestTwinbox,
  type TestUser,
} from '../helpers/twinbox.ts';

/** GET the timeline; fails the test on anything but 200. */
async function timeline(t: Test, tb: TestTwinbox, user: TestUser, id: string, query = '') {
  const res = await call(tb, { url: `/sandboxes/${id}/timeline${query}`, token: user.key });
  t.equal(res.status, 200, `GET timeline${query}: ${JSON.stringify(res.body).slice(0, 200)}`);
  return res.body as { entries: any[]; next_cursor: string; notes: string[] };
}

/** Polls with `cursor` until at least `count` new entries came, as a live page would. */
async function pollFor(t: Test, tb: TestTwinbox, user: TestUser, id: string, cursor: string, count = 1) {
  const entries: any[] = [];
  let next = cursor;
  for (let i = 0; i < 400 && entries.length < count; i++) {
    const page = await timeline(t, tb, user, id, next ? `?cursor=${next}` : '');
    entries.push(...page.entries);
    next = page.next_cursor;
    if (entries.length < count) await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return { entries, next_cursor: next };
}

t.test('pages in time order, a cursor continues after its last entry and polls for new ones', async (t) => {
  const tb = await startTestTwinbox(t);
  const user = await createUser(tb, 'pro');
  const { body: sandbox } = await createSandbox(tb, user.key, { repo: 'octo/shop', branch: 'main' });
  const id = sandbox.sandbox_id;
  for (const minutes of [10, 20, 30]) {
    const extended = await call(tb, {
      method: 'POST',
      url: `/sandboxes/${id}/extend`,
      token: user.key,
      payload: { minutes },
    });
    t.equal(extended.status, 200);
  }

  const all = await timeline(t, tb, user, id);
  t.same(
    all.entries.map((e) => [e.kind, e.source]),
    [
      ['status', 'twinbox'],
      ['extended', 'twinbox'],
      ['extended', 'twinbox'],
      ['extended', 'twinbox'],
    ],
  );
  t.equal(all.entries[0].summary, 'Created for octo/shop branch main');
  t.equal(all.entries[0].at, sandbox.created_at);
  t.match(all.entries[1].summary, /^Extended by 10 minutes: now expires at /);
  t.same(all.entries[3].detail.minutes, 30);
  t.same(all.notes, []);
  const times = all.entries.map((e) => Date.parse(e.at));
  t.same(
    times,
    [...times].sort((a, b) => a - b),
    'oldest first',
  );

  const first = await timeline(t, tb, user, id, '?limit=2');
  t.same(
    first.entries.map((e) => e.id),
    all.entries.slice(0, 2).map((e) => e.id),
  );
  const second = await timeline(t, tb, user, id, `?limit=2&cursor=${first.next_cursor}`);
  t.same(
    second.entries.map((e) => e.id),
    all.entries.slice(2, 4).map((e) => e.id),
    'the cursor continues after the last entry given',
  );
  const end = await timeline(t, tb, user, id, `?limit=2&cursor=${second.next_cursor}`);
  t.same(end.entries, [], 'nothing new yet');
  t.type(end.next_cursor, 'string', 'a cursor is given at the end too');

  const deleted = await call(tb, { method: 'DELETE', url: `/sandboxes/${id}`, token: user.key });
  t.equal(deleted.status, 200);
  const polled = await pollFor(t, tb, user, id, end.next_cursor);
  t.same(
    polled.entries.map((e) => [e.kind, e.summary, e.detail]),
    [['status', 'Deleted', { from: 'queued', to: 'deleted' }]],
    'polling with the last cursor brings exactly what happened since',
  );
  const after = await timeline(t, tb, user, id, `?cursor=${polled.next_cursor}`);
  t.same(after.entries, [], 'and nothing twice');
});

t.test("another account's sandbox is a 404; bad limits and cursors are a 400 with detail", async (t) => {
  const tb = await startTestTwinbox(t);
  const alice = await createUser(tb);
  const bob = await createUser(tb);
  const { body: a } = await createSandbox(tb, alice.key);
  const { body: b } = await createSandbox(tb, alice.key);

  const other = await call(tb, { url: `/sandboxes/${a.sandbox_id}/timeline`, token: bob.key });
  t.equal(other.status, 404);
  t.match(other.body.detail, `No sandbox ${a.sandbox_id} in your account.`);
  const missing = await call(tb, { url: '/sandboxes/nope/timeline', token: alice.key });
  t.equal(missing.status, 404);
  t.equal((await call(tb, { url: `/sandboxes/${a.sandbox_id}/timeline` })).status, 401);

  const otherCursor = (await timeline(t, tb, alice, b.sandbox_id)).next_cursor;
  // Written as JSON: an object literal's `__proto__` would set the prototype, not a key.
  const forged = (p: string) =>
    Buffer.from(`{"v":1,"s":"${a.sandbox_id.slice(0, 8)}","p":${p}}`).toString('base64url');
  const cases: Array<[string, RegExp]> = [
    ['?limit=0', /"limit" must be greater than or equal to 1/],
    ['?limit=501', /"limit" must be less than or equal to 500/],
    ['?limit=abc', /"limit" must be a number/],
    ['?cursor=not-a-cursor', /"cursor" is not a cursor returned by this API/],
    [`?cursor=${otherCursor}`, /"cursor" belongs to the timeline of another sandbox/],
    [`?cursor=${forged('{"__proto__":1}')}`, /"cursor" is not a cursor returned by this API/],
    [`?cursor=${forged('{"events":-2}')}`, /"cursor" is not a cursor returned by this API/],
    [`?cursor=${forged('{"app":1.5}')}`, /"cursor" is not a cursor returned by this API/],
    [`?cursor=${'x'.repeat(2001)}`, /"cursor" length must be less than or equal to 2000/],
  ];
  for (const [query, detail] of cases) {
    const res = await call(tb, { url: `/sandboxes/${a.sandbox_id}/timeline${query}`, token: alice.key });
    t.equal(res.status, 400, query.slice(0, 40));
    t.match(res.body.detail, detail, query.slice(0, 40));
  }
  // Bob's 404 comes before his cursor is looked at: nothing tells him the sandbox exists.
  const bobs = await call(tb, {
    url: `/sandboxes/${a.sandbox_id}/timeline?cursor=garbage`,
    token: bob.key,
  });
  t.equal(bobs.status, 404);
});

t.test('the route is in /openapi.json with its response schema', async (t) => {
  const tb = await startTestTwinbox(t);
  const { body } = await call(tb, { url: '/openapi.json' });
  const route = body.paths['/sandboxes/{sandbox_id}/timeline']?.get;
  t.ok(route, 'documented');
  t.ok(route.parameters.some((p: { name: string }) => p.name === 'cursor'));
  t.ok(route.parameters.some((p: { name: string }) => p.name === 'limit'));
  t.ok(route.responses['200'], 'its 200');
  t.ok(route.responses['400'] && route.responses['404'], 'and its errors');
  t.match(JSON.stringify(route.responses['200']), /TimelinePage|next_cursor/);
});

t.test(
  "the app's requests through the router come in, with status, duration and no query values",
  async (t) => {
    const tb = await startTestTwinbox(t);
    const dir = await tempDir(t, 'twinbox-timeline-routes-');
    const table = new EndpointTable();
    const router = attachRouter(tb.server, {
      domain: 'localhost',
      endpoints: table,
      logger: tb.logger,
      observe: tb.timeline.requests.observe,
    });
    t.teardown(() => router.close());
    await tb.server.start();
    const hosts = sandboxHosts('localhost', new URL(`http://localhost:${tb.server.info.port}`));
    const user = await createUser(tb);
    const { body: sandbox } = await createSandbox(tb, user.key);
    const id = sandbox.sandbox_id;
    const app = await startBackend(t, dir, 'app', (req, res) => {
      res.statusCode = req.url?.startsWith('/missing') ? 404 : 200;
      res.end('ok');
    });
    table.live(id, { app: app.socketPath });

    const start = await timeline(t, tb, user, id);
    t.equal((await fetchVia(`${hosts.appUrl(id)}/checkout?token=s3cret&plan=pro`)).status, 200);
    t.equal((await fetchVia(`${hosts.appUrl(id)}/missing`, { method: 'POST', body: 'x' })).status, 404);
    const { entries } = await pollFor(t, tb, user, id, start.next_cursor, 2);
    t.match(entries, [
      {
        kind: 'app_request',
        source: 'app',
        summary: 'GET /checkout → 200',
        method: 'GET',
        path: '/checkout',
        status: 200,
        request_id: app.seen[0]!.headers['x-twinbox-request-id'],
        detail: { query_keys: ['token', 'plan'] },
      },
      { kind: 'app_request', summary: 'POST /missing → 404', status: 404 },
    ]);
    t.equal(entries[0].id, `app:${entries[0].request_id}`);
    t.type(entries[0].duration_ms, 'number');
    t.notMatch(JSON.stringify(entries), 's3cret', 'query values are not kept');

    // Another sandbox's requests stay in that sandbox's timeline.
    const { body: other } = await createSandbox(tb, user.key);
    table.live(other.sandbox_id, { app: app.socketPath });
    await fetchVia(`${hosts.appUrl(other.sandbox_id)}/elsewhere`);
    const theirs = await pollFor(t, tb, user, other.sandbox_id, '', 2);
    t.same(
      theirs.entries.map((e) => e.summary),
      ['Created for a/b branch m', 'GET /elsewhere → 200'],
    );
    const ours = await timeline(t, tb, user, id, `?cursor=${start.next_cursor}`);
    t.equal(ours.entries.length, 2);
  },
);

t.test("Twinbox's own events survive a restart", async (t) => {
  const dataDir = await tempDir(t, 'twinbox-timeline-restart-');
  const first = await startTestTwinbox(t, {}, { dataDir });
  const user = await createUser(first, 'pro');
  const { body: sandbox } = await createSandbox(first, user.key);
  await call(first, {
    method: 'POST',
    url: `/sandboxes/${sandbox.sandbox_id}/extend`,
    token: user.key,
    payload: { minutes: 5 },
  });
  await call(first, { method: 'DELETE', url: `/sandboxes/${sandbox.sandbox_id}`, token: user.key });
  const before = await pollFor(t, first, user, sandbox.sandbox_id, '', 3);
  await first.stop();

  const second = await startTestTwinbox(t, {}, { dataDir });
  const after = await timeline(t, second, user, sandbox.sandbox_id);
  t.same(
    after.entries.map((e) => [e.id, e.kind, e.summary]),
    before.entries.map((e) => [e.id, e.kind, e.summary]),
  );
  t.same(
    after.entries.map((e) => e.kind),
    ['status', 'extended', 'status'],
  );
});
