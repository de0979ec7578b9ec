import t, { type Test } from 'tap';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, lstatSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { GitHubSource } from '../../server/deploy/steps/source.ts';
import { startGitHubTwin } from '../../examples/github-twin.ts';
import { deployingTwinbox, settle } from '../helpers/deploy.ts';
import { call, createUser, tempDir } from '../helpers/twinbox.ts';
import { END, startFakeGitHub, tarBody, type FakeRepo, type TarEntry } from './fake-github.ts';

const MiB = 1024 * 1024;
const SHA = 'abc1234def5678abc1234def5678abc1234def56';
const source = { owner: 'octo', repo: 'app', sha: SHA, describe: 'branch main' };
const ROOT = 'octo-app-abc1234';

/** Fetches octo/app from a fake GitHub serving `repo`; the error message when it fails. */
async function fetchFrom(t: Test, repo: FakeRepo, limits: { maxBytes?: number; maxFiles?: number } = {}) {
  const gh = await startFakeGitHub(t, repo);
  const dir = await tempDir(t);
  const dest = join(dir, 'workspace');
  const fetcher = new GitHubSource({ apiUrl: gh.url, token: 'x', webHosts: [], ...limits });
  let files: number | undefined;
  let error: string | undefined;
  try {
    files = await fetcher.fetch(source, dest, AbortSignal.timeout(60_000));
  } catch (err) {
    error = (err as Error).message;
  }
  return { gh, dir, dest, files, error };
}

const tarball = (entries: TarEntry[]) =>
  gzipSync(Buffer.concat([tarBody([{ name: `${ROOT}/`, type: '5', mode: 0o755 }, ...entries]), END]));

/** Every path under `dir`, relative, with whether it is a symlink. */
function walk(dir: string, prefix = ''): { path: string; link: boolean }[] {
  const out: { path: string; link: boolean }[] = [];
  for (const name of readdirSync(join(dir, prefix))) {
    const rel = join(prefix, name);
    const stat = lstatSync(join(dir, rel));
    out.push({ path: rel, link: stat.isSymbolicLink() });
    if (stat.isDirectory()) out.push(...walk(dir, rel));
  }
  return out;
}

const bytesUnder = (dir: string) =>
  walk(dir).reduce(
    (sum, e) =>
      sum + (e.link ? 0 : lstatSync(join(dir, e.path)).isFile() ? statSync(join(dir, e.path)).size : 0),
    0,
  );

/**
 * A gzip bomb: `prefix` (tar bytes) then `inflated` bytes of zeros, as concatenated gzip members (valid
 * gzip, RFC 1952 §2.2), so the test builds ~1 KiB per 1 MiB inflated in milliseconds.
 */
function bomb(prefix: Buffer, inflated: number): Buffer {
  const member = gzipSync(Buffer.alloc(16 * MiB), { level: 9 });
  return Buffer.concat([gzipSync(prefix), ...Array.from({ length: inflated / (16 * MiB) }, () => member)]);
}

/** Runs `work` while sampling this process's RSS; returns its result and the peak growth in bytes. */
async function peakRss<T>(work: () => Promise<T>): Promise<{ result: T; growth: number }> {
  const before = process.memoryUsage.rss();
  let peak = before;
  const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), 5);
  try {
    const result = await work();
    return { result, growth: Math.max(peak, process.memoryUsage.rss()) - before };
  } finally {
    clearInterval(timer);
  }
}

const MAX_BYTES_ERROR = (bytes: string) =>
  new RegExp(
    `^Source fetch failed: octo/app@abc1234: the repository is larger than ${bytes} unpacked \\(TWINBOX_SOURCE_MAX_BYTES\\)$`,
  );
const MAX_FILES_ERROR = (files: number) =>
  new RegExp(
    `^Source fetch failed: octo/app@abc1234: the repository has more than ${files} files and directories \\(TWINBOX_SOURCE_MAX_FILES\\)$`,
  );

t.test('defaults: 512 MiB and 50,000 files when the caps are not given', async (t) => {
  const fetcher = new GitHubSource({ apiUrl: 'http://127.0.0.1:1', webHosts: [] });
  t.same(fetcher.limits, { maxBytes: 512 * MiB, maxFiles: 50_000 });
});

