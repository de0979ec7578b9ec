import t from 'tap';
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DataDirLockedError, lockDataDir } from '../../server/store/data-dir-lock.ts';
import { tempDir } from '../helpers/twinbox.ts';

t.test('a second lock on the same data dir is refused until the first is released', async (t) => {
  const dir = await tempDir(t);
  const first = lockDataDir(dir);
  t.throws(() => lockDataDir(dir), DataDirLockedError);
  first.release();
  const second = lockDataDir(dir);
  second.release();
});

t.test('a lock file left by a dead process is taken over', async (t) => {
  const dir = await tempDir(t);
  // pid 2^22+1 is above Linux's pid_max default, so no process has it.
  await writeFile(join(dir, 'twinbox.pid'), String(4194305));
  const lock = lockDataDir(dir);
  t.equal(await readFile(join(dir, 'twinbox.pid'), 'utf8'), String(process.pid));
  lock.release();
});

t.test('a lock file held by a live process is refused, naming the pid and the directory', async (t) => {
  const dir = await tempDir(t);
  // The parent of the test process is alive for as long as the test runs.
  await writeFile(join(dir, 'twinbox.pid'), String(process.ppid));
  t.throws(() => lockDataDir(dir), { message: new RegExp(`pid ${process.ppid}.*${dir}`) });
});

t.test('our own pid in a leftover lock file (a restarted container) is not a live holder', async (t) => {
  const dir = await tempDir(t);
  await writeFile(join(dir, 'twinbox.pid'), String(process.pid));
  const lock = lockDataDir(dir);
  t.equal(await readFile(join(dir, 'twinbox.pid'), 'utf8'), String(process.pid), 'taken, as ours');
  t.throws(() => lockDataDir(dir), DataDirLockedError, 'and now held: a second lock is refused');
  lock.release();
  t.notOk(existsSync(join(dir, 'twinbox.pid')), 'released');
});
