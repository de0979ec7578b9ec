import t from 'tap';
import { call, createUser, startTestTwinbox, createSandbox } from '../helpers/twinbox.ts';

t.test('get, list and delete are scoped to the owner: another account sees a 404', async (t) => {
  const tb = await startTestTwinbox(t);
  const alice = await createUser(tb);
  const bob = await createUser(tb);
  const created = await createSandbox(tb, alice.key);
  const id = created.body.sandbox_id;

  const mine = await call(tb, { url: `/sandboxes/${id}`, token: alice.key });
  t.equal(mine.status, 200);
  t.same(mine.body, created.body, 'get returns what create returned');

  const theirs = await call(tb, { url: `/sandboxes/${id}`, token: bob.key });
  t.equal(theirs.status, 404);
  t.equal(theirs.body.detail, `No sandbox ${id} in your account.`);
  t.same((await call(tb, { url: '/sandboxes', token: bob.key })).body.sandboxes, []);
  const theirDelete = await call(tb, { method: 'DELETE', url: `/sandboxes/${id}`, token: bob.key });
  t.equal(theirDelete.status, 404);
  t.equal((await call(tb, { url: `/sandboxes/${id}`, token: alice.key })).body.status, 'queued', 'untouched');
});

t.test('an id that does not exist, or is not even a UUID, is a 404', async (t) => {
  const tb = await startTestTwinbox(t);
  const user = await createUser(tb);
  for (const id of ['6f1c2b9e-4c8e-4b0a-9d7e-2f3a4b5c6d7e', 'nope', '..%2F..%2Fetc']) {
    const res = await call(tb, { url: `/sandboxes/${id}`, token: user.key });
    t.equal(res.status, 404, id);
    t.ok(res.body.detail, id);
  }
});

t.test('DELETE ends the sandbox now, keeps the record, and is idempotent', async (t) => {
  const tb = await startTestTwinbox(t);
  const user = await createUser(tb);
  const { body } = await createSandbox(tb, user.key);
  const first = await call(tb, { method: 'DELETE', url: `/sandboxes/${body.sandbox_id}`, token: user.key });
  t.equal(first.status, 200);
  t.equal(first.body.status, 'deleted');
  const again = await call(tb, { method: 'DELETE', url: `/sandboxes/${body.sandbox_id}`, token: user.key });
  t.equal(again.status, 200);
  t.equal(again.body.status, 'deleted');
  t.equal(again.body.updated_at, first.body.updated_at, 'nothing changed the second time');
  t.equal((await call(tb, { url: `/sandboxes/${body.sandbox_id}`, token: user.key })).body.status, 'deleted');
});

t.test('list: newest first, filtered by repo and status, paginated with a cursor', async (t) => {
  const tb = await startTestTwinbox(t);
  const user = await createUser(tb);
  const ids: string[] = [];
  for (let i = 0; i < 7; i++) {
    const repo = i % 2 === 0 ? 'org/even' : 'org/odd';
    const res = await createSandbox(tb, user.key, { repo, branch: `b${i}` });
    ids.push(res.body.sandbox_id);
  }
  await call(tb, { method: 'DELETE', url: `/sandboxes/${ids[0]}`, token: user.key });

  const all = await call(tb, { url: '/sandboxes', token: user.key });
  t.same(
    all.body.sandboxes.map((s: { sandbox_id: string }) => s.sandbox_id),
    [...ids].reverse(),
  );
  t.equal(all.body.next_cursor, null);

  const seen: string[] = [];
  let cursor: string | null = null;
  do {
    const url: string = `/sandboxes?limit=3${cursor ? `&cursor=${cursor}` : ''}`;
    const page = await call(tb, { url, token: user.key });
    t.ok(page.body.sandboxes.length <= 3);
    seen.push(...page.body.sandboxes.map((s: { sandbox_id: string }) => s.sandbox_id));
    cursor = page.body.next_cursor;
  } while (cursor);
  t.same(seen, [...ids].reverse(), 'pages cover everything once, in order');

  const even = await call(tb, { url: '/sandboxes?repo=ORG/even', token: user.key });
  t.equal(even.body.sandboxes.length, 4, 'repo filter ignores case, as GitHub does');
  const deleted = await call(tb, { url: '/sandboxes?status=deleted', token: user.key });
  t.same(
    deleted.body.sandboxes.map((s: { sandbox_id: string }) => s.sandbox_id),
    [ids[0]],
  );
  const queuedEven = await call(tb, { url: '/sandboxes?status=queued&repo=org/even', token: user.key });
  t.equal(queuedEven.body.sandboxes.length, 3);
});

t.test('list rejects bad filters with a 400 and a detail', async (t) => {
  const tb = await startTestTwinbox(t);
  const user = await createUser(tb);
  for (const query of [
    'status=sleeping',
    'limit=0',
    'limit=101',
    'limit=ten',
    'repo=nope',
    'cursor=%%%',
    'cursor=abc',
    'x=1',
  ]) {
    const res = await call(tb, { url: `/sandboxes?${query}`, token: user.key });
    t.equal(res.status, 400, query);
    t.ok(res.body.detail, query);
  }
});
