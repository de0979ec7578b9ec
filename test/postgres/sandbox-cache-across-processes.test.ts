// Sandboxes are cached in each process on PostgreSQL (server/store/postgres/changes.ts), for the polled
// GET /sandboxes/{id}: a change written by any process must be what every other process answers with at
// once, not when a cache entry ages out.
import t from 'tap';
import { postgresSkip } from '../helpers/postgres.ts';
import { twinboxesOnOneDatabase } from '../helpers/postgres-processes.ts';

const skip = await postgresSkip();

t.test(
  'two Twinbox processes on one database: a sandbox changed by one is answered changed by both at once',
  { skip },
  async (t) => {
    const { a, b, key, store } = await twinboxesOnOneDatabase(t);
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };

    const created = await fetch(`${a.baseUrl}/sandboxes`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ repo: 'a/b', branch: 'main' }),
    });
    t.equal(created.status, 201);
    const id = ((await created.json()) as { sandbox_id: string }).sandbox_id;
    type View = { status: string; expires_at: string; error: string | null };
    const view = async (base: string): Promise<View> => {
      const res = await fetch(`${base}/sandboxes/${id}`, {
        headers: { authorization: headers.authorization },
      });
      t.equal(res.status, 200);
      return (await res.json()) as View;
    };
    // Read several times on both, so each holds the sandbox in its cache.
    const warm = async () => {
      for (let i = 0; i < 3; i++) {
        await view(a.baseUrl);
        await view(b.baseUrl);
      }
    };

    await warm();
    const extended = await fetch(`${a.baseUrl}/sandboxes/${id}/extend`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ minutes: 5 }),
    });
    t.equal(extended.status, 200, 'extended in A');
    const expiresAt = ((await extended.json()) as View).expires_at;
    t.equal((await view(b.baseUrl)).expires_at, expiresAt, 'B answers the new expiry at once');
    t.equal((await view(a.baseUrl)).expires_at, expiresAt, 'and A');

    await warm();
    await store.sandboxes.update(id, (sandbox) => ({ ...sandbox, error: 'written by a third process' }));
    t.equal(
      (await view(a.baseUrl)).error,
      'written by a third process',
      'a third write: A answers it at once',
    );
    t.equal((await view(b.baseUrl)).error, 'written by a third process', 'and B');

    await warm();
    const deleted = await fetch(`${b.baseUrl}/sandboxes/${id}`, { method: 'DELETE', headers });
    t.equal(deleted.status, 200, 'deleted in B');
    t.equal((await view(a.baseUrl)).status, 'deleted', 'A answers deleted at once');
    t.equal((await view(b.baseUrl)).status, 'deleted', 'and B');
  },
);
