// The sandbox quota on a shared database (issue 24): each process keeps its own reservations, so the
// insert itself checks the account's tally again, locked across processes (insert `within` a tally,
// server/store/postgres/collection.ts). Creates racing through two Twinbox processes never make more
// active sandboxes than the plan allows.
import t from 'tap';
import { postgresSkip } from '../helpers/postgres.ts';
import { twinboxesOnOneDatabase } from '../helpers/postgres-processes.ts';
import { ACTIVE_STATUSES } from '../../server/sandboxes/states.ts';

const skip = await postgresSkip();

t.test(
  'two Twinbox processes on one database: concurrent creates through both never exceed the quota',
  { skip },
  async (t) => {
    // The development key's owner is on the pro plan; both processes give it 3.
    const { a, b, key, store } = await twinboxesOnOneDatabase(t, {
      TWINBOX_SANDBOX_QUOTA_PRO: '3',
      TWINBOX_SANDBOX_QUOTA_FREE: '3',
    });
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
    const create = async (base: string, i: number) => {
      const res = await fetch(`${base}/sandboxes`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ repo: 'a/b', branch: `b${i}` }),
      });
      return { status: res.status, body: (await res.json()) as { sandbox_id?: string; code?: string } };
    };
    const burst = (n: number) =>
      Promise.all(Array.from({ length: n }, (_, i) => create(i % 2 === 0 ? a.baseUrl : b.baseUrl, i)));
    // Every sandbox in this fresh schema is this account's.
    const active = async () => {
      let n = 0;
      for (const status of ACTIVE_STATUSES) n += (await store.sandboxes.findBy('status', status)).length;
      return n;
    };

    // Warm both processes first (a first request pays for JIT and new connections), so that the
    // burst's creates reach both at once: without the check in the insert, the old code let the two
    // processes each admit the last one here.
    for (const base of [a.baseUrl, b.baseUrl]) {
      for (let i = 0; i < 5; i++) {
        const res = await fetch(`${base}/sandboxes`, { headers: { authorization: headers.authorization } });
        t.equal(res.status, 200, 'warm-up list');
      }
    }
    const first = await burst(30);
    const created = first.filter((r) => r.status === 201);
    t.equal(created.length, 3, 'three created across both processes');
    t.equal(first.filter((r) => r.status === 403).length, 27, 'the rest refused');
    t.ok(
      first.filter((r) => r.status === 403).every((r) => r.body.code === 'plan_limit_exceeded'),
      'every refusal is plan_limit_exceeded',
    );
    t.equal(await active(), 3, 'three active in the database');

    // Deleting one through B makes room for exactly one, wherever it is asked for.
    const deleted = await fetch(`${b.baseUrl}/sandboxes/${created[0]!.body.sandbox_id}`, {
      method: 'DELETE',
      headers: { authorization: headers.authorization },
    });
    t.equal(deleted.status, 200);
    const second = await burst(10);
    t.equal(second.filter((r) => r.status === 201).length, 1, 'room for one again');
    t.equal(second.filter((r) => r.status === 403).length, 9);
    t.equal(await active(), 3, 'three active again');
  },
);
