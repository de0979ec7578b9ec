import t from 'tap';
import { call, startTestTwinbox, createSandbox } from './helpers/twinbox.ts';

const ADMIN_TOKEN = 'operator-token-'.padEnd(48, 'z');

t.test('the operator API is absent when TWINBOX_ADMIN_TOKEN is not set', async (t) => {
  const tb = await startTestTwinbox(t);
  const res = await call(tb, {
    method: 'POST',
    url: '/admin/accounts',
    token: ADMIN_TOKEN,
    payload: { email: 'a@b.io' },
  });
  t.equal(res.status, 404);
});

t.test('accounts, plans and keys through the operator API', async (t) => {
  const tb = await startTestTwinbox(t, { TWINBOX_ADMIN_TOKEN: ADMIN_TOKEN });
  const created = await call(tb, {
    method: 'POST',
    url: '/admin/accounts',
    token: ADMIN_TOKEN,
    payload: { email: '  Dev@Example.COM ' },
  });
  t.equal(created.status, 201);
  t.same(Object.keys(created.body).sort(), ['email', 'id', 'plan']);
  t.equal(created.body.email, 'dev@example.com', 'trimmed and lowercased');
  t.equal(created.body.plan, 'free', 'free by default');

  const duplicate = await call(tb, {
    method: 'POST',
    url: '/admin/accounts',
    token: ADMIN_TOKEN,
    payload: { email: 'DEV@example.com' },
  });
  t.equal(duplicate.status, 409);
  t.equal(
    duplicate.body.detail,
    'Only one account can use an email address. This email is already linked to another account.',
  );

  const invalid = await call(tb, {
    method: 'POST',
    url: '/admin/accounts',
    token: ADMIN_TOKEN,
    payload: { email: 'nope' },
  });
  t.equal(invalid.status, 400);
  t.match(invalid.body.detail, /Invalid e-mail address/);
  const badPlan = await call(tb, {
    method: 'POST',
    url: '/admin/accounts',
    token: ADMIN_TOKEN,
    payload: { email: 'x@y.io', plan: 'gold' },
  });
  t.equal(badPlan.status, 400);

  const key = await call(tb, {
    method: 'POST',
    url: `/admin/accounts/${created.body.id}/api-keys`,
    token: ADMIN_TOKEN,
  });
  t.equal(key.status, 201);
  t.match(key.body.key, /^twinbox_sk_/);
  t.match(key.body.id, /^key_/);

  const free = await createSandbox(tb, key.body.key, { repo: 'a/b', branch: 'm', ttl_minutes: 120 });
  t.equal(free.status, 403, 'free plan is capped');
  const upgraded = await call(tb, {
    method: 'PATCH',
    url: `/admin/accounts/${created.body.id}`,
    token: ADMIN_TOKEN,
    payload: { plan: 'pro' },
  });
  t.equal(upgraded.status, 200);
  t.equal(upgraded.body.plan, 'pro');
  const pro = await createSandbox(tb, key.body.key, { repo: 'a/b', branch: 'm', ttl_minutes: 120 });
  t.equal(pro.status, 201, 'the new plan applies on the next request');

  t.equal(
    (
      await call(tb, {
        method: 'PATCH',
        url: '/admin/accounts/nobody',
        token: ADMIN_TOKEN,
        payload: { plan: 'pro' },
      })
    ).status,
    404,
  );
  t.equal(
    (await call(tb, { method: 'POST', url: '/admin/accounts/nobody/api-keys', token: ADMIN_TOKEN })).status,
    404,
  );
});

t.test('the operator API takes only the operator token', async (t) => {
  const tb = await startTestTwinbox(t, { TWINBOX_ADMIN_TOKEN: ADMIN_TOKEN });
  const created = await call(tb, {
    method: 'POST',
    url: '/admin/accounts',
    token: ADMIN_TOKEN,
    payload: { email: 'u@x.io' },
  });
  const key = (
    await call(tb, { method: 'POST', url: `/admin/accounts/${created.body.id}/api-keys`, token: ADMIN_TOKEN })
  ).body.key;
  for (const token of [undefined, key, `${ADMIN_TOKEN}x`, ADMIN_TOKEN.slice(0, -1)]) {
    const res = await call(tb, {
      method: 'POST',
      url: '/admin/accounts',
      token,
      payload: { email: 'v@x.io' },
    });
    t.equal(res.status, 401);
    t.match(res.headers['www-authenticate'], /^Bearer/);
  }
  t.equal(
    (await call(tb, { url: '/sandboxes', token: ADMIN_TOKEN })).status,
    401,
    'and the operator token is no user token',
  );
});
