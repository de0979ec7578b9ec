/**
 * OAuth state, rate-limit counters, session revocation and the keys behind them live in the Store, so
 * every Twinbox process sharing it sees the same (issue 14). Each case runs twice: on two Twinbox
 * processes' worth of parts (two Twinboxes, each with its own data dir) on one PostgreSQL schema, and on
 * one Twinbox on the store TWINBOX_TEST_STORE picks (lowdb unless it says postgres), where "A" and "B"
 * are the same process.
 */
import t, { type Test } from 'tap';
import { startGitHubTwin } from '../../examples/github-twin.ts';
import { hourOf } from '../../server/store/expiry.ts';
import { freshSchema, postgresSkip } from '../helpers/postgres.ts';
import {
  freshIp,
  latestCode,
  post,
  send,
  signUpVerified,
  startIdentityTwinbox,
  type IdentityTwinbox,
} from './helpers.ts';
import { browse, sessionOf } from '../web/helpers.ts';

const CLIENT_ID = 'Iv1.twinbox-shared';
const CLIENT_SECRET = 'twinbox-shared-secret-123';
/** Both processes are behind one public name, as behind a load balancer. */
const PUBLIC_URL = 'http://twinbox.test';

interface Pair {
  a: IdentityTwinbox;
  b: IdentityTwinbox;
  /** Moves the time of both processes' identity flows forward. */
  advance(ms: number): void;
}

type Start = (t: Test, env?: Record<string, string>) => Promise<Pair>;

/** Two Twinboxes on one fresh PostgreSQL schema, each on its own data dir. */
const twoProcesses: Start = async (t, env = {}) => {
  const { url } = await freshSchema();
  const a = await startIdentityTwinbox(t, { ...env, TWINBOX_DATABASE_URL: url });
  const b = await startIdentityTwinbox(t, { ...env, TWINBOX_DATABASE_URL: url });
  t.not(a.dataDir, b.dataDir, 'each process has its own data dir');
  return {
    a,
    b,
    advance: (ms) => {
      a.clock.advance(ms);
      b.clock.advance(ms);
    },
  };
};

/** One Twinbox standing for both. */
const oneProcess: Start = async (t, env = {}) => {
  const a = await startIdentityTwinbox(t, env);
  return { a, b: a, advance: (ms) => a.clock.advance(ms) };
};

const me = (tb: IdentityTwinbox, token: string) => send(tb, 'GET', '/me', undefined, { token });

