import t from 'tap';
import { startEngine } from '../../server/twins/engine/emulate.ts';
import { KeptAnswers } from '../../server/twins/engine/kept-answers.ts';

/**
 * engine/kept-answers.ts reuses an answer only while the engine's store has taken no write (Engine.writes).
 * The twins' own tests write through the SDKs and read again (twilio.test.ts, mongoatlas.test.ts); this one
 * checks each kind of store write is counted, and the bounds.
 */

t.test("the engine's store counts every kind of write", async (t) => {
  const engine = await startEngine('twilio', 'http://127.0.0.1:9', {} as never);
  const accounts = engine.store.collection('twilio.accounts');
  const steps: Array<[string, () => unknown]> = [
    ['insert', () => accounts.insert({ sid: 'AC1' })],
    ['update', () => accounts.update(accounts.all()[0]!.id, { friendly_name: 'x' })],
    ['delete', () => accounts.delete(accounts.all()[0]!.id)],
    ['a collection first asked for now', () => engine.store.collection('twinbox.new').insert({ a: 1 })],
    ['setData', () => engine.store.setData('k', 1)],
    ['seedFromConfig', () => engine.seedFromConfig({ phone_numbers: [{ phone_number: '+15005550006' }] })],
    ['restore', () => engine.store.restore(engine.store.snapshot())],
    ['reset', () => engine.reset()],
  ];
  let counted = 0;
  for (const [label, write] of steps) {
    const before = engine.writes();
    write();
    t.ok(engine.writes() > before, `${label} is counted`);
    counted++;
  }
  t.equal(counted, steps.length, 'every step ran');
  const before = engine.writes();
  accounts.all();
  accounts.findBy('sid', 'AC1');
  engine.store.getData('k');
  engine.store.snapshot();
  t.equal(engine.writes(), before, 'reads are not');
});

t.test('kept answers: stale after a write, bounded in count and bytes', async (t) => {
  const engine = await startEngine('twilio', 'http://127.0.0.1:9', {} as never);
  const request = (path: string, auth = 'Basic a') =>
    new Request(`http://127.0.0.1:9${path}`, { headers: { authorization: auth } });
  const kept = new KeptAnswers(engine, 3, 200);
  const keep = (path: string, body: string) =>
    kept.keep(
      KeptAnswers.keyOf(request(path)),
      kept.writes(),
      200,
      new Headers({ a: 'b' }),
      Buffer.from(body),
    );

  keep('/one', 'first');
  const again = kept.answer(KeptAnswers.keyOf(request('/one')));
  t.equal(await again?.text(), 'first', 'the same request gets the kept answer');
  t.equal(again?.headers.get('a'), 'b', 'with its headers');
  t.equal(
    kept.answer(KeptAnswers.keyOf(request('/one', 'Basic other'))),
    undefined,
    'other credentials: none',
  );

  engine.store.collection('twilio.accounts').insert({ sid: 'AC2' });
  t.equal(kept.answer(KeptAnswers.keyOf(request('/one'))), undefined, 'none after a write');

  const writes = kept.writes();
  engine.store.setData('k', 2);
  kept.keep(KeptAnswers.keyOf(request('/late')), writes, 200, new Headers(), Buffer.from('x'));
  t.equal(
    kept.answer(KeptAnswers.keyOf(request('/late'))),
    undefined,
    'an answer made across a write is not kept',
  );

  for (const path of ['/a', '/b', '/c', '/d']) keep(path, path);
  t.equal(kept.answer(KeptAnswers.keyOf(request('/a'))), undefined, 'the oldest goes past 3 answers');
  t.equal(await kept.answer(KeptAnswers.keyOf(request('/d')))?.text(), '/d');
  keep('/big', 'y'.repeat(200));
  t.equal(
    kept.answer(KeptAnswers.keyOf(request('/big'))),
    undefined,
    'an answer over the byte cap is not kept',
  );
  keep('/half', 'z'.repeat(100));
  t.equal(await kept.answer(KeptAnswers.keyOf(request('/half')))?.text(), 'z'.repeat(100));
  // Kept now: /c and /d (49 bytes each, key and body) and /half (150): /c, the least recently used, goes.
  t.equal(
    kept.answer(KeptAnswers.keyOf(request('/c'))),
    undefined,
    'the oldest goes to stay under the bytes',
  );
  t.equal(await kept.answer(KeptAnswers.keyOf(request('/d')))?.text(), '/d', 'the rest stays');
});
