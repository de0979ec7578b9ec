import t from 'tap';
import {
  ONE_ACCOUNT,
  freshIp,
  latestCode,
  mailTo,
  send,
  signUpVerified,
  startIdentityTwinbox,
  type IdentityTwinbox,
} from './helpers.ts';

const attack = '<script>alert(1)</script><img src=x onerror="alert(2)">"\'&';
const escaped =
  '&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=&quot;alert(2)&quot;&gt;&quot;&#39;&amp;';
/** The host the tests' requests are sent to; a browser on a Twinbox page sends this as its Origin. */
const HOST = 'twinbox.test';
const ORIGIN = `http://${HOST}`;

interface Page {
  status: number;
  headers: Record<string, unknown>;
  body: string;
  location: string | undefined;
  cookie: string | undefined;
}

/**
 * A request as a browser on a Twinbox page makes it: same-origin `Origin` and `Sec-Fetch-Site` on posts,
 * form-encoded fields. `headers` overrides them (an attacker's post).
 */
async function request(
  twinbox: IdentityTwinbox,
  method: 'GET' | 'POST',
  url: string,
  options: { form?: Record<string, string>; cookie?: string; headers?: Record<string, string> } = {},
): Promise<Page> {
  const headers: Record<string, string> = { host: HOST };
  if (method === 'POST') {
    headers.origin = ORIGIN;
    headers['sec-fetch-site'] = 'same-origin';
    headers['content-type'] = 'application/x-www-form-urlencoded';
  }
  if (options.cookie) headers.cookie = options.cookie;
  for (const [name, value] of Object.entries(options.headers ?? {})) {
    if (value === '') delete headers[name];
    else headers[name] = value;
  }
  const response = await twinbox.server.inject({
    method,
    url,
    headers,
    remoteAddress: freshIp(),
    payload: options.form ? new URLSearchParams(options.form).toString() : undefined,
  });
  const setCookie = ([] as string[]).concat((response.headers['set-cookie'] as string[]) ?? []);
  const session = setCookie.find((c) => c.startsWith('twinbox_session='));
  return {
    status: response.statusCode,
    headers: response.headers,
    body: response.payload,
    location: response.headers.location as string | undefined,
    cookie: session?.split(';')[0],
  };
}

const get = (tb: IdentityTwinbox, url: string, cookie?: string) => request(tb, 'GET', url, { cookie });
const post = (
  tb: IdentityTwinbox,
  url: string,
  form: Record<string, string>,
  cookie?: string,
  headers?: Record<string, string>,
) => request(tb, 'POST', url, { form, cookie, headers });

/** The form token a signed-in page carries (every form of it has the same one). */
function csrfOf(body: string): string {
  const match = /name="csrf" value="([^"]+)"/.exec(body);
  if (!match) throw new Error('no form token on the page');
  return match[1]!;
}

/** Signs `email` (already an account) in through the forms; returns the session cookie. */
async function signInByForms(tb: IdentityTwinbox, email: string, next?: string): Promise<Page> {
  const before = (await mailTo(tb, email)).length;
  const asked = await post(tb, '/login/email', { email, ...(next ? { next } : {}) });
  if (asked.status !== 200) throw new Error(`login/email ${asked.status}: ${asked.body}`);
  const code = await latestCode(tb, email, before);
  tb.clock.advance(61_000); // the next code to this address may be asked for
  return post(tb, '/login/email/verify', { email, code, ...(next ? { next } : {}) });
}

async function signedIn(tb: IdentityTwinbox, email: string) {
  const { account } = await signUpVerified(tb, email);
  tb.clock.advance(61_000);
  const done = await signInByForms(tb, email);
  const cookie = done.cookie!;
  const keysPage = await get(tb, '/settings/api-keys', cookie);
  return { account, cookie, csrf: csrfOf(keysPage.body) };
}

