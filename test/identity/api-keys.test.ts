import t from 'tap';
import { API_KEY_PREFIX, hasValidChecksum } from '../../server/auth/api-key-format.ts';
import { send, signUpVerified, startIdentityTwinbox } from './helpers.ts';
import { storeTextAtRest } from '../helpers/store-at-rest.ts';

t.test('API keys: session only, shown once, stored hashed, revocation immediate', async (t) => {
  const twinbox = await startIdentityTwinbox(t);
  const { token, account } = await signUpVerified(twinbox, 'keys@example.com');

  const created = await send(twinbox, 'POST', '/api-keys', { name: 'ci' }, { token });
  t.equal(created.status, 201);
  t.equal(created.headers['cache-control'], 'no-store');
  const key = created.body.key as string;
  t.ok(key.startsWith(API_KEY_PREFIX) && hasValidChecksum(key), 'prefix and checksum');
  t.match(created.body, { name: 'ci', revoked_at: null, last_used_at: null });

  const stored = await storeTextAtRest(twinbox.dataDir);
  t.match(stored, created.body.id, 'the key’s record was read');
  t.notMatch(stored, key, 'the plaintext is not in the store');

  const listed = await send(twinbox, 'GET', '/api-keys', undefined, { token });
  t.equal(listed.status, 200);
  t.equal(listed.body.api_keys.length, 1);
  t.notMatch(JSON.stringify(listed.body), key, 'the key is shown only at creation');

  // The key works where API keys are accepted...
  const me = await send(twinbox, 'GET', '/me', undefined, { token: key });
  t.equal(me.status, 200);
  t.match(me.body, { token_type: 'api_key', account: { id: account.id } });
  // ...but not on the key routes (case 36).
  for (const [method, url] of [
    ['POST', '/api-keys'],
    ['GET', '/api-keys'],
    ['DELETE', `/api-keys/${created.body.id}`],
  ] as const) {
    const reply = await send(twinbox, method, url, method === 'POST' ? { name: 'x' } : undefined, {
      token: key,
    });
    t.equal(reply.status, 401, `${method} ${url} with an API key`);
    t.ok(reply.body.detail);
  }

  const other = await signUpVerified(twinbox, 'other@example.com');
  t.equal(
    (await send(twinbox, 'DELETE', `/api-keys/${created.body.id}`, undefined, { token: other.token })).status,
    404,
    'another account cannot revoke it',
  );
  t.equal((await send(twinbox, 'DELETE', `/api-keys/${created.body.id}`, undefined, { token })).status, 204);
  t.equal(
    (await send(twinbox, 'GET', '/me', undefined, { token: key })).status,
    401,
    'revoked on the next request',
  );
  t.equal((await send(twinbox, 'GET', '/api-keys', undefined)).status, 401);
  t.notMatch(twinbox.logs.text(), key, 'the key never reaches the log');
  t.notMatch(twinbox.logs.text(), token, 'nor the session token');
});