t.test('gzip bombs are refused as they inflate, in bounded memory', async (t) => {
  // A Twinbox that has fetched a repository before: the first inflate in a process grows the allocator's
  // pools once (~30-60 MiB, freed memory glibc keeps), which is not what a bomb costs.
  const warm = await fetchFrom(t, {
    tarball: tarball([{ name: `${ROOT}/zeros`, content: Buffer.alloc(64 * MiB) }]),
  });
  t.equal(warm.error, undefined, 'an honest 64 MiB archive unpacks');
  const GiB = 1024 * MiB;
  const cases: [string, Buffer][] = [
    // Declared sizes say nothing: 1 GiB of zeros after the end-of-archive blocks.
    [
      'after the end of the archive',
      bomb(Buffer.concat([tarBody([{ name: `${ROOT}/`, type: '5' }]), END]), GiB),
    ],
    // A pax header too big to be read is skipped by tar, but still has to be inflated.
    [
      'in an oversized pax header',
      bomb(
        tarBody([
          { name: `${ROOT}/`, type: '5' },
          { name: 'pax', type: 'x', size: GiB },
        ]),
        GiB,
      ),
    ],
    // A file declaring 1 GiB: refused on its header, before a byte of it is written.
    [
      'in a file declaring 1 GiB',
      bomb(
        tarBody([
          { name: `${ROOT}/`, type: '5' },
          { name: `${ROOT}/big`, size: GiB },
        ]),
        GiB,
      ),
    ],
  ];
  for (const [where, archive] of cases) {
    t.ok(archive.length < 1.5 * MiB, `${where}: ${(archive.length / 1024).toFixed(0)} KiB of gzip`);
    const started = Date.now();
    const { result, growth } = await peakRss(() => fetchFrom(t, { tarball: archive }));
    t.match(result.error, MAX_BYTES_ERROR('536870912 bytes \\(512 MiB\\)'), where);
    t.ok(growth < 64 * MiB, `${where}: RSS grew ${(growth / MiB).toFixed(1)} MiB while refusing (< 64 MiB)`);
    t.ok(bytesUnder(result.dest) === 0, `${where}: nothing written`);
    t.comment(`${where}: refused in ${Date.now() - started} ms, RSS +${(growth / MiB).toFixed(1)} MiB`);
  }
});

t.test('tarball: more files than the cap is refused', async (t) => {
  const entries = Array.from({ length: 150 }, (_, i) => ({
    name: `${ROOT}/f${i}.txt`,
    content: Buffer.from(`${i}`),
  }));
  const { error, dest } = await fetchFrom(t, { tarball: tarball(entries) }, { maxFiles: 100 });
  t.match(error, MAX_FILES_ERROR(100));
  t.ok(walk(dest).length <= 100, `stopped at the cap (${walk(dest).length} written)`);

  // The top directory GitHub wraps everything in is not the repository's: it does not count.
  const ok = await fetchFrom(t, { tarball: tarball(entries.slice(0, 100)) }, { maxFiles: 100 });
  t.equal(ok.error, undefined, 'exactly at the cap passes');
  t.equal(ok.files, 100);
});

t.test('tarball: more bytes than the cap is refused', async (t) => {
  const entries = [0, 1, 2].map((i) => ({ name: `${ROOT}/blob${i}.bin`, content: randomBytes(512 * 1024) }));
  const { error, dest } = await fetchFrom(t, { tarball: tarball(entries) }, { maxBytes: MiB });
  t.match(error, MAX_BYTES_ERROR('1048576 bytes \\(1 MiB\\)'));
  t.ok(bytesUnder(dest) <= MiB, `no more than the cap written (${bytesUnder(dest)})`);

  const ok = await fetchFrom(t, { tarball: tarball(entries.slice(0, 2)) }, { maxBytes: MiB });
  t.equal(ok.error, undefined, 'exactly at the cap passes');
  t.equal(bytesUnder(ok.dest), MiB);
});