async function cases(t: Test, start: Start): Promise<void> {
  t.test('a session signed by A is accepted by B; signing out on A rejects it on B at once', async (t) => {
    const { a, b } = await start(t);
    const signed = await signUpVerified(a, `out-${Date.now()}@example.com`);
    t.equal((await me(b, signed.token)).status, 200, 'B accepts the JWT A signed');
    const other = await a.sessions.issue(signed.account.id);

    const out = await post(a, '/auth/logout', undefined, { token: signed.token });
    t.equal(out.status, 204);
    for (const [name, tb] of [
      ['A', a],
      ['B', b],
    ] as const) {
      const refused = await me(tb, signed.token);
      t.equal(refused.status, 401, `${name} refuses the signed-out session`);
      t.match(refused.body.detail, /Invalid or expired session token/);
    }
    t.equal((await me(b, other)).status, 200, 'another session of the same account stays');
    t.equal((await post(b, '/auth/logout', undefined, { token: signed.token })).status, 204, 'again: 204');
    t.equal(await b.store.revokedSessions.count(), 1, 'one revocation, kept once');
  });

  t.test('the web sign-out on B revokes the cookie session A issued', async (t) => {
    const { a, b } = await start(t);
    const account = await a.accounts.create(`web-${Date.now()}@example.com`, 'free');
    const session = await sessionOf(a, account.id);
    // The form token A's page carries is good on B: the key is shared.
    const out = await browse(b, 'POST', '/logout', { cookie: session.cookie, form: { csrf: session.csrf } });
    t.equal(out.status, 303);
    t.equal(out.location, '/login?signed_out=1');
    const after = await browse(a, 'GET', '/dashboard', { cookie: session.cookie });
    t.equal(after.status, 302, 'A sends the old cookie to sign in');
    t.match(after.location, /^\/login\?next=/);
    const token = session.cookie.slice('twinbox_session='.length);
    t.equal((await me(a, token)).status, 401, 'and refuses it as a bearer');
  });

  t.test('a code mailed by A is accepted by B', async (t) => {
    const { a, b } = await start(t);
    const email = `code-${Date.now()}@example.com`;
    t.equal((await post(a, '/auth/email/signup', { email })).status, 201);
    const code = await latestCode(a, email);
    const verified = await post(b, '/auth/email-verification/verify', { email, code });
    t.equal(verified.status, 200, JSON.stringify(verified.body));
  });

  t.test('rate limits count the hits on every process', async (t) => {
    const { a, b } = await start(t, { TWINBOX_AUTH_IP_LIMIT: '3' });
    const ip = freshIp();
    const ask = (tb: IdentityTwinbox, n: number) =>
      post(tb, '/auth/email/login', { email: `limit-${n}-${Date.now()}@example.com` }, { ip });
    t.equal((await ask(a, 1)).status, 202);
    t.equal((await ask(b, 2)).status, 202);
    t.equal((await ask(a, 3)).status, 202);
    const fourth = await ask(b, 4);
    t.equal(fourth.status, 429, 'the fourth hit from one address, on B, is over the limit of 3');
    t.match(fourth.body.detail, /Too many requests from this address/);
    t.ok(Number(fourth.headers['retry-after']) >= 1, 'with Retry-After');
    t.equal((await post(a, '/auth/email/login', { email: 'x@example.com' }, { ip: freshIp() })).status, 202);

    const email = `once-${Date.now()}@example.com`;
    t.equal((await post(a, '/auth/email/login', { email })).status, 202);
    const again = await post(b, '/auth/email/login', { email });
    t.equal(again.status, 429, 'one code mail a minute per address, whichever process is asked');
    t.match(again.body.detail, /less than a minute ago/);
  });

  t.test('a GitHub sign-in started on A finishes on B, once', async (t) => {
    const gh = await startGitHubTwin({ seed: { users: [{ login: 'octocat', email: 'octo@example.com' }] } });
    t.teardown(() => gh.close());
    const env = {
      GITHUB_CLIENT_ID: CLIENT_ID,
      GITHUB_CLIENT_SECRET: CLIENT_SECRET,
      GITHUB_OAUTH_URL: gh.baseUrl,
      GITHUB_API_URL: gh.baseUrl,
      TWINBOX_PUBLIC_URL: PUBLIC_URL,
    };
    const { a, b } = await start(t, env);
    await gh.admin.seed({
      oauth_apps: [
        {
          client_id: CLIENT_ID,
          client_secret: CLIENT_SECRET,
          name: 'Twinbox',
          redirect_uris: [`${PUBLIC_URL}/auth/github/callback`],
        },
      ],
    });
    await gh.admin.setOAuthAutoApprove('octocat');

    const begun = await a.server.inject({ method: 'GET', url: '/auth/github/login?next=/integrations' });
    t.equal(begun.statusCode, 302);
    const binding = /twinbox_oauth=([^;]+)/.exec(String(begun.headers['set-cookie']))?.[1];
    t.ok(binding, 'the browser binding cookie');
    const approved = await fetch(begun.headers.location as string, { redirect: 'manual' });
    const callback = new URL(approved.headers.get('location')!);
    t.equal(callback.origin + callback.pathname, `${PUBLIC_URL}/auth/github/callback`);

    // The load balancer sends GitHub's redirect to the other process.
    const finish = (tb: IdentityTwinbox) =>
      tb.server.inject({
        method: 'GET',
        url: `${callback.pathname}${callback.search}`,
        headers: { cookie: `twinbox_oauth=${binding}` },
      });
    const done = await finish(b);
    t.equal(done.statusCode, 302);
    t.equal(done.headers.location, `${PUBLIC_URL}/integrations`, 'landed on its next');
    const session = /twinbox_session=([^;]+)/.exec(String(done.headers['set-cookie']))?.[1];
    t.ok(session, 'signed in');
    t.equal((await me(a, session!)).status, 200, 'the session B issued is good on A');

    const replay = await finish(a);
    t.equal(replay.statusCode, 302);
    const failed = new URL(replay.headers.location as string);
    t.equal(failed.searchParams.get('error'), 'invalid_state', 'a state is used once, on any process');
    t.match(failed.searchParams.get('detail'), /already used/);
  });

  t.test('lapsed records are swept, by any process', async (t) => {
    const { a, b, advance } = await start(t, { TWINBOX_AUTH_IP_LIMIT: '5' });
    const signed = await signUpVerified(a, `sweep-${Date.now()}@example.com`);
    t.equal((await post(a, '/auth/logout', undefined, { token: signed.token })).status, 204);
    await post(a, '/auth/email/login', { email: `sweep2-${Date.now()}@example.com` });
    const flow = await a.identity.github.states.start({ purpose: 'login' });
    t.ok(flow.state);
    const counts = async () => ({
      revoked: await b.store.revokedSessions.count(),
      states: await b.store.oauthStates.count(),
      limits: (await b.store.rateLimits.count()) > 0,
    });
    t.same(await counts(), { revoked: 1, states: 1, limits: true });

    t.equal(await b.identity.sweeper.sweep(), 0, 'nothing has lapsed yet');
    t.same(await counts(), { revoked: 1, states: 1, limits: true });

    // Past the session's expiry (a day by default), and so past every flow and rate window.
    advance(25 * 3_600_000);
    t.ok((await b.identity.sweeper.sweep()) >= 3, 'the revocation, the flow and the counters');
    t.same(await counts(), { revoked: 0, states: 0, limits: false });
    const cursor = await a.store.sweepCursors.get('revoked_sessions');
    t.equal(cursor?.swept_before, hourOf(b.clock.now()), 'the sweep is remembered for every process');
  });
}

t.test('one Twinbox (the store TWINBOX_TEST_STORE picks)', (t) => cases(t, oneProcess));

const skip = await postgresSkip();
t.test('two Twinbox processes on one PostgreSQL', { skip }, (t) => cases(t, twoProcesses));
