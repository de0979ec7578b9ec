import t from 'tap';
import { call, createSandbox, createUser, startTestTwinbox } from '../helpers/twinbox.ts';

// Without a deploy engine a twin set stays queued: these are the API's rules, the deploy tests are in
// twin-sets.test.ts (test/e2e).

const create = (tb: Parameters<typeof call>[0], token: string, payload: unknown) =>
  call(tb, { method: 'POST', url: '/twin-sets', token, payload });

t.test('POST /twin-sets: 201, Location, queued, seeded from a prompt, scoped to its owner', async (t) => {
  const tb = await startTestTwinbox(t);
  const alice = await createUser(tb);
  const bob = await createUser(tb);
  const before = Date.now();
  const res = await create(tb, alice.key, {
    twins: ['stripe', 'github'],
    scenario_prompt: '3 customers',
    ttl_minutes: 30,
    env: { EXTRA: 'yes' },
  });
  t.equal(res.status, 201);
  const id = res.body.id;
  t.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  t.equal(res.headers.location, `/twin-sets/${id}`);
  t.equal(res.body.status, 'queued');
  t.same(res.body.twins, {});
  t.same(res.body.env_vars, {});
  t.same(res.body.twin_names, ['stripe', 'github']);
  t.equal(res.body.ttl_minutes, 30);
  t.match(res.body.twin_admin_token, /^twinadm_[A-Za-z0-9_-]{32}$/);
  t.match(res.body.seed, { stripe: { customers: [{}, {}, {}] } }, 'the prompt planned a seed');
  const created = Date.parse(res.body.created_at);
  t.ok(created >= before - 1 && created <= Date.now());
  t.equal(Date.parse(res.body.expires_at) - created, 30 * 60_000);
  t.notOk('repo' in res.body, 'a twin set has no repository');

  const got = await call(tb, { url: `/twin-sets/${id}`, token: alice.key });
  t.equal(got.status, 200);
  t.same(got.body, res.body, 'get returns what create returned');

  // Another account: exactly like a missing one.
  const theirs = await call(tb, { url: `/twin-sets/${id}`, token: bob.key });
  t.equal(theirs.status, 404);
  t.equal(theirs.body.detail, `No twin set ${id} in your account.`);
  t.same((await call(tb, { url: '/twin-sets', token: bob.key })).body.twin_sets, []);
  t.equal((await call(tb, { method: 'DELETE', url: `/twin-sets/${id}`, token: bob.key })).status, 404);
  t.equal((await call(tb, { url: `/twin-sets/${id}/logs`, token: bob.key })).status, 404);
  t.equal(
    (await call(tb, { method: 'POST', url: `/twin-sets/${id}/extend`, token: bob.key, payload: {} })).status,
    404,
  );
  t.equal((await call(tb, { url: `/twin-sets/${id}`, token: alice.key })).body.status, 'queued', 'untouched');

  // A web session (JWT) of the owner works as its API key does; another's does not.
  const session = await tb.sessions.issue(alice.id);
  const bySession = await call(tb, { url: `/twin-sets/${id}`, token: session });
  t.equal(bySession.status, 200, "the owner's JWT");
  t.equal(bySession.body.id, id);
  const bobSession = await tb.sessions.issue(bob.id);
  t.equal((await call(tb, { url: `/twin-sets/${id}`, token: bobSession })).status, 404);

  // Unauthenticated: 401 with a detail.
  const anonymous = await call(tb, { url: `/twin-sets/${id}` });
  t.equal(anonymous.status, 401);
  t.ok(anonymous.body.detail);
});

t.test('twin sets and sandboxes are apart: neither route finds or lists the other kind', async (t) => {
  const tb = await startTestTwinbox(t);
  const user = await createUser(tb);
  const set = (await create(tb, user.key, { twins: ['stripe'] })).body;
  const sandbox = (await createSandbox(tb, user.key)).body;

  const asSandbox = await call(tb, { url: `/sandboxes/${set.id}`, token: user.key });
  t.equal(asSandbox.status, 404);
  t.equal(asSandbox.body.detail, `No sandbox ${set.id} in your account.`);
  t.equal((await call(tb, { method: 'DELETE', url: `/sandboxes/${set.id}`, token: user.key })).status, 404);
  t.equal((await call(tb, { url: `/twin-sets/${sandbox.sandbox_id}`, token: user.key })).status, 404);

  const sandboxes = (await call(tb, { url: '/sandboxes', token: user.key })).body.sandboxes;
  t.same(
    sandboxes.map((s: { sandbox_id: string }) => s.sandbox_id),
    [sandbox.sandbox_id],
  );
  const sets = (await call(tb, { url: '/twin-sets', token: user.key })).body;
  t.same(
    sets.twin_sets.map((s: { id: string }) => s.id),
    [set.id],
  );
  t.equal(sets.next_cursor, null);
});

