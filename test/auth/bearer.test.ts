import t from 'tap';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { SignJWT, UnsecuredJWT } from 'jose';
import { generateApiKey } from '../../server/auth/api-key-format.ts';
import { call, createUser, startTestTwinbox, createSandbox } from '../helpers/twinbox.ts';
import { storeTextAtRest } from '../helpers/store-at-rest.ts';

const CHALLENGE = /^Bearer realm="twinbox"/;

t.test(
  'missing, malformed, unknown, mistyped and revoked tokens: 401 with a challenge and a detail',
  async (t) => {
    const tb = await startTestTwinbox(t);
    const user = await createUser(tb);
    await tb.apiKeys.revoke(user.id, (await tb.apiKeys.issue(user.id)).record.id);
    const revoked = await tb.apiKeys.issue(user.id);
    await tb.apiKeys.revoke(user.id, revoked.record.id);

    const cases: [string, Record<string, string>, RegExp][] = [
      ['no header', {}, /Missing credentials/],
      ['basic scheme', { authorization: 'Basic dXNlcjpwYXNz' }, /Malformed Authorization header/],
      ['empty bearer', { authorization: 'Bearer ' }, /Malformed Authorization header/],
      ['two tokens', { authorization: `Bearer ${user.key} extra` }, /Malformed Authorization header/],
      ['unknown key', { authorization: `Bearer ${generateApiKey()}` }, /Invalid API key/],
      // The last character changed (a fixed "x" left one key in 62 unchanged: a flaky pass as the owner).
      [
        'bad checksum',
        { authorization: `Bearer ${user.key.slice(0, -1)}${user.key.endsWith('x') ? 'y' : 'x'}` },
        /Invalid API key/,
      ],
      ['revoked key', { authorization: `Bearer ${revoked.key}` }, /Invalid API key/],
      ['garbage', { authorization: 'Bearer not-a-token' }, /Invalid or expired session token/],
    ];
    for (const [name, headers, detail] of cases) {
      const res = await call(tb, { url: '/sandboxes', headers });
      t.equal(res.status, 401, name);
      t.match(res.headers['www-authenticate'], CHALLENGE, `${name}: challenge`);
      t.match(res.body.detail, detail, `${name}: detail`);
      t.equal(res.body.message, res.body.detail, `${name}: message and detail agree`);
      t.equal(res.body.code, 'unauthorized');
    }
    t.equal((await call(tb, { url: '/sandboxes', token: user.key })).status, 200, 'the live key still works');
  },
);

t.test('revocation takes effect on the very next request', async (t) => {
  const tb = await startTestTwinbox(t);
  const user = await createUser(tb);
  t.equal((await call(tb, { url: '/sandboxes', token: user.key })).status, 200);
  t.equal(await tb.apiKeys.revoke(user.id, user.keyId), true);
  t.equal((await call(tb, { url: '/sandboxes', token: user.key })).status, 401);
});

t.test("an account cannot revoke another account's key", async (t) => {
  const tb = await startTestTwinbox(t);
  const alice = await createUser(tb);
  const bob = await createUser(tb);
  t.equal(await tb.apiKeys.revoke(alice.id, bob.keyId), false);
  t.equal((await call(tb, { url: '/sandboxes', token: bob.key })).status, 200);
});

t.test('the key is stored only as a hash, and last use is recorded at most once a minute', async (t) => {
  const tb = await startTestTwinbox(t);
  const user = await createUser(tb);
  const stored = await storeTextAtRest(tb.dataDir);
  t.ok(stored.includes(user.keyId), 'the key’s record was read');
  t.notOk(stored.includes(user.key), 'plaintext key not on disk');
  t.notOk(stored.includes(user.key.slice(15, 35)), 'no slice of the key body on disk either');

  t.equal((await tb.store.apiKeys.get(user.keyId))?.last_used_at, null);
  await call(tb, { url: '/sandboxes', token: user.key });
  // The use is recorded in the background, so as not to hold up the request: wait for it, however busy
  // the machine is.
  let first: string | null | undefined = null;
  for (let i = 0; i < 500 && !first; i++) {
    await new Promise((resolve) => setTimeout(resolve, 10));
    first = (await tb.store.apiKeys.get(user.keyId))?.last_used_at;
  }
  t.ok(first, 'last_used_at set');
  await call(tb, { url: '/sandboxes', token: user.key });
  await new Promise((resolve) => setTimeout(resolve, 50));
  t.equal(
    (await tb.store.apiKeys.get(user.keyId))?.last_used_at,
    first,
    'a second use within a minute writes nothing',
  );
});

