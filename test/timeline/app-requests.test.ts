/**
 * The app requests kept in the store (server/timeline/app-requests.ts, docs/timeline.md): written in
 * batches off the request path, read by another recorder on the same store (another process), numbered
 * on after a restart, trimmed per sandbox, swept once expired.
 */
import t, { type Test } from 'tap';
import { openLowdbStore } from '../../server/store/lowdb-store.ts';
import { ExpirySweeper } from '../../server/store/expiry.ts';
import type { Store } from '../../server/store/store.ts';
import { AppRequestRecorder } from '../../server/timeline/app-requests.ts';
import { tempDir } from '../helpers/twinbox.ts';

const T0 = Date.parse('2026-11-24T10:00:00.000Z');

function forwarder(recorder: AppRequestRecorder) {
  let n = 0;
  return (sandboxId: string, path = '/x') => {
    const requestId = `req-${sandboxId}-${++n}`;
    const end = recorder.observe({
      sandboxId,
      target: { kind: 'app' },
      requestId,
      method: 'GET',
      url: `${path}?q=1`,
      headers: {},
      startedAt: T0 + n,
    });
    return { requestId, end: (status = 200) => end({ status, endedAt: T0 + n + 1 }) };
  };
}

async function openStore(t: Test): Promise<{ store: Store; dir: string }> {
  const dir = await tempDir(t, 'twinbox-app-requests-');
  const store = await openLowdbStore(dir);
  t.teardown(() => store.close());
  return { store, dir };
}

t.test('written in batches, read by another recorder, numbered on after a restart', async (t) => {
  const { store, dir } = await openStore(t);
  const runner = new AppRequestRecorder({ store, flushMs: 60_000, batchSize: 3 });
  const forward = forwarder(runner);
  for (let i = 0; i < 7; i++) forward('sb1', `/p${i}`).end();
  const open = forward('sb1', '/open');
  // Two full batches went at once; the seventh waits for the timer (a minute here) or a flush.
  await until(async () => (await store.appRequests.count()) === 2);
  const api = new AppRequestRecorder({ store });
  t.same(
    (await api.ended('sb1')).map((r) => r.seq),
    [1, 2, 3, 4, 5, 6],
    'another recorder reads the stored batches',
  );
  t.same(
    (await runner.ended('sb1')).map((r) => r.seq),
    [1, 2, 3, 4, 5, 6, 7],
    'the recording one adds what it has not written yet',
  );
  await runner.flush();
  t.same(
    (await api.ended('sb1')).map((r) => r.path),
    ['/p0', '/p1', '/p2', '/p3', '/p4', '/p5', '/p6'],
    'a flush writes the rest',
  );
  t.same((await api.ended('sb1'))[0]?.query_keys, ['q'], 'names of query parameters only');
  t.same(api.inFlight('sb1'), [], 'a request in flight is only known to the recorder whose router holds it');
  t.equal(runner.inFlight('sb1').length, 1);
  open.end(204);
  await runner.flush();
  t.match((await api.ended('sb1')).at(-1), { seq: 8, path: '/open', status: 204 });

  // A restart: a new recorder on a reopened store continues the numbers.
  await store.close();
  const reopened = await openLowdbStore(dir);
  t.teardown(() => reopened.close());
  const restarted = new AppRequestRecorder({ store: reopened });
  t.equal((await restarted.ended('sb1')).length, 8, 'kept across the restart');
  forwarder(restarted)('sb1', '/after').end();
  await restarted.flush();
  t.match(
    (await restarted.ended('sb1')).at(-1),
    { seq: 9, path: '/after' },
    'numbered after the stored ones',
  );
  t.ok(restarted.durable);
});

t.test('bounded: the newest per sandbox are kept in the store; expired batches are swept', async (t) => {
  const { store } = await openStore(t);
  const recorder = new AppRequestRecorder({ store, perSandbox: 5, batchSize: 2, retentionMs: 60_000 });
  const forward = forwarder(recorder);
  // The first makes the recorder read what the store has (nothing): the rest are numbered at once.
  forward('sb2', '/r0').end();
  await recorder.flush();
  for (let i = 1; i <= 12; i++) forward('sb2', `/r${i}`).end();
  forward('other', '/o').end();
  await recorder.flush();
  const kept = (await new AppRequestRecorder({ store, perSandbox: 5 }).ended('sb2')).map((r) => [
    r.seq,
    r.path,
  ]);
  t.same(
    kept,
    [9, 10, 11, 12, 13].map((seq) => [seq, `/r${seq - 1}`]),
    'the newest five are read',
  );
  const batches = await store.appRequests.findBy('sandbox_id', 'sb2');
  t.ok(batches.length <= 4, `older batches were deleted (${batches.length} left)`);
  t.ok(
    batches.every((b) => b.last_seq > 13 - 5),
    'every batch left holds one of the newest',
  );

  const sweeper = new ExpirySweeper(
    store.sweepCursors,
    [recorder.swept()!],
    () => Date.now() + 2 * 60_000,
    (error) => t.error(error),
  );
  t.ok((await sweeper.sweep()) >= 2, 'expired batches are swept');
  t.equal(await store.appRequests.count(), 0, 'none left');
});

t.test('without a store: memory only', async (t) => {
  const recorder = new AppRequestRecorder();
  forwarder(recorder)('sb3').end();
  await recorder.flush();
  t.notOk(recorder.durable);
  t.equal((await recorder.ended('sb3')).length, 1);
  t.equal(recorder.swept(), undefined, 'nothing to sweep');
});

async function until(check: () => Promise<boolean>): Promise<void> {
  // Bounds a hang only.
  for (let i = 0; i < 600; i++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error('timed out');
}