t.test('list: newest first, by status, paginated with a cursor', async (t) => {
  const tb = await startTestTwinbox(t);
  const user = await createUser(tb);
  const ids: string[] = [];
  for (let i = 0; i < 5; i++) ids.push((await create(tb, user.key, { twins: ['slack'] })).body.id);
  const deleted = await call(tb, { method: 'DELETE', url: `/twin-sets/${ids[0]}`, token: user.key });
  t.equal(deleted.status, 200);
  t.equal(deleted.body.status, 'deleted');
  const again = await call(tb, { method: 'DELETE', url: `/twin-sets/${ids[0]}`, token: user.key });
  t.equal(again.body.updated_at, deleted.body.updated_at, 'deleting again changes nothing');

  const seen: string[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const url: string = `/twin-sets?limit=2${cursor ? `&cursor=${cursor}` : ''}`;
    const page = await call(tb, { url, token: user.key });
    t.equal(page.status, 200);
    t.ok(page.body.twin_sets.length <= 2);
    seen.push(...page.body.twin_sets.map((s: { id: string }) => s.id));
    cursor = page.body.next_cursor;
    pages++;
  } while (cursor);
  t.equal(pages, 3);
  t.same(seen, [...ids].reverse(), 'pages cover everything once, newest first');
  const onlyDeleted = await call(tb, { url: '/twin-sets?status=deleted', token: user.key });
  t.same(
    onlyDeleted.body.twin_sets.map((s: { id: string }) => s.id),
    [ids[0]],
  );
  const badCursor = await call(tb, { url: '/twin-sets?cursor=nope', token: user.key });
  t.equal(badCursor.status, 400);
  t.match(badCursor.body.detail, /cursor/);
});