t.test('/login shows error and detail escaped, with the e-mail form, GitHub and sign-up links', async (t) => {
  const tb = await startIdentityTwinbox(t);
  const reply = await send(
    tb,
    'GET',
    `/login?error=scm_identity_already_linked&detail=${encodeURIComponent(attack)}`,
  );
  t.equal(reply.status, 200);
  t.match(reply.headers['content-type'], /text\/html/);
  t.match(reply.headers['content-security-policy'], /default-src 'none'/);
  t.match(reply.headers['content-security-policy'], /script-src 'self'/);
  t.equal(reply.headers['referrer-policy'], 'same-origin');
  const body = String(reply.body);
  t.notMatch(body, '<script>', 'no script element from the query');
  t.notMatch(body, '<img', 'no element from the query');
  t.match(body, escaped);
  t.match(body, 'scm_identity_already_linked');
  t.match(body, 'action="/login/email"');
  t.match(body, '<label for="login-email">E-mail</label>');
  t.match(body, 'id="login-email"');
  t.match(body, 'href="/auth/github/login"');
  t.match(body, 'href="/signup"', 'no account yet? sign up');
});

t.test(
  'sign up by the forms: code from the outbox, signed in, the one-account rule on the page',
  async (t) => {
    const tb = await startIdentityTwinbox(t);
    const form = await get(tb, '/signup');
    t.equal(form.status, 200);
    t.match(form.body, 'action="/signup"');
    t.match(form.body, '<label for="signup-email">E-mail</label>');
    t.match(form.body, 'href="/login"', 'already have an account? sign in');

    const bad = await post(tb, '/signup', { email: 'not an address' });
    t.equal(bad.status, 400);
    t.match(bad.body, /role="alert"[\s\S]*id="detail"/);

    const started = await post(tb, '/signup', { email: ' New.User@Example.com ' });
    t.equal(started.status, 200);
    t.match(started.body, 'action="/signup/verify"');
    t.match(started.body, 'new.user@example.com', 'the normalized address');
    t.match(started.body, '<label for="code">Code</label>');
    const code = await latestCode(tb, 'new.user@example.com');

    const wrong = await post(tb, '/signup/verify', { email: 'new.user@example.com', code: '000000' });
    t.equal(wrong.status, 400);
    t.match(wrong.body, 'The code is wrong');
    t.notOk(wrong.cookie, 'no session for a wrong code');

    const tooSoon = await post(tb, '/signup/resend', { email: 'new.user@example.com', resend: '1' });
    t.equal(tooSoon.status, 429, 'one code a minute');
    t.match(tooSoon.body, 'less than a minute ago');
    t.match(tooSoon.body, 'action="/signup/verify"', 'still on the code step');

    const done = await post(tb, '/signup/verify', { email: 'new.user@example.com', code });
    t.equal(done.status, 303);
    t.equal(done.location, '/dashboard', 'people land on their sandboxes');
    t.match(done.cookie, /^twinbox_session=.+/);
    const page = await get(tb, '/integrations', done.cookie);
    t.equal(page.status, 200);
    t.match(page.body, 'new.user@example.com', 'the header names the account');
    t.match(page.body, 'action="/logout"');

    const again = await post(tb, '/signup', { email: 'NEW.USER@example.com' });
    t.equal(again.status, 409);
    t.match(again.body, ONE_ACCOUNT, "the spec's text, as is");
    t.match(again.body, 'href="/login"', 'and the way to sign in');
    t.equal(await tb.store.accounts.count(), 1);

    // An address signed up but never confirmed: a new code confirms it.
    const half = await post(tb, '/signup', { email: 'half@example.com' });
    t.equal(half.status, 200);
    tb.clock.advance(61_000);
    const resent = await post(tb, '/signup/resend', { email: 'half@example.com', resend: '1' });
    t.equal(resent.status, 200);
    t.match(resent.body, 'We mailed you a new code');
    const second = await latestCode(tb, 'half@example.com', 1);
    const confirmed = await post(tb, '/signup/verify', { email: 'half@example.com', code: second });
    t.equal(confirmed.status, 303);
    t.ok(confirmed.cookie);
  },
);