t.test('tarball: links and devices are never created, nothing lands outside the workspace', async (t) => {
  const outside = await tempDir(t);
  writeFileSync(join(outside, 'secret.txt'), 'secret');
  const { error, dest, files } = await fetchFrom(t, {
    tarball: tarball([
      { name: `${ROOT}/ok.txt`, content: Buffer.from('fine') },
      // A symlink out, then a write through it: the classic escape.
      { name: `${ROOT}/link`, type: '2', linkname: outside },
      { name: `${ROOT}/link/owned.txt`, content: Buffer.from('owned') },
      { name: `${ROOT}/etc`, type: '2', linkname: '/etc' },
      // A hard link to a file outside, then a write to the link's name.
      { name: `${ROOT}/hard`, type: '1', linkname: join(outside, 'secret.txt') },
      { name: `${ROOT}/hard2`, type: '1', linkname: '../../secret.txt' },
      { name: `${ROOT}/hard`, content: Buffer.from('pwned') },
      { name: `${ROOT}/tty`, type: '3' },
      { name: `${ROOT}/fifo`, type: '6' },
    ]),
  });
  t.equal(error, undefined);
  t.equal(files, 3, 'ok.txt, link/owned.txt (a plain directory now) and hard (a plain file)');
  t.notOk(existsSync(join(outside, 'owned.txt')), 'nothing written through the symlink');
  t.equal(readFileSync(join(outside, 'secret.txt'), 'utf8'), 'secret', 'the hard-link target is untouched');
  t.equal(statSync(join(outside, 'secret.txt')).nlink, 1, 'and has no new link');
  t.same(
    walk(dest).filter((e) => e.link),
    [],
    'no symlink anywhere in the workspace',
  );
  t.ok(lstatSync(join(dest, 'link')).isDirectory());
  t.equal(readFileSync(join(dest, 'hard'), 'utf8'), 'pwned');
  t.equal(statSync(join(dest, 'hard')).nlink, 1);
  for (const name of ['etc', 'hard2', 'tty', 'fifo']) t.notOk(existsSync(join(dest, name)), `no ${name}`);
});

t.test('tarball: ../ and absolute paths are skipped', async (t) => {
  const outside = await tempDir(t);
  const dir = join(outside, 'a', 'b');
  const { error, dest, files } = await fetchFrom(t, {
    tarball: tarball([
      { name: `${ROOT}/../../escaped.txt`, content: Buffer.from('x') },
      { name: `${ROOT}/sub/../../../escaped2.txt`, content: Buffer.from('x') },
      { name: `../escaped3.txt`, content: Buffer.from('x') },
      { name: join(outside, 'abs.txt'), content: Buffer.from('x') },
      { name: '/tmp/twinbox-abs-escape.txt', content: Buffer.from('x') },
      { name: `${ROOT}/kept.txt`, content: Buffer.from('kept') },
    ]),
  });
  t.equal(error, undefined);
  t.equal(files, 1);
  t.equal(readFileSync(join(dest, 'kept.txt'), 'utf8'), 'kept');
  t.same(
    walk(dest).map((e) => e.path),
    ['kept.txt'],
  );
  for (const where of [outside, dir, join(dest, '..'), join(dest, '..', '..')]) {
    for (const name of ['escaped.txt', 'escaped2.txt', 'escaped3.txt'])
      t.notOk(existsSync(join(where, name)), `${name} not in ${where}`);
  }
  t.notOk(existsSync(join(outside, 'abs.txt')));
  t.notOk(existsSync('/tmp/twinbox-abs-escape.txt'));
});

