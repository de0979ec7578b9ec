import t, { type Test } from 'tap';
import { startGitHubTwin, type StandaloneGitHubTwin } from '../../examples/github-twin.ts';
import { CookieBrowser } from './browser.ts';
import { mailTo, post, send, signUpVerified, startIdentityTwinbox, type IdentityTwinbox } from './helpers.ts';

const CLIENT_ID = 'Iv1.twinbox-login';
const CLIENT_SECRET = 'twinbox-login-secret-123';

interface Rig {
  gh: StandaloneGitHubTwin;
  twinbox: IdentityTwinbox;
  origin: string;
  browser(): CookieBrowser;
  /** Runs a whole login (or connect) in `browser` as GitHub user `login`; returns where it ended. */
  flow(browser: CookieBrowser, login: string, start?: string): Promise<URL>;
  /** Signs a browser in by e-mail (session cookie) for `email`. */
  signedInBrowser(email: string): Promise<{ browser: CookieBrowser; accountId: string; token: string }>;
}

/** The GitHub twin and a Twinbox listening on a real port, wired to each other. */
async function rig(t: Test): Promise<Rig> {
  const gh = await startGitHubTwin({
    seed: {
      users: [
        { login: 'octocat', name: 'Octo', email: 'Octo.Cat@Example.com' },
        { login: 'hubot', name: 'Hubot', email: 'hubot@example.com' },
        { login: 'private-pat' }, // only GitHub's noreply address
      ],
    },
  });
  t.teardown(() => gh.close());
  const twinbox = await startIdentityTwinbox(t, {
    GITHUB_CLIENT_ID: CLIENT_ID,
    GITHUB_CLIENT_SECRET: CLIENT_SECRET,
    GITHUB_OAUTH_URL: gh.baseUrl,
    GITHUB_API_URL: gh.baseUrl,
  });
  await twinbox.server.start();
  const origin = `http://127.0.0.1:${twinbox.server.info.port}`;
  await gh.admin.seed({
    oauth_apps: [
      {
        client_id: CLIENT_ID,
        client_secret: CLIENT_SECRET,
        name: 'Twinbox',
        redirect_uris: [`${origin}/auth/github/callback`],
      },
    ],
  });
  const browser = () => new CookieBrowser(origin);
  return {
    gh,
    twinbox,
    origin,
    browser,
    async flow(b, login, start = '/auth/github/login') {
      await gh.admin.setOAuthAutoApprove(login);
      return b.navigate(`${origin}${start}`);
    },
    async signedInBrowser(email) {
      const signed = await signUpVerified(twinbox, email);
      const b = browser();
      // The verify endpoint's Set-Cookie, as a browser would keep it.
      (b as unknown as { remember(o: string, h: string[]): void }).remember(origin, [
        `twinbox_session=${signed.token}; Path=/; HttpOnly; SameSite=Lax`,
      ]);
      return { browser: b, accountId: signed.account.id, token: signed.token };
    },
  };
}

const identities = (tb: IdentityTwinbox) => tb.store.identities.count();

t.test(
  'login: a new GitHub user gets an account keyed on the numeric id; login again is the same',
  async (t) => {
    const r = await rig(t);
    const b = r.browser();
    const start = await b.get(`${r.origin}/auth/github/login`);
    t.equal(start.status, 302);
    const authorize = new URL(start.location!);
    t.equal(authorize.origin + authorize.pathname, `${r.gh.baseUrl}/login/oauth/authorize`);
    t.equal(authorize.searchParams.get('code_challenge_method'), 'S256');
    t.ok(authorize.searchParams.get('code_challenge'));
    t.match(authorize.searchParams.get('state'), /^[\w-]+\.[\w-]+$/);
    t.match(
      String(start.response.headers.get('set-cookie')),
      /^twinbox_oauth=[\w-]+;(?=.*; HttpOnly)(?=.*; SameSite=Lax)(?=.*; Path=\/auth\/github)/,
    );

    await r.gh.admin.setOAuthAutoApprove('octocat');
    const end = await b.navigate(start.location!);
    t.equal(end.pathname, '/dashboard');
    t.equal(end.search, '', 'no query: the dashboard, where people land after signing in');
    const token = b.cookie('twinbox_session')!;
    t.ok(token, 'signed in: the session cookie is set');
    t.notOk(b.cookie('twinbox_oauth'), 'the state cookie is cleared');
    const me = await send(r.twinbox, 'GET', '/me', undefined, { token });
    t.equal(me.body.account.email, 'octo.cat@example.com', 'the GitHub address, normalized');
    t.equal(me.body.account.email_verified, true);
    t.match(me.body.identities, [{ provider: 'github', login: 'octocat', provider_id: /^\d+$/ }]);

    // Case 31: the PKCE verifier went to GitHub at the exchange.
    const exchanges = (await r.gh.admin.requests()).filter((e) => e.path === '/login/oauth/access_token');
    t.match((exchanges.at(-1)!.request_body as Record<string, string>).code_verifier, /^[\w-]{43,128}$/);

    const again = await r.flow(r.browser(), 'octocat');
    t.equal(again.pathname, '/dashboard');
    t.equal(await r.twinbox.store.accounts.count(), 1);
    t.equal(await identities(r.twinbox), 1);
    t.notMatch(r.twinbox.logs.text(), token, 'the session never reaches the log');
  },
);