t.test('sign in by the forms, the next round trip, sign out', async (t) => {
  const tb = await startIdentityTwinbox(t);
  await signUpVerified(tb, 'web@example.com');
  tb.clock.advance(61_000);

  const anonymous = await get(tb, '/settings/api-keys?x=1');
  t.equal(anonymous.status, 302, 'signed out: sent to sign in');
  t.equal(anonymous.location, '/login?next=%2Fsettings%2Fapi-keys%3Fx%3D1');
  const login = await get(tb, anonymous.location!);
  t.match(login.body, '<input type="hidden" name="next" value="/settings/api-keys?x=1" />');
  t.match(login.body, 'href="/signup?next=%2Fsettings%2Fapi-keys%3Fx%3D1"', 'sign-up keeps the page');
  t.match(login.body, 'href="/auth/github/login?next=%2Fsettings%2Fapi-keys%3Fx%3D1"', 'GitHub too');

  // The code page says the same whether or not the address has an account, and how to sign up.
  const nobody = await post(tb, '/login/email', { email: 'nobody@example.com' });
  const somebody = await post(tb, '/login/email', {
    email: 'web@example.com',
    next: '/settings/api-keys?x=1',
  });
  t.equal(nobody.status, 200);
  t.equal(somebody.status, 200);
  const text = (p: Page) => p.body.replace(/<[^>]+>/g, '').replace(/\S+@example\.com/g, 'ADDRESS');
  t.equal(text(nobody).replace(/\s+/g, ' '), text(somebody).replace(/\s+/g, ' '), 'nothing tells them apart');
  t.match(nobody.body, 'No account yet?');
  t.match(somebody.body, '<input type="hidden" name="next" value="/settings/api-keys?x=1" />');
  const code = await latestCode(tb, 'web@example.com', 1);
  const verified = await post(tb, '/login/email/verify', {
    email: 'web@example.com',
    code,
    next: '/settings/api-keys?x=1',
  });
  t.equal(verified.status, 303);
  t.equal(verified.location, '/settings/api-keys?x=1', 'back on the page that asked');
  const cookie = verified.cookie!;
  t.match(verified.headers['set-cookie'], /HttpOnly/);
  t.match(verified.headers['set-cookie'], /SameSite=Lax/);

  const back = await get(tb, '/login?next=%2Fintegrations', cookie);
  t.equal(back.status, 302, 'signed in: /login goes on');
  t.equal(back.location, '/integrations');

  const keys = await get(tb, '/settings/api-keys', cookie);
  const csrf = csrfOf(keys.body);
  const out = await post(tb, '/logout', { csrf }, cookie);
  t.equal(out.status, 303);
  t.equal(out.location, '/login?signed_out=1');
  t.match(out.headers['set-cookie'], /twinbox_session=;/, 'the cookie is cleared');
  const bye = await get(tb, out.location!);
  t.match(bye.body, 'You are signed out.');
});

t.test('next never leaves the site: open-redirect attempts land on the dashboard', async (t) => {
  const tb = await startIdentityTwinbox(t);
  await signUpVerified(tb, 'safe@example.com');
  const attempts = [
    '//evil.example',
    '/\\evil.example',
    '\\\\evil.example',
    'https://evil.example',
    'http:evil.example',
    'javascript:alert(1)',
    '/\t/evil.example',
    '/\n/evil.example',
    'evil.example',
    '',
  ];
  for (const next of attempts) {
    const login = await get(tb, `/login?next=${encodeURIComponent(next)}`);
    t.match(
      login.body,
      '<input type="hidden" name="next" value="/dashboard" />',
      `GET /login ${JSON.stringify(next)}`,
    );
    t.notMatch(login.body, 'evil.example');
    tb.clock.advance(61_000);
    const done = await signInByForms(tb, 'safe@example.com', next);
    t.equal(done.status, 303);
    t.equal(done.location, '/dashboard', `sign-in with next=${JSON.stringify(next)}`);
    const signedInAlready = await get(tb, `/login?next=${encodeURIComponent(next)}`, done.cookie);
    t.equal(signedInAlready.location, '/dashboard');
  }
});