t.test('every bad input is a 4xx with a detail', async (t) => {
  const tb = await startTestTwinbox(t);
  const user = await createUser(tb);
  const cases: Array<[string, unknown, number, RegExp]> = [
    ['no twins at all', {}, 400, /Name the twins to start/],
    ['an empty twins list', { twins: [] }, 400, /Name the twins to start/],
    [
      'an unknown twin',
      { twins: ['stripe', 'paypal'] },
      400,
      /Unknown twin name: paypal\. Supported twins: /,
    ],
    ['a repo (that is POST /sandboxes)', { twins: ['stripe'], repo: 'a/b' }, 400, /"repo" is not allowed/],
    ['a ttl above 480', { twins: ['stripe'], ttl_minutes: 481 }, 400, /ttl_minutes/],
    ['a ttl of 0', { twins: ['stripe'], ttl_minutes: 0 }, 400, /ttl_minutes/],
    ['a ttl as a string', { twins: ['stripe'], ttl_minutes: '30' }, 400, /ttl_minutes/],
    ['twins twice', { twins: ['stripe', 'stripe'] }, 400, /duplicate/],
    ['a bad env name', { twins: ['stripe'], env: { 'A-B': 'x' } }, 400, /not a valid name/],
    ['an unknown scenario', { twins: ['stripe'], scenario_id: 'scn_nope' }, 400, /Unknown scenario_id/],
    ['not an object', ['stripe'], 400, /must be of type object/],
    ['a free plan above its cap', { twins: ['stripe'], ttl_minutes: 300 }, 403, /above the free plan's cap/],
  ];
  for (const [what, payload, status, detail] of cases) {
    const res = await create(tb, user.key, payload);
    t.equal(res.status, status, what);
    t.match(res.body.detail, detail, what);
  }
  const text = await call(tb, {
    method: 'POST',
    url: '/twin-sets',
    token: user.key,
    payload: 'twins=stripe',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });
  t.equal(text.status, 415);
  t.ok(text.body.detail);
  const badJson = await call(tb, {
    method: 'POST',
    url: '/twin-sets',
    token: user.key,
    payload: '{"twins": [',
    headers: { 'content-type': 'application/json' },
  });
  t.equal(badJson.status, 400);
  t.ok(badJson.body.detail);
  const badStatus = await call(tb, { url: '/twin-sets?status=sleeping', token: user.key });
  t.equal(badStatus.status, 400);
  t.match(badStatus.body.detail, /status/);
  t.equal((await tb.store.sandboxes.findBy('owner_id', user.id)).length, 0, 'nothing stored');
});

t.test('a scenario names the twins when "twins" is omitted', async (t) => {
  const tb = await startTestTwinbox(t);
  const user = await createUser(tb);
  const scenarios = (await call(tb, { url: '/scenarios', token: user.key })).body;
  const preset = (scenarios.scenarios ?? scenarios).find((s: { twins: string[] }) => s.twins.length > 0);
  t.ok(preset, 'a preset to start from');
  const res = await create(tb, user.key, { scenario_id: preset.id });
  t.equal(res.status, 201);
  t.same(res.body.twin_names, preset.twins);
  t.equal(res.body.scenario_id, preset.id);
  t.ok(res.body.seed, "the preset's seed");
});

t.test('twin sets count against the plan quota with sandboxes', async (t) => {
  const tb = await startTestTwinbox(t, { TWINBOX_SANDBOX_QUOTA_FREE: '2' });
  const user = await createUser(tb);
  t.equal((await createSandbox(tb, user.key)).status, 201);
  const set = await create(tb, user.key, { twins: ['stripe'] });
  t.equal(set.status, 201);
  const over = await create(tb, user.key, { twins: ['github'] });
  t.equal(over.status, 403);
  t.equal(over.body.code, 'plan_limit_exceeded');
  t.match(
    over.body.detail,
    /free plan allows 2 active sandboxes .* this account has 2\. Twin sets count too/,
  );
  t.equal((await createSandbox(tb, user.key)).status, 403, 'a sandbox too');
  await call(tb, { method: 'DELETE', url: `/twin-sets/${set.body.id}`, token: user.key });
  t.equal((await create(tb, user.key, { twins: ['github'] })).status, 201, 'room again after a delete');
});

t.test('TTL: the reaper expires a twin set at its time; extend moves it within the plan cap', async (t) => {
  const tb = await startTestTwinbox(t);
  const user = await createUser(tb);
  const { body } = await create(tb, user.key, { twins: ['stripe'], ttl_minutes: 10 });
  const extended = await call(tb, {
    method: 'POST',
    url: `/twin-sets/${body.id}/extend`,
    token: user.key,
    payload: { minutes: 5 },
  });
  t.equal(extended.status, 200);
  t.equal(Date.parse(extended.body.expires_at) - Date.parse(body.expires_at), 5 * 60_000);
  const tooLong = await call(tb, {
    method: 'POST',
    url: `/twin-sets/${body.id}/extend`,
    token: user.key,
    payload: { minutes: 400 },
  });
  t.equal(tooLong.status, 403);
  t.match(tooLong.body.detail, /plan's cap/);

  const expiresAt = Date.parse(extended.body.expires_at);
  t.equal(await tb.reaper.sweep(new Date(expiresAt - 1000)), 0, 'not before its time');
  t.equal(await tb.reaper.sweep(new Date(expiresAt)), 1);
  const after = await call(tb, { url: `/twin-sets/${body.id}`, token: user.key });
  t.equal(after.body.status, 'expired');
  const late = await call(tb, {
    method: 'POST',
    url: `/twin-sets/${body.id}/extend`,
    token: user.key,
    payload: {},
  });
  t.equal(late.status, 409);
  t.match(late.body.detail, /expired/);
});

t.test('the published OpenAPI document lists the twin-set routes', async (t) => {
  const tb = await startTestTwinbox(t);
  const doc = (await call(tb, { url: '/openapi.json' })).body;
  t.ok(doc.paths['/twin-sets'].post, 'POST /twin-sets');
  t.ok(doc.paths['/twin-sets'].get, 'GET /twin-sets');
  t.ok(doc.paths['/twin-sets/{twin_set_id}'].get, 'GET /twin-sets/{id}');
  t.ok(doc.paths['/twin-sets/{twin_set_id}'].delete, 'DELETE /twin-sets/{id}');
  t.ok(doc.paths['/twin-sets/{twin_set_id}/extend'].post);
  t.ok(doc.paths['/twin-sets/{twin_set_id}/logs'].get);
  t.ok(doc.paths['/twin-sets/{twin_set_id}/timeline'].get);
  const created = doc.paths['/twin-sets'].post;
  t.ok(created.responses['201'], 'its 201');
  t.ok(created.responses['400'] && created.responses['403'], 'its errors');
  t.ok(created.requestBody.content['application/json'].schema, 'its body');
});
