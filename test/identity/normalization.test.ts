import t from 'tap';
import {
  ONE_ACCOUNT,
  latestCode,
  mailTo,
  post,
  send,
  signUpVerified,
  startIdentityTwinbox,
  type Reply,
} from './helpers.ts';
import type { IdentityTwinbox } from './helpers.ts';
import { normalizeEmail } from '../../server/identity/email.ts';

/**
 * Every entry point that takes an address, as a function of that address. The GitHub callback's use
 * of the same normalizer is covered in github.test.ts (mixed-case GitHub e-mail links the account).
 */
const entryPoints: Record<string, (tb: IdentityTwinbox, email: string) => Promise<Reply>> = {
  signup: (tb, email) => post(tb, '/auth/email/signup', { email }),
  'verification/request': (tb, email) => post(tb, '/auth/email-verification/request', { email }),
  'verification/verify': (tb, email) =>
    post(tb, '/auth/email-verification/verify', { email, code: '000000' }),
  'email/login': (tb, email) => post(tb, '/auth/email/login', { email }),
  'email/login/verify': (tb, email) => post(tb, '/auth/email/login/verify', { email, code: '000000' }),
};

t.test('look-alike spellings of an existing address are that address at every entry point', async (t) => {
  const twinbox = await startIdentityTwinbox(t);
  await signUpVerified(twinbox, 'alice@example.com');
  await signUpVerified(twinbox, 'kate@example.com');
  const variants: [string, string][] = [
    ['ALICE@example.com', 'alice@example.com'],
    ['alice@EXAMPLE.com', 'alice@example.com'],
    ['  alice@example.com\t', 'alice@example.com'],
    ['\u200Balice@example.com', 'alice@example.com'],
    ['ａｌｉｃｅ@example.com', 'alice@example.com'],
    ['alic\u00ADe@example.com', 'alice@example.com'],
    ['\u212Aate@example.com', 'kate@example.com'],
  ];
  for (const [input, canonical] of variants) {
    t.equal(normalizeEmail(input), canonical, JSON.stringify(input));
    const signup = await entryPoints.signup!(twinbox, input);
    t.equal(signup.status, 409, `signup ${JSON.stringify(input)}`);
    const request = await entryPoints['verification/request']!(twinbox, input);
    t.equal(request.status, 409, `request ${JSON.stringify(input)}`);
    t.equal(request.body.detail, ONE_ACCOUNT);
    const verify = await entryPoints['verification/verify']!(twinbox, input);
    t.equal(verify.status, 409, `verify ${JSON.stringify(input)}`);
    t.equal(verify.body.detail, ONE_ACCOUNT);
  }
  t.equal(await twinbox.store.accounts.count(), 2, 'never a second account');

  // Sign-in: the code goes to the stored address, never to the raw input.
  twinbox.clock.advance(61_000);
  const before = (await mailTo(twinbox, 'kate@example.com')).length;
  t.equal((await entryPoints['email/login']!(twinbox, '\u212Aate@Example.com ')).status, 202);
  const code = await latestCode(twinbox, 'kate@example.com', before);
  const signedIn = await post(twinbox, '/auth/email/login/verify', { email: 'KATE@example.com', code });
  t.equal(signedIn.status, 200);
  t.equal(signedIn.body.account.email, 'kate@example.com');
});

t.test('malformed addresses are 400 at every entry point', async (t) => {
  const twinbox = await startIdentityTwinbox(t);
  const invalid = [
    'a＠b.com',
    '"a@b"@c.com',
    'a@b.com,evil.com',
    `${'a'.repeat(64)}@${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(63)}.com`, // 259 characters
    `${'x'.repeat(245)}@example.com`,
    'no-at-sign',
    'two@@example.com',
    '',
  ];
  for (const [name, entry] of Object.entries(entryPoints)) {
    for (const input of invalid) {
      const reply = await entry(twinbox, input);
      t.equal(reply.status, 400, `${name} ${JSON.stringify(input).slice(0, 40)}`);
      t.ok(reply.body.detail);
    }
  }
  t.equal(await twinbox.store.accounts.count(), 0);
});

t.test('IDN domains are stored in punycode; either form is the same account', async (t) => {
  const twinbox = await startIdentityTwinbox(t);
  const signup = await post(twinbox, '/auth/email/signup', { email: 'user@bücher.example' });
  t.equal(signup.status, 201);
  t.equal(signup.body.account.email, 'user@xn--bcher-kva.example');
  const again = await post(twinbox, '/auth/email/signup', { email: 'USER@xn--bcher-kva.example' });
  t.equal(again.status, 409);
  t.equal((await mailTo(twinbox, 'user@xn--bcher-kva.example')).length, 1);
});

t.test('50 concurrent sign-ups of one address: one 201, 49 409, no 500', async (t) => {
  const twinbox = await startIdentityTwinbox(t);
  const replies = await Promise.all(
    Array.from({ length: 50 }, (_, i) =>
      post(twinbox, '/auth/email/signup', { email: i % 2 ? 'Race@Example.com' : ' race@example.com' }),
    ),
  );
  const statuses = replies.map((r) => r.status);
  t.equal(statuses.filter((s) => s === 201).length, 1);
  t.equal(statuses.filter((s) => s === 409).length, 49);
  t.equal(await twinbox.store.accounts.count(), 1);
});

t.test('concurrent verifies of one address by different accounts: one wins, the rest 409', async (t) => {
  const twinbox = await startIdentityTwinbox(t);
  // Each signed-in account holds its own valid code for the same free address (case 6), so the
  // store's unique index is what decides (case 7).
  const holders = [];
  for (let i = 0; i < 8; i++) {
    const { token } = await signUpVerified(twinbox, `holder${i}@example.com`);
    twinbox.clock.advance(61_000);
    const request = await post(
      twinbox,
      '/auth/email-verification/request',
      { email: 'shared@example.com' },
      { token },
    );
    t.equal(request.status, 202);
    holders.push({ token, code: await latestCode(twinbox, 'shared@example.com', i) });
  }
  const replies = await Promise.all(
    holders.map(({ token, code }) =>
      post(twinbox, '/auth/email-verification/verify', { email: 'shared@example.com', code }, { token }),
    ),
  );
  const statuses = replies.map((r) => r.status);
  t.equal(statuses.filter((s) => s === 200).length, 1, JSON.stringify(statuses));
  t.equal(statuses.filter((s) => s === 409).length, 7);
  t.ok(replies.filter((r) => r.status === 409).every((r) => r.body.detail === ONE_ACCOUNT));
  t.equal((await twinbox.store.accounts.findBy('email', 'shared@example.com')).length, 1);
  const me = await send(twinbox, 'GET', '/me', undefined, { token: holders[statuses.indexOf(200)]!.token });
  t.equal(me.body.account.email, 'shared@example.com');
});