t.test(
  'CSRF: other sites, a missing or wrong form token are refused with a 403 page that says why',
  async (t) => {
    const tb = await startIdentityTwinbox(t);
    const { account, cookie, csrf } = await signedIn(tb, 'victim@example.com');
    const other = await signedIn(tb, 'other@example.com');
    const keysOf = () => tb.apiKeys.list(account.id);

    const refusals: [string, Record<string, string>, Record<string, string>, RegExp][] = [
      [
        'another site',
        { csrf, name: 'x' },
        { origin: 'https://evil.example' },
        /another site \(Origin: https:\/\/evil\.example\)/,
      ],
      ['Origin: null', { csrf, name: 'x' }, { origin: 'null' }, /Origin: null/],
      [
        'Sec-Fetch-Site: cross-site',
        { csrf, name: 'x' },
        { 'sec-fetch-site': 'cross-site' },
        /Sec-Fetch-Site: cross-site/,
      ],
      [
        'a sibling host (same-site)',
        { csrf, name: 'x' },
        { 'sec-fetch-site': 'same-site', origin: 'http://app.twinbox.test' },
        /another site \(Origin: http:\/\/app\.twinbox\.test\)/,
      ],
      [
        'Sec-Fetch-Site: same-site without an Origin',
        { csrf, name: 'x' },
        { 'sec-fetch-site': 'same-site', origin: '' },
        /Sec-Fetch-Site: same-site/,
      ],
      ['another port', { csrf, name: 'x' }, { origin: `${ORIGIN}:8443` }, /another site/],
      ['no token', { name: 'x' }, {}, /no form token/],
      ['an empty token', { csrf: '', name: 'x' }, {}, /no form token/],
      ['a wrong token', { csrf: `${csrf.slice(0, -2)}AA`, name: 'x' }, {}, /form token is not this session/],
      ["another session's token", { csrf: other.csrf, name: 'x' }, {}, /form token is not this session/],
      ['no token and no Origin (curl)', { name: 'x' }, { origin: '', 'sec-fetch-site': '' }, /no form token/],
    ];
    for (const [what, form, headers, why] of refusals) {
      const refused = await post(tb, '/settings/api-keys', form, cookie, headers);
      t.equal(refused.status, 403, what);
      t.match(refused.headers['content-type'], /text\/html/);
      t.match(refused.body, /<title>Refused · Twinbox<\/title>/);
      t.match(refused.body, /role="alert"[\s\S]*<p id="detail">[^<]+<\/p>/);
      t.match(refused.body, why, `${what}: says why`);
    }
    t.same(await keysOf(), [], 'no key was made');

    // A cross-site post is refused even when the browser did not send the session cookie along.
    const noCookie = await post(tb, '/settings/api-keys', { name: 'x' }, undefined, {
      origin: 'https://evil.example',
    });
    t.equal(noCookie.status, 403);

    // Sign-in forms of someone signed out: the same origin check.
    for (const [url, form] of [
      ['/login/email', { email: 'victim@example.com' }],
      ['/login/email/verify', { email: 'victim@example.com', code: '123456' }],
      ['/signup', { email: 'new@example.com' }],
      ['/signup/verify', { email: 'new@example.com', code: '123456' }],
      ['/signup/resend', { email: 'new@example.com' }],
    ] as const) {
      const crossSite = await post(tb, url, form, undefined, { origin: 'null' });
      t.equal(crossSite.status, 403, `${url} from Origin: null`);
      t.match(crossSite.body, /Origin: null/);
    }
    t.equal(await tb.store.accounts.count(), 2, 'no account was made');

    // Sign out is a form too.
    const logoutForged = await post(tb, '/logout', {}, cookie);
    t.equal(logoutForged.status, 403, 'sign-out without the token');
    const logoutCrossSite = await post(tb, '/logout', { csrf }, cookie, { 'sec-fetch-site': 'cross-site' });
    t.equal(logoutCrossSite.status, 403);

    // Revoking another account's key by a forged post: refused before anything is looked up.
    const { record } = await tb.apiKeys.issue(account.id, 'k');
    const forgedRevoke = await post(tb, `/settings/api-keys/${record.id}/revoke`, {}, cookie, {
      origin: 'https://evil.example',
    });
    t.equal(forgedRevoke.status, 403);
    t.equal((await keysOf())[0]!.revoked_at, null, 'still active');

    // The same forms from the page itself pass.
    const made = await post(tb, '/settings/api-keys', { csrf, name: 'ok' }, cookie);
    t.equal(made.status, 201);
  },
);