t.test('tarball: setuid, setgid and sticky bits are dropped; x bits kept', async (t) => {
  const cases: [string, number, number][] = [
    ['setuid', 0o4755, 0o755],
    ['setgid', 0o2755, 0o755],
    ['both-no-x', 0o6644, 0o644],
    ['sticky', 0o1777, 0o755],
    ['world-writable', 0o666, 0o644],
    ['owner-x-only', 0o744, 0o755],
  ];
  const { error, dest } = await fetchFrom(t, {
    tarball: tarball([
      { name: `${ROOT}/setgid-dir/`, type: '5', mode: 0o2777 },
      ...cases.map(([name, mode]) => ({
        name: `${ROOT}/setgid-dir/${name}`,
        mode,
        content: Buffer.from(name),
      })),
    ]),
  });
  t.equal(error, undefined);
  const umask = process.umask();
  t.equal(statSync(join(dest, 'setgid-dir')).mode & 0o7777, 0o755 & ~umask, 'directory 0755');
  for (const [name, , expected] of cases) {
    const stat = statSync(join(dest, 'setgid-dir', name));
    t.equal(stat.mode & 0o7777, expected & ~umask, `${name}: ${(stat.mode & 0o7777).toString(8)}`);
    t.equal(stat.uid, process.getuid!(), `${name}: owned by Twinbox`);
  }
});

t.test('tarball: a second compression layer is refused rather than inflated uncounted', async (t) => {
  const { error } = await fetchFrom(t, {
    tarball: gzipSync(tarball([{ name: `${ROOT}/a`, content: Buffer.from('a') }])),
  });
  t.match(error, /^Source fetch failed: octo\/app@abc1234: the archive is compressed twice/);
});

t.test('tarball: a truncated or corrupt archive fails rather than deploying part of it', async (t) => {
  const truncated = gzipSync(
    Buffer.concat([
      tarBody([
        { name: `${ROOT}/`, type: '5' },
        { name: `${ROOT}/whole.txt`, content: Buffer.from('whole') },
        { name: `${ROOT}/cut.txt`, size: 4096 },
      ]),
      Buffer.alloc(512, 'x'),
    ]),
  );
  const cut = await fetchFrom(t, { tarball: truncated });
  t.match(cut.error, /^Source fetch failed: octo\/app@abc1234: TAR_BAD_ARCHIVE: Truncated input/);

  const notGzip = await fetchFrom(t, { tarball: Buffer.from('<html>not an archive</html>') });
  t.match(notGzip.error, /^Source fetch failed: octo\/app@abc1234: incorrect header check/);
});

t.test('trees path: the file cap is checked on the listing, before any blob is fetched', async (t) => {
  const tree = Array.from({ length: 150 }, (_, i) => ({ path: `f${i}.txt`, content: Buffer.from(`${i}`) }));
  const { error, gh, dest } = await fetchFrom(t, { tarball: null, tree }, { maxFiles: 100 });
  t.match(error, MAX_FILES_ERROR(100));
  t.same(
    gh.requests.filter((r) => r.includes('/git/blobs/')),
    [],
    'no blob requested',
  );
  t.notOk(existsSync(dest) && readdirSync(dest).length, 'nothing written');
});

t.test('trees path: the byte cap holds on declared sizes and on the bytes that arrive', async (t) => {
  const big = () => randomBytes(600 * 1024);
  const declared = await fetchFrom(
    t,
    {
      tarball: null,
      tree: [
        { path: 'a', content: big() },
        { path: 'b', content: big() },
      ],
    },
    { maxBytes: MiB },
  );
  t.match(declared.error, MAX_BYTES_ERROR('1048576 bytes \\(1 MiB\\)'), 'declared sizes over the cap');
  t.same(
    declared.gh.requests.filter((r) => r.includes('/git/blobs/')),
    [],
    'refused before fetching blobs',
  );

  // A listing that lies about sizes: the bytes are counted as they stream in, raw or as JSON.
  for (const jsonBlobs of [false, true]) {
    const lying = await fetchFrom(
      t,
      {
        tarball: null,
        jsonBlobs,
        tree: [0, 1, 2].map((i) => ({ path: `dir/${i}.bin`, content: big(), size: 10 })),
      },
      { maxBytes: MiB },
    );
    const how = jsonBlobs ? 'JSON blobs' : 'raw blobs';
    t.match(lying.error, MAX_BYTES_ERROR('1048576 bytes \\(1 MiB\\)'), `${how}: lying sizes`);
    t.ok(bytesUnder(lying.dest) <= MiB, `${how}: no more than the cap written (${bytesUnder(lying.dest)})`);
  }
});

