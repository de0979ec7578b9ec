import t from 'tap';
import { latestCode, send, signUpVerified, startIdentityTwinbox } from './helpers.ts';

const attack = '<script>alert(1)</script><img src=x onerror="alert(2)">"\'&';

t.test('/login shows error and detail escaped, with the e-mail form and GitHub sign-in', async (t) => {
  const twinbox = await startIdentityTwinbox(t);
  const url = `/login?error=scm_identity_already_linked&detail=${encodeURIComponent(attack)}`;
  const reply = await send(twinbox, 'GET', url);
  t.equal(reply.status, 200);
  t.match(reply.headers['content-type'], /text\/html/);
  t.match(reply.headers['content-security-policy'], /default-src 'none'/);
  const body = String(reply.body);
  t.notMatch(body, '<script>', 'no script element from the query');
  t.notMatch(body, '<img', 'no element from the query');
  t.match(
    body,
    '&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=&quot;alert(2)&quot;&gt;&quot;&#39;&amp;',
  );
  t.match(body, 'scm_identity_already_linked');
  t.match(body, 'action="/login/email"');
  t.match(body, 'href="/auth/github/login"');
});

t.test('e-mail sign-in through the forms sets the session cookie; pages need it', async (t) => {
  const twinbox = await startIdentityTwinbox(t);
  const { account } = await signUpVerified(twinbox, 'web@example.com');
  twinbox.clock.advance(61_000);
  t.equal((await send(twinbox, 'GET', '/integrations')).status, 302, 'signed out: to /login');
  const asked = await twinbox.server.inject({
    method: 'POST',
    url: '/login/email',
    payload: 'email=Web%40Example.com',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });
  t.equal(asked.statusCode, 200);
  t.match(asked.payload, 'name="code"');
  const code = await latestCode(twinbox, 'web@example.com', 1);
  const verified = await twinbox.server.inject({
    method: 'POST',
    url: '/login/email/verify',
    payload: `email=web%40example.com&code=${code}`,
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });
  t.equal(verified.statusCode, 302);
  t.equal(verified.headers.location, '/integrations');
  const cookie = String(verified.headers['set-cookie']).split(';')[0]!;
  t.match(cookie, /^twinbox_session=/);

  const integrations = await send(twinbox, 'GET', '/integrations', undefined, { cookie });
  t.equal(integrations.status, 200);
  t.match(integrations.body, 'web@example.com');
  t.match(integrations.body, 'href="/auth/github/connect"');

  const created = await twinbox.server.inject({
    method: 'POST',
    url: '/settings/api-keys',
    payload: `name=${encodeURIComponent('<b>ci</b>')}`,
    headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
  });
  t.equal(created.statusCode, 201);
  const key = /id="new-key">([^<]+)</.exec(created.payload)![1]!;
  t.match(key, /^twinbox_sk_/);
  t.match(created.payload, '&lt;b&gt;ci&lt;/b&gt;');
  const list = await send(twinbox, 'GET', '/settings/api-keys', undefined, { cookie });
  t.notMatch(list.body, key, 'the key is shown once');
  const [record] = await twinbox.apiKeys.list(account.id);
  const crossSite = await twinbox.server.inject({
    method: 'POST',
    url: `/settings/api-keys/${record!.id}/revoke`,
    headers: { cookie, origin: 'https://evil.example' },
  });
  t.equal(crossSite.statusCode, 403, 'cross-origin form posts are refused');
  const revoke = await twinbox.server.inject({
    method: 'POST',
    url: `/settings/api-keys/${record!.id}/revoke`,
    headers: { cookie },
  });
  t.equal(revoke.statusCode, 302);
  t.ok((await twinbox.apiKeys.list(account.id))[0]!.revoked_at);

  const wrong = await twinbox.server.inject({
    method: 'POST',
    url: '/login/email/verify',
    payload: 'email=web%40example.com&code=000000',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
  });
  t.equal(wrong.statusCode, 400);
  t.match(wrong.payload, 'The code is wrong');
});
