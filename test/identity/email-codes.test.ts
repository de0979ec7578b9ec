import t from 'tap';
import { stat } from 'node:fs/promises';
import { readOutbox } from '../../server/mail/outbox.ts';
import { recordsAtRest, storeTextAtRest } from '../helpers/store-at-rest.ts';
import {
  ONE_ACCOUNT,
  latestCode,
  mailTo,
  outboxDir,
  post,
  send,
  signUpVerified,
  startIdentityTwinbox,
} from './helpers.ts';

t.test('sign-up: 201 unverified account, code mailed to the outbox (0600), never logged', async (t) => {
  const twinbox = await startIdentityTwinbox(t);
  const signup = await post(twinbox, '/auth/email/signup', { email: '  New.User@Example.COM ' });
  t.equal(signup.status, 201);
  t.match(signup.body.account, { email: 'new.user@example.com', email_verified: false, plan: 'free' });
  const [message] = await readOutbox(outboxDir(twinbox));
  t.equal(message!.to, 'new.user@example.com', 'mailed to the normalized address, not the raw input');
  t.equal((await stat(message!.file)).mode & 0o777, 0o600);
  const code = await latestCode(twinbox, 'new.user@example.com');
  t.match(code, /^\d{6}$/);
  t.notMatch(twinbox.logs.text(), code, 'the code is not in the log');

  for (const email of ['new.user@example.com', 'NEW.USER@example.com']) {
    const again = await post(twinbox, '/auth/email/signup', { email });
    t.equal(again.status, 409, 'an account exists, verified or not');
    t.equal(again.body.detail, ONE_ACCOUNT);
  }

  const verified = await post(twinbox, '/auth/email-verification/verify', {
    email: 'new.user@example.com',
    code,
  });
  t.equal(verified.status, 200);
  t.equal(verified.body.account.email_verified, true);
  t.equal(verified.body.account.id, signup.body.account.id, 'the signed-up account, not a second one');
  t.match(String(verified.headers['set-cookie']), /twinbox_session=.+HttpOnly.*SameSite=Lax/);
  const me = await send(twinbox, 'GET', '/me', undefined, { token: verified.body.token });
  t.equal(me.status, 200);
  t.equal(me.body.token_type, 'session');
  t.equal(await twinbox.store.accounts.count(), 1);
});

t.test('codes are stored only as HMAC hashes', async (t) => {
  const twinbox = await startIdentityTwinbox(t);
  await post(twinbox, '/auth/email/signup', { email: 'hash@example.com' });
  const code = await latestCode(twinbox, 'hash@example.com');
  // What a restart would load (record files and the store's journal), and every byte the store holds.
  const rows = await recordsAtRest(twinbox.dataDir, 'verification_codes');
  t.equal(rows.length, 1);
  t.notMatch(rows[0], new RegExp(`"${code}"|:${code}`), 'the code is not in the row');
  t.notMatch(
    await storeTextAtRest(twinbox.dataDir),
    new RegExp(`"${code}"|:${code}`),
    'nor anywhere in the store',
  );
  t.match(JSON.parse(rows[0]!), { purpose: 'verify', attempts: 0, code_hash: /^[0-9a-f]{64}$/ });
});

t.test('pre-account-takeover: an unverified account holds no session and no API key', async (t) => {
  const twinbox = await startIdentityTwinbox(t);
  const signup = await post(twinbox, '/auth/email/signup', { email: 'victim@example.com' });
  const id = signup.body.account.id as string;
  await t.rejects(twinbox.apiKeys.issue(id), { message: /Verify the e-mail/ });
  t.same(await twinbox.store.apiKeys.findBy('account_id', id), []);
  // Even a correctly signed token for the account is refused while it is unverified.
  const forged = await twinbox.sessions.issue(id);
  t.equal((await send(twinbox, 'GET', '/me', undefined, { token: forged })).status, 401);
  t.equal((await post(twinbox, '/api-keys', { name: 'x' }, { token: forged })).status, 401);
  // The real owner proves the address and gets the account, which holds nothing of anyone else's.
  const code = await latestCode(twinbox, 'victim@example.com');
  const verified = await post(twinbox, '/auth/email-verification/verify', {
    email: 'victim@example.com',
    code,
  });
  t.equal(verified.status, 200);
  t.same(await twinbox.apiKeys.list(id), []);
});

