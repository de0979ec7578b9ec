// Keys and accounts are cached in each process on PostgreSQL (server/store/postgres/changes.ts): a revoke
// in one Twinbox process must stop the key in every other at once, not when a cache entry ages out.
import t from 'tap';
import { ApiKeys } from '../../server/auth/api-keys.ts';
import { postgresSkip } from '../helpers/postgres.ts';
import { twinboxesOnOneDatabase } from '../helpers/postgres-processes.ts';

const skip = await postgresSkip();

t.test(
  'two Twinbox processes on one database: a key revoked in one is refused by both at once',
  { skip },
  async (t) => {
    const { a, b, key: ownerKey, store } = await twinboxesOnOneDatabase(t);
    const keys = new ApiKeys(store);
    const owner = (await keys.authenticate(ownerKey))!;
    t.ok(owner, 'the local owner key works here too');

    const get = (base: string, key: string, path = '/sandboxes') =>
      fetch(`${base}${path}`, { headers: { authorization: `Bearer ${key}` } }).then((r) => r.status);

    const created = await fetch(`${b.baseUrl}/sandboxes`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ownerKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ repo: 'a/b', branch: 'main' }),
    });
    t.equal(created.status, 201);
    const path = `/sandboxes/${((await created.json()) as { sandbox_id: string }).sandbox_id}`;

    let rounds = 0;
    for (const [revoker, other] of [
      [a, b],
      [b, a],
      [a, b],
      [b, a],
    ] as const) {
      const { key } = await keys.issue(owner.id, `round ${rounds}`);
      // Read several times on both, so each holds the key and its account in its cache.
      for (let i = 0; i < 3; i++) {
        t.equal(await get(a.baseUrl, key, path), 200);
        t.equal(await get(b.baseUrl, key, path), 200);
      }
      t.ok(await keys.authenticate(key), 'and here');
      const revoked = await fetch(`${revoker.baseUrl}/api-keys/current`, {
        method: 'DELETE',
        headers: { authorization: `Bearer ${key}` },
      });
      t.equal(revoked.status, 200, `round ${rounds}: revoked`);
      // The very next request, on the other process: no wait, no retry.
      t.equal(await get(other.baseUrl, key, path), 401, `round ${rounds}: refused by the other process`);
      t.equal(await get(revoker.baseUrl, key, path), 401, `round ${rounds}: and by the one that revoked it`);
      t.equal(await keys.authenticate(key), undefined, `round ${rounds}: and by a third`);
      t.equal(await get(other.baseUrl, ownerKey, path), 200, 'other keys still work');
      rounds++;
    }
    t.equal(rounds, 4);

    // An account change (here: its e-mail no longer verified) reaches every process's cached account too.
    t.equal(await get(a.baseUrl, ownerKey, path), 200);
    t.equal(await get(b.baseUrl, ownerKey, path), 200);
    await store.accounts.update(owner.id, (account) => ({ ...account, email_verified: false }));
    t.equal(await get(a.baseUrl, ownerKey, path), 401, 'an unverified account holds no key, in A');
    t.equal(await get(b.baseUrl, ownerKey, path), 401, 'nor in B');
  },
);
