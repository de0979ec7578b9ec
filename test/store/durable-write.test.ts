import t from 'tap';
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { directorySyncer, writeFileDurably } from '../../server/durable-write.ts';
import { tempDir } from '../helpers/twinbox.ts';

t.test(
  'a directory sync is shared by the callers that arrive while one runs, never by earlier ones',
  async (t) => {
    const calls: Array<{ directory: string; done: () => void }> = [];
    const sync = directorySyncer(
      (directory) => new Promise<void>((resolve) => calls.push({ directory, done: resolve })),
    );
    const settled: string[] = [];
    const track = (name: string, promise: Promise<void>) => promise.then(() => settled.push(name));
    const first = track('first', sync('/d'));
    const tick = () => new Promise((resolve) => setImmediate(resolve));
    await tick();
    t.equal(calls.length, 1, 'the first caller starts a sync');
    // These renamed after the running sync began: it cannot vouch for them.
    const later = [track('second', sync('/d')), track('third', sync('/d')), track('fourth', sync('/d'))];
    const other = track('other dir', sync('/e'));
    await tick();
    t.equal(calls.length, 2, 'no second sync of /d while one runs; /e has its own');
    t.equal(calls[1]!.directory, '/e');
    calls[0]!.done();
    await first;
    await tick();
    t.same(settled, ['first'], 'the later callers still wait');
    t.equal(calls.length, 3, 'one more sync of /d, for all three');
    t.equal(calls[2]!.directory, '/d');
    calls[2]!.done();
    calls[1]!.done();
    await Promise.all([...later, other]);
    t.same(settled.sort(), ['first', 'fourth', 'other dir', 'second', 'third']);
    t.equal(calls.length, 3, 'three syncs for five callers');
    // Idle again: the next caller starts at once.
    const again = sync('/d');
    await tick();
    t.equal(calls.length, 4);
    calls[3]!.done();
    await again;
  },
);

t.test('a failed sync fails every caller sharing it, and the next caller syncs anew', async (t) => {
  let n = 0;
  const sync = directorySyncer(async () => {
    n++;
    if (n === 2) throw new Error('EIO');
  });
  const running = sync('/d');
  const shared = [sync('/d'), sync('/d')];
  await running;
  const results = await Promise.allSettled(shared);
  t.same(
    results.map((r) => r.status),
    ['rejected', 'rejected'],
    'both callers of the failed sync hear of it',
  );
  await sync('/d');
  t.equal(n, 3);
});

t.test('200 concurrent durable writes into one directory: every one is there, whole', async (t) => {
  const dir = await tempDir(t);
  await Promise.all(
    Array.from({ length: 200 }, (_, i) => writeFileDurably(join(dir, `f${i}.json`), JSON.stringify({ i }))),
  );
  const names = (await readdir(dir)).sort();
  t.equal(names.length, 200, 'no temporary file left, none missing');
  for (let i = 0; i < 200; i++) {
    t.same(JSON.parse(await readFile(join(dir, `f${i}.json`), 'utf8')), { i });
  }
});