t.test(
  'verification: anonymous request/verify creates one account; 409 once the e-mail is taken',
  async (t) => {
    const twinbox = await startIdentityTwinbox(t);
    // Case 1: two spellings are one address; the second request replaces the first code.
    t.equal(
      (await post(twinbox, '/auth/email-verification/request', { email: '  Alice@Example.COM ' })).status,
      202,
    );
    const first = await latestCode(twinbox, 'alice@example.com');
    twinbox.clock.advance(61_000);
    t.equal(
      (await post(twinbox, '/auth/email-verification/request', { email: 'alice@example.com' })).status,
      202,
    );
    const second = await latestCode(twinbox, 'alice@example.com', 1);
    if (first !== second) {
      const stale = await post(twinbox, '/auth/email-verification/verify', {
        email: 'alice@example.com',
        code: first,
      });
      t.equal(stale.status, 400, 'the first code no longer works');
      t.equal(stale.body.code, 'invalid_code');
    }
    const ok = await post(twinbox, '/auth/email-verification/verify', {
      email: 'ALICE@example.com',
      code: second,
    });
    t.equal(ok.status, 200);
    t.match(ok.body.account, { email: 'alice@example.com', email_verified: true });
    t.equal(await twinbox.store.accounts.count(), 1);

    twinbox.clock.advance(61_000);
    const request = await post(twinbox, '/auth/email-verification/request', { email: 'alice@example.com' });
    t.equal(request.status, 409);
    t.equal(request.body.detail, ONE_ACCOUNT);
    const verify = await post(twinbox, '/auth/email-verification/verify', {
      email: 'alice@example.com',
      code: '123456',
    });
    t.equal(verify.status, 409);
    t.equal(verify.body.detail, ONE_ACCOUNT);
    t.same(Object.keys(verify.body).sort(), ['code', 'detail', 'error', 'message', 'statusCode']);
  },
);

t.test(
  'verification with a session: the address of another account is 409; a free one moves the account',
  async (t) => {
    const twinbox = await startIdentityTwinbox(t);
    const a = await signUpVerified(twinbox, 'a@example.com');
    await post(twinbox, '/auth/email/signup', { email: 'b@example.com' }); // unverified B
    const taken = await post(
      twinbox,
      '/auth/email-verification/request',
      { email: 'b@example.com' },
      { token: a.token },
    );
    t.equal(taken.status, 409, 'an unverified account is still another account to a signed-in caller');
    t.equal(taken.body.detail, ONE_ACCOUNT);
    const moved = await post(
      twinbox,
      '/auth/email-verification/request',
      { email: 'a2@example.com' },
      { token: a.token },
    );
    t.equal(moved.status, 202);
    const code = await latestCode(twinbox, 'a2@example.com');
    const anonymous = await post(twinbox, '/auth/email-verification/verify', {
      email: 'a2@example.com',
      code,
    });
    t.equal(anonymous.status, 400, "a signed-in caller's code is bound to that account");
    twinbox.clock.advance(61_000);
    await post(twinbox, '/auth/email-verification/request', { email: 'a2@example.com' }, { token: a.token });
    const code2 = await latestCode(twinbox, 'a2@example.com', 1);
    const done = await post(
      twinbox,
      '/auth/email-verification/verify',
      { email: 'a2@example.com', code: code2 },
      { token: a.token },
    );
    t.equal(done.status, 200);
    t.match(done.body.account, { id: a.account.id, email: 'a2@example.com' });
    const { key } = await twinbox.apiKeys.issue(a.account.id);
    const withKey = await post(
      twinbox,
      '/auth/email-verification/request',
      { email: 'z@example.com' },
      { token: key },
    );
    t.equal(withKey.status, 401, 'the optional session is a session: an API key is refused');
  },
);

t.test('codes: 5 wrong attempts burn the code; expiry; replay; concurrent use; binding', async (t) => {
  const twinbox = await startIdentityTwinbox(t);
  const verify = (email: string, code: string) =>
    post(twinbox, '/auth/email-verification/verify', { email, code });
  const wrong = (code: string) => String((Number(code) + 1) % 1_000_000).padStart(6, '0');

  // Case 8
  await post(twinbox, '/auth/email/signup', { email: 'burn@example.com' });
  const burn = await latestCode(twinbox, 'burn@example.com');
  for (let i = 0; i < 5; i++) t.equal((await verify('burn@example.com', wrong(burn))).status, 400);
  const sixth = await verify('burn@example.com', burn);
  t.equal(sixth.status, 400, 'the right code fails after five wrong ones');
  t.equal(sixth.body.code, 'invalid_code');

  // Case 9: expiry at 10 minutes + 1 s
  await post(twinbox, '/auth/email/signup', { email: 'late@example.com' });
  const late = await latestCode(twinbox, 'late@example.com');
  twinbox.clock.advance(10 * 60_000 + 1000);
  t.equal((await verify('late@example.com', late)).status, 400, 'expired');

  // Case 9: two concurrent verifies with the right code, then a replay
  await post(twinbox, '/auth/email/signup', { email: 'race@example.com' });
  const race = await latestCode(twinbox, 'race@example.com');
  const results = await Promise.all([verify('race@example.com', race), verify('race@example.com', race)]);
  // The loser is refused as a used code (400), or, when the winner has already verified the address by
  // the time it is checked (the usual order on PostgreSQL), as an address now taken (409).
  const statuses = results.map((r) => r.status).sort();
  t.equal(statuses[0], 200, 'one success');
  t.ok(statuses[1] === 400 || statuses[1] === 409, `exactly one success (the other: ${statuses[1]})`);
  t.equal((await verify('race@example.com', race)).status, 409, 'replay: the address is now verified');

  // Case 10: a code for A does not verify B; a `verify` code does not sign in
  await post(twinbox, '/auth/email/signup', { email: 'codea@example.com' });
  await post(twinbox, '/auth/email/signup', { email: 'codeb@example.com' });
  const codeA = await latestCode(twinbox, 'codea@example.com');
  t.equal((await verify('codeb@example.com', codeA)).status, 400);
  t.equal(
    (await post(twinbox, '/auth/email/login/verify', { email: 'codea@example.com', code: codeA })).status,
    400,
  );
  t.equal(
    (await verify('codea@example.com', codeA)).status,
    200,
    'still good for its own address and purpose',
  );

  t.equal((await verify('codea@example.com', 'abcdef')).status, 400, 'not six digits');
});

