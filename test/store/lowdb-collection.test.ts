import t from 'tap';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { LowdbCollection } from '../../server/store/lowdb-collection.ts';
import { UniqueViolationError, UnsafeIdError } from '../../server/store/store.ts';
import { tempDir } from '../helpers/twinbox.ts';

interface Person {
  id: string;
  email: string;
  team: string;
  n?: number;
}

const open = (dir: string) =>
  LowdbCollection.open<Person>('people', dir, { unique: ['email'], indexed: ['team'] });

t.test('insert, get, find, update, delete, and all of it survives a reopen', async (t) => {
  const dir = await tempDir(t);
  const people = await open(dir);
  await people.insert({ id: 'a', email: 'a@x.io', team: 'red' });
  await people.insert({ id: 'b', email: 'b@x.io', team: 'red' });
  await people.insert({ id: 'c', email: 'c@x.io', team: 'blue' });
  t.same((await people.findBy('team', 'red')).map((p) => p.id).sort(), ['a', 'b']);
  t.equal((await people.findOneBy('email', 'c@x.io'))?.id, 'c');
  await people.update('b', (p) => ({ ...p, team: 'blue' }));
  t.same(
    (await people.findBy('team', 'red')).map((p) => p.id),
    ['a'],
  );
  t.equal(await people.delete('a'), true);
  t.equal(await people.delete('a'), false);
  t.equal(await people.update('zzz', (p) => p), undefined);

  const reopened = await open(dir);
  t.equal(await reopened.count(), 2);
  t.same(await reopened.get('b'), { id: 'b', email: 'b@x.io', team: 'blue' });
  t.equal(await reopened.get('a'), undefined);
  t.same((await reopened.findBy('team', 'blue')).map((p) => p.id).sort(), ['b', 'c']);
});

t.test('unique fields hold under concurrency: 50 inserts of one e-mail, exactly one wins', async (t) => {
  const people = await open(await tempDir(t));
  const results = await Promise.allSettled(
    Array.from({ length: 50 }, (_, i) => people.insert({ id: `p${i}`, email: 'same@x.io', team: 't' })),
  );
  t.equal(results.filter((r) => r.status === 'fulfilled').length, 1);
  const rejected = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
  t.equal(rejected.length, 49);
  t.ok(rejected.every((r) => r.reason instanceof UniqueViolationError));
  t.equal(await people.count(), 1);
});

t.test('an update to a taken unique value is refused and changes nothing', async (t) => {
  const people = await open(await tempDir(t));
  await people.insert({ id: 'a', email: 'a@x.io', team: 't' });
  await people.insert({ id: 'b', email: 'b@x.io', team: 't' });
  await t.rejects(
    people.update('b', (p) => ({ ...p, email: 'a@x.io' })),
    UniqueViolationError,
  );
  t.equal((await people.get('b'))?.email, 'b@x.io');
  await t.rejects(people.insert({ id: 'a', email: 'other@x.io', team: 't' }), UniqueViolationError);
});

t.test('updates to one record are serialized read-modify-writes: none is lost', async (t) => {
  const dir = await tempDir(t);
  const people = await open(dir);
  await people.insert({ id: 'a', email: 'a@x.io', team: 't', n: 0 });
  await Promise.all(
    Array.from({ length: 40 }, () => people.update('a', (p) => ({ ...p, n: (p.n ?? 0) + 1 }))),
  );
  t.equal((await people.get('a'))?.n, 40);
  t.equal((await (await open(dir)).get('a'))?.n, 40);
});

t.test('a change that throws refuses the update', async (t) => {
  const people = await open(await tempDir(t));
  await people.insert({ id: 'a', email: 'a@x.io', team: 't' });
  await t.rejects(
    people.update('a', () => {
      throw new Error('no');
    }),
    /no/,
  );
  t.equal((await people.get('a'))?.team, 't');
});

t.test('ids that are not safe file names are refused', async (t) => {
  const people = await open(await tempDir(t));
  await t.rejects(people.insert({ id: '../escape', email: 'e@x.io', team: 't' }), UnsafeIdError);
  t.equal(await people.get('../escape'), undefined);
  t.equal(await people.update('../x', (p) => p), undefined);
});

t.test('loading drops interrupted writes and sets damaged files aside', async (t) => {
  const dir = await tempDir(t);
  const people = await open(dir);
  await people.insert({ id: 'a', email: 'a@x.io', team: 't' });
  await writeFile(join(dir, 'b.json.123.1.tmp'), '{"id":"b","ema');
  await writeFile(join(dir, 'c.json'), '{"id":"c",');
  const warnings: string[] = [];
  const onWarning = (w: Error) => warnings.push(w.message);
  process.on('warning', onWarning);
  t.teardown(() => void process.off('warning', onWarning));
  const reopened = await open(dir);
  t.equal(await reopened.count(), 1);
  const files = (await readdir(dir)).sort();
  t.same(files, ['a.json', 'c.json.unreadable']);
  t.equal(await readFile(join(dir, 'c.json.unreadable'), 'utf8'), '{"id":"c",');
  await new Promise((resolve) => setImmediate(resolve));
  t.match(warnings.join('\n'), /c\.json is not valid JSON/);
});

t.test('the data on disk is exactly the record, one file per record', async (t) => {
  const dir = await tempDir(t);
  const people = await open(dir);
  await people.insert({ id: 'a', email: 'a@x.io', team: 't' });
  t.same(JSON.parse(await readFile(join(dir, 'a.json'), 'utf8')), { id: 'a', email: 'a@x.io', team: 't' });
});
