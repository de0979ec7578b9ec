import t from 'tap';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { extractTarball } from '../../server/deploy/extract.ts';
import { LogSink } from '../../server/deploy/logs.ts';
import { readProfile } from '../../server/deploy/profile.ts';
import { chooseTwinNames, mergeEnv, twinsImpliedByDependencies } from '../../server/deploy/twin-plan.ts';
import { gzipTar } from '../../server/twins/github/tar.ts';
import { tempDir } from '../helpers/twinbox.ts';

const entry = (vars: Record<string, string>) => ({
  base_url: 'http://x',
  admin_url: 'http://x/_twinbox',
  env_vars: vars,
});

t.test('twins: asked-for names win; else profile, then what the dependencies imply', async (t) => {
  t.same(twinsImpliedByDependencies(['stripe', '@slack/web-api', '@octokit/rest', 'express']), [
    'stripe',
    'slack',
    'github',
  ]);
  const all = () => true;
  t.same(chooseTwinNames(['slack'], ['github'], ['stripe'], all), ['slack']);
  t.same(chooseTwinNames([], ['github'], ['stripe', 'github'], all), ['github', 'stripe']);
  t.same(
    chooseTwinNames([], ['nope', 'github'], [], (n) => n === 'github'),
    ['github'],
    'unknown profile twins dropped',
  );
});

t.test('env: profile, then twins, then the caller, later ones winning', async (t) => {
  const merged = mergeEnv(
    { A: 'profile', B: 'profile' },
    { github: entry({ B: 'twin', GITHUB_TOKEN: 'g' }), stripe: entry({ C: 'twin' }) },
    { C: 'caller' },
  );
  t.same(merged, { A: 'profile', B: 'twin', GITHUB_TOKEN: 'g', C: 'caller' });
});

t.test('profile detection', async (t) => {
  const dir = async (files: Record<string, string>) => {
    const root = await tempDir(t);
    for (const [path, text] of Object.entries(files)) {
      await mkdir(join(root, path, '..'), { recursive: true });
      await writeFile(join(root, path), text);
    }
    return root;
  };
  const zero = await readProfile(await dir({ 'package.json': '{"scripts":{"start":"node s.js"}}' }));
  t.match(zero, {
    source: 'node',
    install: null,
    build: null,
    start: 'node s.js',
    portVariable: 'PORT',
    healthPath: '/',
  });
  const locked = await readProfile(
    await dir({
      'package.json': '{"main":"app.js","dependencies":{"stripe":"1"},"scripts":{"build":"tsc"}}',
      'package-lock.json': '{}',
    }),
  );
  t.match(locked, {
    install: 'npm ci --no-audit --no-fund',
    lockfile: 'package-lock.json',
    build: 'npm run build',
    start: 'node app.js',
  });
  t.same(locked.dependencies, ['stripe']);
  const unlocked = await readProfile(
    await dir({ 'package.json': '{"main":"a.js","dependencies":{"x":"1"}}' }),
  );
  t.match(unlocked, { install: 'npm install --no-audit --no-fund', lockfile: null });
  t.match(await readProfile(await dir({ 'index.html': '<h1>hi</h1>' })), {
    source: 'static',
    staticSite: true,
  });
  t.match(await readProfile(await dir({ Procfile: 'worker: x\nweb: python3 -m http.server $PORT\n' })), {
    source: 'procfile',
    start: 'python3 -m http.server $PORT',
  });
  const configured = await readProfile(
    await dir({
      'package.json': '{"scripts":{"start":"node s.js"}}',
      '.github/twinbox.yml':
        'build: make\nstart: ./run\nport_variable: HTTP_PORT\nhealth_path: /healthz\ntwins: [stripe]\nenv:\n  MODE: demo\n  N: 3\n',
    }),
  );
  t.match(configured, {
    source: 'twinbox.yml+node',
    build: 'make',
    start: './run',
    portVariable: 'HTTP_PORT',
    healthPath: '/healthz',
    twins: ['stripe'],
    env: { MODE: 'demo', N: '3' },
  });
  await t.rejects(readProfile(await dir({ 'README.md': 'x' })), /No runtime profile/);
  await t.rejects(readProfile(await dir({ '.github/twinbox.yml': 'start: [1' })), /not valid YAML/);
  await t.rejects(readProfile(await dir({ '.github/twinbox.yml': 'start: x\nbogus: 1' })), /bogus/);
});

/** A raw ustar header, for entries gzipTar cannot write (links, traversal). */
function header(name: string, type: string, size: number, linkname = ''): Buffer {
  const block = Buffer.alloc(512);
  block.write(name, 0);
  block.write('0000644\0', 100);
  block.write('0000000\0', 108);
  block.write('0000000\0', 116);
  block.write(size.toString(8).padStart(11, '0') + '\0', 124);
  block.write('00000000000\0', 136);
  block.write('        ', 148);
  block.write(type, 156);
  block.write(linkname, 157);
  block.write('ustar\0' + '00', 257);
  let sum = 0;
  for (const byte of block) sum += byte;
  block.write(sum.toString(8).padStart(6, '0') + '\0 ', 148);
  return block;
}

t.test('extraction drops the top directory and refuses links and traversal', async (t) => {
  const dest = await tempDir(t);
  const good = gzipTar('o-r-abc1234', [
    { path: 'package.json', content: Buffer.from('{}') },
    { path: 'src/a.js', content: Buffer.from('x'), mode: 0o755 },
  ]);
  t.equal(await extractTarball(good, dest), 2);
  t.equal(readFileSync(join(dest, 'src/a.js'), 'utf8'), 'x');

  const body = Buffer.from('evil');
  const pad = Buffer.alloc(512 - body.length);
  const evil = gzipSync(
    Buffer.concat([
      header('o-r-1/', '5', 0),
      header('o-r-1/../../escaped.txt', '0', body.length),
      body,
      pad,
      header('o-r-1/link', '2', 0, '/etc/passwd'),
      header('o-r-1/hard', '1', 0, '/etc/passwd'),
      Buffer.alloc(1024),
    ]),
  );
  const dest2 = join(await tempDir(t), 'deep', 'dest');
  await extractTarball(evil, dest2);
  t.notOk(existsSync(join(dest2, '..', 'escaped.txt')));
  t.notOk(existsSync(join(dest2, '..', '..', 'escaped.txt')));
  t.notOk(existsSync(join(dest2, 'link')), 'no symlink');
  t.notOk(existsSync(join(dest2, 'hard')), 'no hard link');
});

t.test('logs: a bounded ring buffer in memory, everything in the file', async (t) => {
  const path = join(await tempDir(t), 'x.log');
  const sink = new LogSink(path, 10);
  sink.write('0123456789');
  sink.write('abcdef');
  t.equal(sink.text(), '6789abcdef');
  sink.write('a very long line that alone is bigger than the buffer');
  t.equal(sink.text().length, 10);
  await sink.close();
  t.match(readFileSync(path, 'utf8'), /^0123456789abcdefa very long/);
});