t.test('rate limits: 429 with Retry-After per e-mail and per client IP (also on 409s)', async (t) => {
  const twinbox = await startIdentityTwinbox(t, { TWINBOX_AUTH_IP_LIMIT: '4' });
  const first = await post(twinbox, '/auth/email-verification/request', { email: 'r@example.com' });
  t.equal(first.status, 202);
  const second = await post(twinbox, '/auth/email-verification/request', { email: ' R@example.com' });
  t.equal(second.status, 429);
  t.equal(second.body.code, 'rate_limited');
  t.ok(Number(second.headers['retry-after']) > 0 && Number(second.headers['retry-after']) <= 60);
  t.equal(
    (await post(twinbox, '/auth/email/login', { email: 'r@example.com' })).status,
    429,
    'one window per address',
  );
  twinbox.clock.advance(60_000);
  t.equal((await post(twinbox, '/auth/email-verification/request', { email: 'r@example.com' })).status, 202);

  // Case 11/12: one IP, different addresses, including answers that would be 409.
  await signUpVerified(twinbox, 'taken@example.com');
  const ip = '192.0.2.7';
  const statuses: number[] = [];
  for (const email of [
    'p1@example.com',
    'taken@example.com',
    'p2@example.com',
    'taken@example.com',
    'p3@example.com',
  ]) {
    statuses.push((await post(twinbox, '/auth/email-verification/request', { email }, { ip })).status);
  }
  t.same(statuses, [202, 409, 202, 409, 429]);
  const limited = await post(twinbox, '/auth/email/signup', { email: 'p4@example.com' }, { ip });
  t.equal(limited.status, 429);
  t.ok(Number(limited.headers['retry-after']) > 0);
});

t.test('e-mail sign-in: same 202 for unknown addresses; code signs in', async (t) => {
  const twinbox = await startIdentityTwinbox(t);
  const known = await signUpVerified(twinbox, 'known@example.com');
  twinbox.clock.advance(61_000);
  const unknown = await post(twinbox, '/auth/email/login', { email: 'nobody@example.com' });
  const login = await post(twinbox, '/auth/email/login', { email: 'Known@Example.com' });
  t.equal(unknown.status, 202);
  t.equal(login.status, 202);
  t.same(unknown.body, login.body);
  const code = await latestCode(twinbox, 'known@example.com', 1);
  await new Promise((resolve) => setTimeout(resolve, 100));
  t.same(
    await mailTo(twinbox, 'nobody@example.com'),
    [],
    'nothing is mailed to an address without an account',
  );
  const wrongPurpose = await post(twinbox, '/auth/email-verification/verify', {
    email: 'known@example.com',
    code,
  });
  t.equal(wrongPurpose.status, 409);
  const signedIn = await post(twinbox, '/auth/email/login/verify', { email: 'known@example.com', code });
  t.equal(signedIn.status, 200);
  t.equal(signedIn.body.account.id, known.account.id);
  t.equal((await send(twinbox, 'GET', '/me', undefined, { token: signedIn.body.token })).status, 200);
  const replay = await post(twinbox, '/auth/email/login/verify', { email: 'known@example.com', code });
  t.equal(replay.status, 400);
  const none = await post(twinbox, '/auth/email/login/verify', {
    email: 'nobody@example.com',
    code: '000000',
  });
  t.equal(none.status, 400);
  t.same(none.body, replay.body, 'an unknown address and a used code answer alike');
});