t.test(
  'login: links to an e-mail-only account (mixed-case GitHub e-mail), once, with a notice',
  async (t) => {
    const r = await rig(t);
    const local = await signUpVerified(r.twinbox, 'octo.cat@example.com');
    const end = await r.flow(r.browser(), 'octocat');
    t.equal(end.pathname, '/dashboard');
    t.equal(await r.twinbox.store.accounts.count(), 1, 'no second account');
    const [identity] = await r.twinbox.store.identities.findBy('account_id', local.account.id);
    t.match(identity, { provider: 'github', login: 'octocat', provider_key: /^github:\d+$/ });
    const notices = () =>
      mailTo(r.twinbox, 'octo.cat@example.com').then((m) => m.filter((x) => /GitHub/.test(x.subject)));
    t.equal((await notices()).length, 1, 'a notification mail');
    const audits = () =>
      r.twinbox.logs.lines.filter((l) => l.includes('"audit":"github_identity_linked"')).length;
    t.equal(audits(), 1, 'an audit entry');
    await r.flow(r.browser(), 'octocat');
    t.equal((await notices()).length, 1, 'a second login links nothing new');
    t.equal(audits(), 1);
  },
);

t.test(
  'login: an unverified pre-created account is taken over by the verified owner, holding nothing',
  async (t) => {
    const r = await rig(t);
    const pre = await post(r.twinbox, '/auth/email/signup', { email: 'hubot@example.com' });
    const b = r.browser();
    const end = await r.flow(b, 'hubot');
    t.equal(end.pathname, '/dashboard');
    const me = await send(r.twinbox, 'GET', '/me', undefined, { token: b.cookie('twinbox_session')! });
    t.equal(me.body.account.id, pre.body.account.id);
    t.equal(me.body.account.email_verified, true);
    t.same(
      await r.twinbox.apiKeys.list(pre.body.account.id),
      [],
      'no credentials of the pre-creator survive',
    );
  },
);

t.test('login: next survives the trip through GitHub (server-side), never to another site', async (t) => {
  const r = await rig(t);
  const back = await r.flow(r.browser(), 'octocat', '/auth/github/login?next=%2Fsettings%2Fapi-keys%3Fx%3D1');
  t.equal(back.pathname + back.search, '/settings/api-keys?x=1', 'back on the page that asked');
  const start = await r.browser().get(`${r.origin}/auth/github/login?next=%2Fsettings%2Fapi-keys`);
  t.notMatch(start.location, 'settings', 'the destination is not sent to GitHub');
  for (const next of ['//evil.example', '/\\evil.example', 'https://evil.example', '/\t/evil.example']) {
    const end = await r.flow(r.browser(), 'octocat', `/auth/github/login?next=${encodeURIComponent(next)}`);
    t.equal(end.origin, r.origin, `next=${JSON.stringify(next)} stays on Twinbox`);
    t.equal(end.pathname, '/dashboard');
  }
  // A failed sign-in goes back to /login with the destination, so the next try still gets there.
  const failed = await r.flow(r.browser(), 'private-pat', '/auth/github/login?next=%2Fintegrations');
  t.equal(failed.pathname, '/login');
  t.equal(failed.searchParams.get('error'), 'github_email_unverified');
  t.equal(failed.searchParams.get('next'), '/integrations');
  // Connect without a session: sign in first, then back to /integrations.
  const anonymous = await r.browser().navigate(`${r.origin}/auth/github/connect`);
  t.equal(anonymous.searchParams.get('next'), '/integrations');
});

t.test('login conflicts redirect to /login with scm_identity_already_linked and detail', async (t) => {
  const r = await rig(t);
  // octocat signs up through GitHub; then an e-mail account hubot@example.com exists with a
  // different GitHub identity (octocat's) connected.
  const owner = await r.signedInBrowser('hubot@example.com');
  const connected = await r.flow(owner.browser, 'octocat', '/auth/github/connect');
  t.equal(connected.searchParams.get('connected'), 'github');
  const before = await identities(r.twinbox);

  // Case 18: hubot's GitHub e-mail matches an account that already has a different GitHub identity.
  const end = await r.flow(r.browser(), 'hubot');
  t.equal(end.pathname, '/login');
  t.equal(end.searchParams.get('error'), 'scm_identity_already_linked');
  t.match(end.searchParams.get('detail'), /already linked to another Twinbox account/);
  t.equal(await identities(r.twinbox), before, 'no identity row written');
  t.equal(await r.twinbox.store.accounts.count(), 1);
});