t.test(
  'JWT sessions: a valid one works; expired, foreign, unsigned or mis-addressed ones do not',
  async (t) => {
    const secret = 'x'.repeat(40);
    const tb = await startTestTwinbox(t, { TWINBOX_JWT_SECRET: secret });
    const user = await createUser(tb);
    const session = await tb.sessions.issue(user.id);
    t.equal((await call(tb, { url: '/sandboxes', token: session })).status, 200);

    const key = new TextEncoder().encode(secret);
    const base = () => new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).setSubject(user.id).setIssuedAt();
    const forged = {
      expired: await base()
        .setIssuer('twinbox')
        .setAudience('twinbox-api')
        .setExpirationTime(Math.floor(Date.now() / 1000) - 10)
        .sign(key),
      wrongAudience: await base().setIssuer('twinbox').setAudience('other').setExpirationTime('1h').sign(key),
      wrongIssuer: await base()
        .setIssuer('evil')
        .setAudience('twinbox-api')
        .setExpirationTime('1h')
        .sign(key),
      noExpiry: await base().setIssuer('twinbox').setAudience('twinbox-api').sign(key),
      otherSecret: await base()
        .setIssuer('twinbox')
        .setAudience('twinbox-api')
        .setExpirationTime('1h')
        .sign(new TextEncoder().encode('y'.repeat(40))),
      HS512: await new SignJWT({})
        .setProtectedHeader({ alg: 'HS512' })
        .setSubject(user.id)
        .setIssuer('twinbox')
        .setAudience('twinbox-api')
        .setExpirationTime('1h')
        .sign(key),
      algNone: new UnsecuredJWT({})
        .setSubject(user.id)
        .setIssuer('twinbox')
        .setAudience('twinbox-api')
        .setExpirationTime('1h')
        .encode(),
      unknownAccount: await base()
        .setSubject('nobody')
        .setIssuer('twinbox')
        .setAudience('twinbox-api')
        .setExpirationTime('1h')
        .sign(key),
    };
    for (const [name, token] of Object.entries(forged)) {
      const res = await call(tb, { url: '/sandboxes', token });
      t.equal(res.status, 401, name);
      t.match(res.body.detail, /Invalid or expired session token/, name);
    }
  },
);

t.test(
  'sessions outlive a restart: the generated secret is kept in the store, not the data dir',
  async (t) => {
    const first = await startTestTwinbox(t);
    const user = await createUser(first);
    const session = await first.sessions.issue(user.id);
    await first.stop();
    const again = await startTestTwinbox(t, {}, { dataDir: first.dataDir });
    t.equal((await call(again, { url: '/sandboxes', token: session })).status, 200);
    t.notOk(existsSync(join(first.dataDir, 'jwt-secret')), 'no secret file of one process');
    const kept = await again.store.serverSecrets.get('jwt');
    t.ok(kept && kept.value.length >= 32, 'one secret in the store, for every process sharing it');
  },
);

t.test('the Authorization header and tokens never reach the log', async (t) => {
  const tb = await startTestTwinbox(t, { LOG_LEVEL: 'trace' });
  const user = await createUser(tb);
  const session = await tb.sessions.issue(user.id);
  await call(tb, { url: '/sandboxes', token: user.key });
  await call(tb, { url: '/sandboxes', token: session });
  await call(tb, { url: '/sandboxes', token: `${user.key}x` });
  await createSandbox(tb, user.key, { repo: 'a/b', branch: 'main' });
  const log = tb.logs.text();
  t.ok(log.length > 0, 'something was logged');
  t.notOk(log.includes(user.key), 'no API key');
  t.notOk(log.includes(user.key.slice(11, 30)), 'no part of the API key');
  t.notOk(log.includes(session), 'no session token');
  t.notOk(log.includes(session.split('.')[2]!), 'no session signature');
  t.match(log, /\[response\] get \/sandboxes 200/, 'requests are logged');
  t.notMatch(log, /authorization/i, 'request headers are not logged at all');
});