t.test(
  'API keys: created and shown once (escaped), listed with last use, revoked after a confirmation',
  async (t) => {
    const tb = await startIdentityTwinbox(t);
    const { account, cookie, csrf } = await signedIn(tb, 'keys@example.com');
    const other = await signedIn(tb, 'other@example.com');

    const empty = await get(tb, '/settings/api-keys', cookie);
    t.match(empty.body, 'No API keys yet.');
    t.match(empty.body, '<label for="key-name">Name</label>');

    const created = await post(tb, '/settings/api-keys', { csrf, name: attack }, cookie);
    t.equal(created.status, 201);
    const key = /id="new-key" aria-labelledby="new-key-label">([^<]+)</.exec(created.body)![1]!;
    t.match(key, /^twinbox_sk_/);
    t.match(created.body, escaped, 'the name is escaped');
    t.notMatch(created.body, '<script>alert');
    t.match(
      created.body,
      /<button type="button" class="secondary" data-copy="new-key"[^>]* hidden>/,
      'copy button, for script to show',
    );
    t.match(created.body, '<script src="/assets/copy.js" defer></script>');
    const script = await get(tb, '/assets/copy.js');
    t.equal(script.status, 200);
    t.match(script.headers['content-type'], /text\/javascript/);
    t.match(script.body, 'navigator.clipboard');

    const list = await get(tb, '/settings/api-keys', cookie);
    t.notMatch(list.body, key, 'the key is shown once');
    t.match(list.body, `<code>${key.slice(0, 'twinbox_sk_'.length + 4)}…</code>`, 'its prefix is listed');
    t.match(list.body, /<td><span class="muted">never<\/span><\/td>/, 'not used yet');

    // The key works for the API, and its use shows up.
    const me = await send(tb, 'GET', '/me', undefined, { token: key });
    t.equal(me.status, 200);
    let used = '';
    for (let i = 0; i < 200 && !used; i++) {
      const [record] = await tb.apiKeys.list(account.id);
      used = record!.last_used_at ?? '';
      if (!used) await new Promise((resolve) => setTimeout(resolve, 25));
    }
    t.ok(used, 'last use recorded');
    const listed = await get(tb, '/settings/api-keys', cookie);
    t.match(listed.body, `<time datetime="${used}">`);

    const [record] = await tb.apiKeys.list(account.id);
    const confirm = await get(tb, `/settings/api-keys/${record!.id}/revoke`, cookie);
    t.equal(confirm.status, 200);
    t.match(confirm.body, 'This cannot be undone');
    t.match(confirm.body, `action="/settings/api-keys/${record!.id}/revoke"`);
    t.match(confirm.body, `name="csrf" value="${csrf}"`);

    const otherConfirm = await get(tb, `/settings/api-keys/${record!.id}/revoke`, other.cookie);
    t.equal(otherConfirm.status, 404, "another account's key is not found");
    t.match(otherConfirm.body, /<p id="detail">You have no API key with this id\.<\/p>/);
    const otherRevoke = await post(
      tb,
      `/settings/api-keys/${record!.id}/revoke`,
      { csrf: other.csrf },
      other.cookie,
    );
    t.equal(otherRevoke.status, 404);
    t.equal((await tb.apiKeys.list(account.id))[0]!.revoked_at, null);

    const revoked = await post(tb, `/settings/api-keys/${record!.id}/revoke`, { csrf }, cookie);
    t.equal(revoked.status, 303);
    t.equal(revoked.location, `/settings/api-keys?revoked=${record!.id}`);
    const after = await get(tb, revoked.location!, cookie);
    t.match(after.body, /Revoked the key <strong>[^<]+<\/strong>/);
    t.match(after.body, 'refused from now on');
    t.notMatch(after.body, 'danger-link', 'no revoke link left');
    t.equal((await send(tb, 'GET', '/me', undefined, { token: key })).status, 401, 'the API refuses it');
    const confirmAgain = await get(tb, `/settings/api-keys/${record!.id}/revoke`, cookie);
    t.match(confirmAgain.body, 'was revoked');

    const signedOut = await post(tb, `/settings/api-keys/${record!.id}/revoke`, { csrf });
    t.equal(signedOut.status, 302, 'signed out: to sign in, then back to the confirmation');
    t.equal(
      signedOut.location,
      `/login?next=${encodeURIComponent(`/settings/api-keys/${record!.id}/revoke`)}`,
    );
  },
);

t.test('integrations: not connected shows the connect link; a connect error is shown escaped', async (t) => {
  const tb = await startIdentityTwinbox(t);
  const { cookie } = await signedIn(tb, 'int@example.com');
  const page = await get(
    tb,
    `/integrations?error=github_already_connected&detail=${encodeURIComponent(attack)}`,
    cookie,
  );
  t.equal(page.status, 200);
  t.match(page.body, 'Not connected.');
  t.match(page.body, 'href="/auth/github/connect"');
  t.match(page.body, escaped);
  t.notMatch(page.body, '<img');
  t.match(page.body, 'aria-current="page">Integrations');
});
