import t from 'tap';
import { cp, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { openLowdbStore } from '../../server/store/lowdb-store.ts';
import { readJournal, StoreJournal } from '../../server/store/journal.ts';
import type { VerificationCodeRecord } from '../../server/store/records.ts';
import { tempDir } from '../helpers/twinbox.ts';

function code(id: string, attempts = 0): VerificationCodeRecord {
  return {
    id,
    email: `${id}@example.com`,
    purpose: 'journal',
    code_hash: 'h'.repeat(64),
    attempts,
    created_at: '2026-11-27T00:00:00.000Z',
    expires_at: '2026-11-27T01:00:00.000Z',
    consumed_at: null,
  };
}

/** A journal line as Twinbox writes it: checksum, space, JSON. */
function line(file: string, record: object | null): string {
  const body = JSON.stringify({ p: file, r: record });
  return `${crc32(body).toString(16).padStart(8, '0')} ${body}\n`;
}

const journals = async (root: string) => (await readdir(root)).filter((name) => name.startsWith('journal-'));

/** Collects process warnings for the test's length. */
function warnings(t: { teardown: (fn: () => void) => void }): string[] {
  const seen: string[] = [];
  const onWarning = (warning: Error) => seen.push(warning.message);
  process.on('warning', onWarning);
  t.teardown(() => void process.off('warning', onWarning));
  return seen;
}

t.test('writes go to the journal first; close writes them to their files and removes it', async (t) => {
  const dataDir = await tempDir(t);
  const root = join(dataDir, 'store');
  const store = await openLowdbStore(dataDir);
  await Promise.all(Array.from({ length: 200 }, (_, i) => store.verificationCodes.insert(code(`c${i}`))));
  await store.verificationCodes.update('c7', (current) => ({ ...current, attempts: 3 }));
  t.equal(await store.verificationCodes.delete('c8'), true);

  const [journal, ...more] = await journals(root);
  t.same(more, [], 'one journal');
  const text = await readFile(join(root, journal!), 'utf8');
  const read = readJournal(text, new Set(['verification_codes']));
  t.equal(read.entries.length, 202, 'every write is a checked line');
  t.equal(read.damagedAt, undefined);
  t.same(await readdir(join(root, 'verification_codes')), [], 'no record file is written on the way');

  await store.close();
  t.same(await journals(root), [], 'the close checkpointed the journal');
  const files = await readdir(join(root, 'verification_codes'));
  t.equal(files.length, 199, 'one file per record, the removed one gone');
  t.same(JSON.parse(await readFile(join(root, 'verification_codes', 'c7.json'), 'utf8')), code('c7', 3));
});

t.test('a store left without a close is replayed at the next open', async (t) => {
  const dataDir = await tempDir(t);
  const root = join(dataDir, 'store');
  const left = await openLowdbStore(dataDir);
  await left.verificationCodes.insert(code('kept'));
  await left.verificationCodes.insert(code('gone'));
  await left.verificationCodes.update('kept', (current) => ({ ...current, attempts: 2 }));
  await left.verificationCodes.delete('gone');
  // No close: as after a kill -9, only the journal holds these writes.
  t.same(await readdir(join(root, 'verification_codes')), []);

  const reopened = await openLowdbStore(dataDir);
  t.same(await reopened.verificationCodes.get('kept'), code('kept', 2));
  t.equal(await reopened.verificationCodes.get('gone'), undefined);
  t.same(await readdir(join(root, 'verification_codes')), ['kept.json'], 'replayed onto the files');
  t.equal((await journals(root)).length, 1, 'the replayed journal is removed; a new one is open');
  await reopened.close();
});

t.test('journals are replayed oldest first, by number', async (t) => {
  const dataDir = await tempDir(t);
  const root = join(dataDir, 'store');
  await openLowdbStore(dataDir).then((store) => store.close());
  await writeFile(join(root, 'journal-10.log'), line('verification_codes/a.json', code('a', 10)));
  await writeFile(
    join(root, 'journal-9.log'),
    line('verification_codes/a.json', code('a', 9)) + line('verification_codes/b.json', code('b', 9)),
  );
  await writeFile(join(root, 'journal-11.log'), line('verification_codes/b.json', null));
  const store = await openLowdbStore(dataDir);
  t.equal((await store.verificationCodes.get('a'))?.attempts, 10, 'journal-10 after journal-9');
  t.equal(await store.verificationCodes.get('b'), undefined, 'the removal in journal-11 holds');
  t.same(await journals(root), ['journal-12.log'], 'the next journal follows the last one replayed');
  await store.close();
});

t.test(
  'a torn last line is dropped; a damaged line stops its journal there and keeps it aside',
  async (t) => {
    const seen = warnings(t);
    const dataDir = await tempDir(t);
    const root = join(dataDir, 'store');
    await openLowdbStore(dataDir).then((store) => store.close());
    // A crash in the middle of an append: the line has no end, so it was never acknowledged.
    await writeFile(
      join(root, 'journal-1.log'),
      line('verification_codes/whole.json', code('whole')) +
        line('verification_codes/torn.json', code('torn')).slice(0, 40),
    );
    // Damage from outside: a flipped byte fails the checksum; what follows it is not trusted either.
    const flipped = line('verification_codes/flipped.json', code('flipped')).replace(
      '"attempts":0',
      '"attempts":1',
    );
    await writeFile(
      join(root, 'journal-2.log'),
      line('verification_codes/before.json', code('before')) +
        flipped +
        line('verification_codes/after.json', code('after')),
    );
    const store = await openLowdbStore(dataDir);
    t.ok(await store.verificationCodes.get('whole'));
    t.equal(await store.verificationCodes.get('torn'), undefined, 'the torn line is not replayed');
    t.ok(await store.verificationCodes.get('before'), 'the lines before the damage are replayed');
    t.equal(await store.verificationCodes.get('flipped'), undefined, 'the damaged line is not');
    t.equal(await store.verificationCodes.get('after'), undefined, 'nor anything after it');
    const names = (await readdir(root)).filter((name) => name.startsWith('journal-')).sort();
    t.same(names, ['journal-2.log.unreadable', 'journal-3.log'], 'the damaged journal is kept for a person');
    await new Promise((resolve) => setImmediate(resolve));
    t.match(seen.join('\n'), /journal-2\.log is damaged at line 2/);
    t.notMatch(seen.join('\n'), /journal-1\.log/, 'a torn tail is no damage');
    await store.close();
  },
);

t.test('a hostile journal line cannot write outside its collection folders', async (t) => {
  warnings(t);
  const dataDir = await tempDir(t);
  const root = join(dataDir, 'store');
  await openLowdbStore(dataDir).then((store) => store.close());
  for (const [n, file] of [
    '../../escaped.json',
    'verification_codes/../../escaped.json',
    'unknown_table/x.json',
    'verification_codes/.json',
  ].entries()) {
    await writeFile(join(root, `journal-${n + 1}.log`), line(file, { id: 'x' }));
  }
  const store = await openLowdbStore(dataDir);
  await store.close();
  t.same((await readdir(dataDir)).sort(), ['store'], 'nothing beside the store');
  t.notOk((await readdir(root)).includes('unknown_table'), 'no folder for an unknown collection');
  t.equal(
    (await readdir(root)).filter((name) => name.endsWith('.unreadable')).length,
    4,
    'each such journal is set aside',
  );
});

t.test('a full journal is checkpointed while writes go on, and later ones keep their order', async (t) => {
  const dataDir = await tempDir(t);
  const root = join(dataDir, 'store');
  const syncs: string[] = [];
  const store = await openLowdbStore(dataDir, {
    maxBytes: 16 * 1024,
    syncEachUpTo: 0,
    syncFileSystem: async (path) => {
      syncs.push(path);
    },
  });
  for (let round = 0; round < 5; round++) {
    await Promise.all(
      Array.from({ length: 60 }, (_, i) =>
        round === 0
          ? store.verificationCodes.insert(code(`r${i}`))
          : store.verificationCodes.update(`r${i}`, (current) => ({ ...current, attempts: round })),
      ),
    );
  }
  // The checkpoints run behind the writes: wait until only the open journal is left.
  for (let i = 0; i < 1000 && (await journals(root)).length > 1; i++)
    await new Promise((resolve) => setTimeout(resolve, 10));
  t.equal((await journals(root)).length, 1, 'the full journals were checkpointed without a close');
  t.ok(syncs.length >= 4, `one file-system sync per full journal (${syncs.length})`);
  t.same(new Set(syncs), new Set([root]), 'each synced the store’s file system');
  const checkpointed = await readdir(join(root, 'verification_codes'));
  t.equal(checkpointed.length, 60, 'their records are in their files');
  await store.close();
  t.same(await journals(root), []);
  const reopened = await openLowdbStore(dataDir);
  const all = await Promise.all(
    Array.from({ length: 60 }, (_, i) => reopened.verificationCodes.get(`r${i}`)),
  );
  t.same(
    all.map((record) => record?.attempts),
    Array.from({ length: 60 }, () => 4),
    'every record holds its last write',
  );
  await reopened.close();
});

t.test('a failed checkpoint keeps its journal, and none after it is removed before it', async (t) => {
  const seen = warnings(t);
  const dataDir = await tempDir(t);
  const root = join(dataDir, 'store');
  let failing = true;
  const store = await openLowdbStore(dataDir, {
    maxBytes: 2 * 1024,
    syncEachUpTo: 0,
    syncFileSystem: async () => {
      if (failing) throw new Error('EIO: the disk said no');
    },
  });
  for (let i = 0; i < 30; i++) await store.verificationCodes.insert(code(`f${i}`));
  for (let i = 0; i < 30; i++)
    await store.verificationCodes.update(`f${i}`, (current) => ({ ...current, attempts: 1 }));
  t.ok((await journals(root)).length >= 3, 'the journals wait on disk');
  t.match(seen.join('\n'), /checkpoint of .*journal-1\.log failed \(EIO: the disk said no\)/);
  // A copy of the store as a crash would leave it now: the replay gives every record its last write.
  const crashed = await tempDir(t);
  await cp(root, join(crashed, 'store'), { recursive: true });
  const copy = await openLowdbStore(crashed);
  t.equal((await copy.verificationCodes.get('f0'))?.attempts, 1, 'a crash now loses nothing');
  await copy.close();
  failing = false;
  await store.close();
  t.same(await journals(root), [], 'the close checkpointed them all, oldest first');
  const reopened = await openLowdbStore(dataDir);
  t.equal((await reopened.verificationCodes.get('f29'))?.attempts, 1);
  t.equal(
    (await reopened.verificationCodes.get('f0'))?.attempts,
    1,
    'the older journal did not undo a newer one',
  );
  await reopened.close();
});

t.test('a checkpoint of a few records fsyncs each; of many, syncs the file system once', async (t) => {
  const dataDir = await tempDir(t);
  const root = join(dataDir, 'store');
  const syncs: string[] = [];
  const options = {
    syncEachUpTo: 10,
    syncFileSystem: async (path: string) => {
      syncs.push(path);
    },
  };
  const store = await openLowdbStore(dataDir, options);
  for (let i = 0; i < 10; i++) await store.verificationCodes.insert(code(`few${i}`));
  await store.close();
  t.same(syncs, [], 'ten records: no file-system sync');
  t.equal((await readdir(join(root, 'verification_codes'))).length, 10, 'each written to its file');
  t.same(await journals(root), []);

  const again = await openLowdbStore(dataDir, options);
  for (let i = 0; i < 11; i++) await again.verificationCodes.insert(code(`many${i}`));
  await again.close();
  t.same(syncs, [root], 'eleven: one sync of the store’s file system');
  t.equal((await readdir(join(root, 'verification_codes'))).length, 21);
});

t.test('the journal refuses writes after close', async (t) => {
  const root = join(await tempDir(t), 'store');
  const journal = await StoreJournal.open(root, ['verification_codes']);
  await journal.write('verification_codes', 'a', JSON.stringify(code('a')));
  await journal.close();
  await t.rejects(journal.write('verification_codes', 'b', JSON.stringify(code('b'))), {
    name: 'StoreClosedError',
  });
  t.same(await readdir(join(root, 'verification_codes')), ['a.json']);
});