t.test('trees path: 20 MiB blobs work, raw or as JSON; links and escaping paths are skipped', async (t) => {
  const big = randomBytes(20 * MiB);
  const digest = (b: Buffer) => createHash('sha256').update(b).digest('hex');
  for (const jsonBlobs of [false, true]) {
    const how = jsonBlobs ? 'JSON blobs (over the ~5 MiB Octokit could parse)' : 'raw blobs';
    const { error, dest, files, gh } = await fetchFrom(t, {
      tarball: null,
      jsonBlobs,
      tree: [
        { path: 'assets', type: 'tree' },
        { path: 'assets/big.bin', content: big },
        { path: 'run.sh', mode: '100755', content: Buffer.from('#!/bin/sh\n') },
        { path: 'link', mode: '120000', content: Buffer.from('/etc/passwd') },
        { path: '../escaped.txt', content: Buffer.from('x') },
        { path: '/abs.txt', content: Buffer.from('y') },
        { path: 'vendor/sub', type: 'commit' },
      ],
    });
    t.equal(error, undefined, how);
    t.equal(files, 2, `${how}: two files`);
    t.equal(digest(readFileSync(join(dest, 'assets/big.bin'))), digest(big), `${how}: 20 MiB intact`);
    t.equal(statSync(join(dest, 'run.sh')).mode & 0o111, 0o111 & ~process.umask(), `${how}: x kept`);
    t.equal(statSync(join(dest, 'assets/big.bin')).mode & 0o7111, 0, `${how}: no x, no special bits`);
    t.notOk(existsSync(join(dest, 'link')), `${how}: no link`);
    t.notOk(existsSync(join(dest, '..', 'escaped.txt')), `${how}: nothing outside`);
    t.notOk(existsSync('/abs.txt'));
    t.ok(gh.requests.includes('GET /repos/octo/app/tarball/' + SHA), 'the tarball was tried first');
  }
});

t.test('trees path: a truncated listing is refused rather than deployed in part', async (t) => {
  const { error } = await fetchFrom(t, {
    tarball: null,
    truncated: true,
    tree: [{ path: 'a', content: Buffer.from('a') }],
  });
  t.match(error, /^Source fetch failed: octo\/app@abc1234: the repository has too many files for the API/);
});

t.test('through the GitHub twin: a 20 MiB file is fetched; a cap becomes the sandbox error', async (t) => {
  // Compresses over 1000:1, which tar's own inflater refused before this path counted bytes itself.
  const big = Buffer.alloc(20 * MiB, 'a');
  // Seeded rather than pushed: the twin's admin API caps request bodies (TWINBOX_TWIN_BODY_BYTES).
  const gh = await startGitHubTwin({
    seed: {
      users: [{ login: 'octocat' }],
      repos: [
        {
          owner: 'octocat',
          name: 'big',
          files: { 'big.txt': { base64: big.toString('base64') }, 'a.txt': 'a' },
        },
        { owner: 'octocat', name: 'small', files: { 'a.txt': 'a', 'b/c.txt': 'c' } },
      ],
    },
  });
  t.teardown(() => gh.close());
  const fetcher = new GitHubSource({ apiUrl: gh.baseUrl, token: gh.token, webHosts: [] });
  const resolved = await fetcher.resolve({ repo: 'octocat/big', branch: 'main', pr_url: null });
  const dest = join(await tempDir(t), 'ws');
  const files = await fetcher.fetch(resolved, dest);
  t.ok(files >= 3);
  t.equal(statSync(join(dest, 'big.txt')).size, 20 * MiB);

  const tb = await deployingTwinbox(t, gh, { TWINBOX_SOURCE_MAX_FILES: '2' });
  const user = await createUser(tb);
  const created = await call(tb, {
    method: 'POST',
    url: '/sandboxes',
    token: user.key,
    payload: { repo: 'octocat/small', branch: 'main' },
  });
  t.equal(created.status, 201);
  const sandbox = await settle(tb, user, created.body.sandbox_id);
  t.equal(sandbox.status, 'failed');
  t.match(
    sandbox.error,
    /^Source fetch failed: octocat\/small@[0-9a-f]{7}: the repository has more than 2 files and directories \(TWINBOX_SOURCE_MAX_FILES\)$/,
  );
});
