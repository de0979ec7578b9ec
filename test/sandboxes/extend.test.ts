import t from 'tap';
import { call, createSandbox, createUser, startTestTwinbox } from '../helpers/twinbox.ts';

const minutesBetween = (a: string, b: string) => Math.round((Date.parse(b) - Date.parse(a)) / 60_000);

t.test('POST /sandboxes/{id}/extend moves the expiry and reports the sandbox', async (t) => {
  const tb = await startTestTwinbox(t);
  const user = await createUser(tb, 'pro');
  const { body } = await createSandbox(tb, user.key, { repo: 'a/b', branch: 'm', ttl_minutes: 30 });
  const extended = await call(tb, {
    method: 'POST',
    url: `/sandboxes/${body.sandbox_id}/extend`,
    token: user.key,
    payload: { minutes: 45 },
  });
  t.equal(extended.status, 200);
  t.equal(minutesBetween(body.created_at, extended.body.expires_at), 75);
  const again = await call(tb, {
    method: 'POST',
    url: `/sandboxes/${body.sandbox_id}/extend`,
    token: user.key,
  });
  t.equal(again.status, 200, 'no body: the default of 30 minutes');
  t.equal(minutesBetween(body.created_at, again.body.expires_at), 105);
  const read = await call(tb, { url: `/sandboxes/${body.sandbox_id}`, token: user.key });
  t.equal(read.body.expires_at, again.body.expires_at, 'the store holds the new expiry');
});

t.test('extend keeps the whole lifetime within the plan cap, and only for an active sandbox', async (t) => {
  const tb = await startTestTwinbox(t, { TWINBOX_FREE_TTL_CAP_MINUTES: '60' });
  const user = await createUser(tb);
  const { body } = await createSandbox(tb, user.key, { repo: 'a/b', branch: 'm', ttl_minutes: 40 });
  const url = `/sandboxes/${body.sandbox_id}/extend`;
  const over = await call(tb, { method: 'POST', url, token: user.key, payload: { minutes: 30 } });
  t.equal(over.status, 403);
  t.equal(over.body.code, 'plan_limit_exceeded');
  t.match(over.body.detail, /above the free plan's cap of 60 minutes; nothing was done/);
  const unchanged = await call(tb, { url: `/sandboxes/${body.sandbox_id}`, token: user.key });
  t.equal(unchanged.body.expires_at, body.expires_at, 'a refused extension changes nothing');

  const within = await call(tb, { method: 'POST', url, token: user.key, payload: { minutes: 20 } });
  t.equal(within.status, 200);

  await call(tb, { method: 'DELETE', url: `/sandboxes/${body.sandbox_id}`, token: user.key });
  const ended = await call(tb, { method: 'POST', url, token: user.key, payload: { minutes: 1 } });
  t.equal(ended.status, 409);
  t.equal(ended.body.code, 'sandbox_not_active');
  t.match(ended.body.detail, /is deleted: only a queued, building or ready sandbox can be extended/);
});

t.test('extend: bad input is a 400 with detail, another account gets 404', async (t) => {
  const tb = await startTestTwinbox(t);
  const alice = await createUser(tb);
  const bob = await createUser(tb);
  const { body } = await createSandbox(tb, alice.key);
  const url = `/sandboxes/${body.sandbox_id}/extend`;
  for (const payload of [
    { minutes: 0 },
    { minutes: 481 },
    { minutes: '5' },
    { minutes: 1.5 },
    { other: 1 },
  ]) {
    const res = await call(tb, { method: 'POST', url, token: alice.key, payload });
    t.equal(res.status, 400, JSON.stringify(payload));
    t.ok(res.body.detail, JSON.stringify(payload));
  }
  const theirs = await call(tb, { method: 'POST', url, token: bob.key, payload: { minutes: 5 } });
  t.equal(theirs.status, 404);
  const anonymous = await call(tb, { method: 'POST', url, payload: { minutes: 5 } });
  t.equal(anonymous.status, 401);
});