t.test('login: no usable e-mail (only noreply) is refused with a clear error; nothing created', async (t) => {
  const r = await rig(t);
  const end = await r.flow(r.browser(), 'private-pat');
  t.equal(end.pathname, '/login');
  t.equal(end.searchParams.get('error'), 'github_email_unverified');
  t.match(end.searchParams.get('detail'), /verified primary e-mail/);
  t.equal(await r.twinbox.store.accounts.count(), 0);
});

t.test('login: the identity wins when the GitHub e-mail later changes to another account’s', async (t) => {
  const r = await rig(t);
  const first = r.browser();
  await r.flow(first, 'octocat');
  const original = (
    await send(r.twinbox, 'GET', '/me', undefined, { token: first.cookie('twinbox_session')! })
  ).body.account.id;
  await signUpVerified(r.twinbox, 'someone@example.com');
  // octocat changes the address on GitHub to someone else's.
  const { Octokit } = await import('@octokit/rest');
  await new Octokit({ auth: r.gh.token, baseUrl: r.gh.baseUrl }).request('PATCH /user', {
    email: 'someone@example.com',
  });
  const second = r.browser();
  const end = await r.flow(second, 'octocat');
  t.equal(end.pathname, '/dashboard');
  const me = await send(r.twinbox, 'GET', '/me', undefined, { token: second.cookie('twinbox_session')! });
  t.equal(me.body.account.id, original, 'signed into the original account, not the e-mail owner');
  t.equal(me.body.account.email, 'octo.cat@example.com', 'no re-link');
});

t.test(
  'connect: links, is idempotent, refuses identities and e-mails of other accounts and a second GitHub',
  async (t) => {
    const r = await rig(t);
    const a = await r.signedInBrowser('a@example.com');
    const linked = await r.flow(a.browser, 'octocat', '/auth/github/connect');
    t.equal(linked.pathname, '/integrations');
    t.equal(linked.searchParams.get('connected'), 'github', 'case 22');
    t.notMatch(linked.toString(), a.accountId, 'the account id is never in a URL');
    t.equal(
      (await send(r.twinbox, 'GET', '/me', undefined, { token: a.token })).body.identities[0].login,
      'octocat',
    );

    const again = await r.flow(a.browser, 'octocat', '/auth/github/connect');
    t.equal(again.searchParams.get('connected'), 'github', 'case 23: same identity again is a success');
    t.equal(await identities(r.twinbox), 1);

    const second = await r.flow(a.browser, 'hubot', '/auth/github/connect');
    t.equal(second.pathname, '/integrations');
    t.equal(second.searchParams.get('error'), 'github_already_connected', 'case 26');

    const b = await r.signedInBrowser('b@example.com');
    const taken = await r.flow(b.browser, 'octocat', '/auth/github/connect');
    t.equal(taken.pathname, '/integrations');
    t.equal(taken.searchParams.get('error'), 'scm_identity_already_linked', 'case 24');
    t.match(taken.searchParams.get('detail'), /already linked to another Twinbox account/);

    await signUpVerified(r.twinbox, 'hubot@example.com');
    const emailTaken = await r.flow(b.browser, 'hubot', '/auth/github/connect');
    t.equal(emailTaken.searchParams.get('error'), 'scm_identity_already_linked', 'case 25');
    t.equal(await identities(r.twinbox), 1, 'A unchanged, nothing else linked');

    const anonymous = await r.browser().navigate(`${r.origin}/auth/github/connect`);
    t.equal(anonymous.pathname, '/login');
    t.equal(anonymous.searchParams.get('error'), 'signin_required');
    const withApiKey = await r.twinbox.apiKeys.issue(a.accountId);
    const keyCall = await fetch(`${r.origin}/auth/github/connect`, {
      redirect: 'manual',
      headers: { cookie: `twinbox_session=${withApiKey.key}` },
    });
    t.match(keyCall.headers.get('location'), /\/login\?error=signin_required/, 'an API key is not a session');
  },
);

