import t from 'tap';
import { startEngine } from '../../server/twins/engine/emulate.ts';

/**
 * The engine stamps `created_at` in milliseconds and sorts lists by it alone, ties in insertion order
 * whatever the direction (engine/emulate.ts, stampInOrder). Many inserts in one synchronous run share a
 * millisecond on the wall clock, so without one clock per store this test fails.
 */
t.test('every insert of a store is stamped later than the one before, across collections', async (t) => {
  const engine = await startEngine('github', 'http://127.0.0.1:9', {} as never);
  const a = engine.store.collection('twinbox.clock-a');
  const b = engine.store.collection('twinbox.clock-b');
  const stamps: string[] = [];
  for (let i = 0; i < 200; i++) stamps.push((i % 2 ? a : b).insert({ n: i }).created_at);
  t.equal(stamps.length, 200, 'every insert ran');
  let ordered = 0;
  for (let i = 1; i < stamps.length; i++) {
    if (Date.parse(stamps[i]!) > Date.parse(stamps[i - 1]!)) ordered++;
  }
  t.equal(ordered, stamps.length - 1, 'each stamp is later than the one before');
  const first = a.all()[0]!;
  t.equal(first.created_at, first.updated_at, 'a new record was updated when it was created');
  t.equal(a.get(first.id)?.created_at, stamps[1], 'the stored record carries the stamp the insert returned');
  t.ok(
    Date.parse(stamps.at(-1)!) - Date.now() < 1_000,
    'the stamps stay within a second of the wall clock for 200 inserts',
  );
});