t.test('state: CSRF, tampering, expiry, reuse, access_denied, injected code, missing scope', async (t) => {
  const r = await rig(t);
  await r.gh.admin.setOAuthAutoApprove('octocat');
  const callbackOf = async (b: CookieBrowser, start: string) => {
    const first = await b.get(`${r.origin}${start}`);
    const atGitHub = await b.get(first.location!);
    return atGitHub.location!; // Twinbox's callback URL with code and state
  };
  const finish = async (b: CookieBrowser, url: string) => b.navigate(url);

  // Case 27: connect started by A in browser 1, finished in browser 2.
  const a = await r.signedInBrowser('a@example.com');
  const stolen = await callbackOf(a.browser, '/auth/github/connect');
  const other = await finish(r.browser(), stolen);
  t.equal(other.searchParams.get('error'), 'invalid_state');
  t.match(other.searchParams.get('detail'), /different browser/);
  t.equal(await identities(r.twinbox), 0, 'nothing linked');
  t.equal(await r.twinbox.store.accounts.count(), 1);

  // Case 28/29: tampered, forged, missing, malformed state.
  for (const mutate of [
    (u: URL) =>
      u.searchParams.set(
        'state',
        u.searchParams.get('state')!.replace(/.$/, (c) => (c === 'A' ? 'B' : 'A')),
      ),
    (u: URL) => u.searchParams.set('state', 'forged.c2lnbmF0dXJl'),
    (u: URL) => u.searchParams.delete('state'),
    (u: URL) => u.searchParams.set('state', 'no-dot'),
  ]) {
    const b = r.browser();
    const url = new URL(await callbackOf(b, '/auth/github/login'));
    mutate(url);
    const end = await finish(b, url.toString());
    t.equal(end.pathname, '/login');
    t.equal(end.searchParams.get('error'), 'invalid_state');
  }

  // Case 29: expired after 10 minutes.
  const slow = r.browser();
  const late = await callbackOf(slow, '/auth/github/login');
  r.twinbox.clock.advance(10 * 60_000 + 1000);
  const expired = await finish(slow, late);
  t.equal(expired.searchParams.get('error'), 'invalid_state');
  t.match(expired.searchParams.get('detail'), /10 minutes/);

  // Case 29: reuse after success.
  const ok = r.browser();
  const once = await callbackOf(ok, '/auth/github/login');
  t.equal((await finish(ok, once)).pathname, '/dashboard');
  const reuse = await finish(ok, once);
  t.equal(reuse.searchParams.get('error'), 'invalid_state');
  t.match(reuse.searchParams.get('detail'), /already used/);
  const accounts = await r.twinbox.store.accounts.count();

  // Case 30: GitHub says access_denied.
  const denied = r.browser();
  const deniedUrl = new URL(await callbackOf(denied, '/auth/github/login'));
  deniedUrl.searchParams.delete('code');
  deniedUrl.searchParams.set('error', 'access_denied');
  const deniedEnd = await finish(denied, deniedUrl.toString());
  t.equal(deniedEnd.searchParams.get('error'), 'access_denied');

  // Case 31: a code from another flow (another PKCE challenge) fails at the exchange.
  const victim = r.browser();
  const flowA = new URL(await callbackOf(victim, '/auth/github/login'));
  const flowB = new URL(await callbackOf(r.browser(), '/auth/github/login'));
  flowA.searchParams.set('code', flowB.searchParams.get('code')!);
  const injected = await finish(victim, flowA.toString());
  t.equal(injected.searchParams.get('error'), 'github_exchange_failed');

  // Case 32: the user trims the scope on the way to GitHub: fail closed.
  const trimmed = r.browser();
  const startAt = await trimmed.get(`${r.origin}/auth/github/login`);
  const authorize = new URL(startAt.location!);
  authorize.searchParams.set('scope', 'read:user');
  const scopeEnd = await trimmed.navigate(authorize.toString());
  t.equal(scopeEnd.searchParams.get('error'), 'github_scope_missing');
  t.equal(await r.twinbox.store.accounts.count(), accounts, 'none of these created an account');
});

t.test('two simultaneous callbacks for one GitHub id: one account, one identity row, no error', async (t) => {
  const r = await rig(t);
  await r.gh.admin.setOAuthAutoApprove('hubot');
  const pending = await Promise.all(
    Array.from({ length: 4 }, async () => {
      const b = r.browser();
      const first = await b.get(`${r.origin}/auth/github/login`);
      const atGitHub = await b.get(first.location!);
      return { b, url: atGitHub.location! };
    }),
  );
  const ends = await Promise.all(pending.map(({ b, url }) => b.navigate(url)));
  t.same(
    ends.map((e) => `${e.pathname} ${e.searchParams.get('detail') ?? ''}`.trim()),
    ['/dashboard', '/dashboard', '/dashboard', '/dashboard'],
  );
  t.equal(await identities(r.twinbox), 1);
  t.equal(await r.twinbox.store.accounts.count(), 1);
});
