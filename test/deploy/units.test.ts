import t from 'tap';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { extractTarball } from '../../server/deploy/steps/extract.ts';
import { Cgroups } from '../../server/deploy/confinement/cgroups.ts';
import { LogSink, SandboxLogs } from '../../server/deploy/confinement/logs.ts';
import { readProfile } from '../../server/deploy/steps/profile.ts';
import { appEnvironment, withAppUrl } from '../../server/deploy/steps/pipeline.ts';
import {
  chooseTwinNames,
  mergeEnv,
  twinsImpliedByDependencies,
} from '../../server/deploy/steps/twin-plan.ts';
import { gzipTar } from '../../server/twins/vendors/github/tar.ts';
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
  t.same(twinsImpliedByDependencies(['probot']), ['github'], 'a Probot app talks to GitHub');
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
  // Documents only: served as a static site whose index shows the README (octocat/Hello-World).
  t.match(await readProfile(await dir({ README: 'Hello World!' })), { source: 'static', staticSite: true });
  t.match(await readProfile(await dir({ 'docs.md': 'x', 'readme.MD': 'x' })), { source: 'static' });
  await t.rejects(readProfile(await dir({ 'notes.txt': 'x' })), /No runtime profile/);
  await t.rejects(readProfile(await dir({ '.github/twinbox.yml': 'start: [1' })), /not valid YAML/);
  await t.rejects(readProfile(await dir({ '.github/twinbox.yml': 'start: x\nbogus: 1' })), /bogus/);
});

t.test('profile root, port and ${APP_URL}', async (t) => {
  const dir = async (files: Record<string, string>) => {
    const root = await tempDir(t);
    for (const [path, text] of Object.entries(files)) {
      await mkdir(join(root, path, '..'), { recursive: true });
      await writeFile(join(root, path), text);
    }
    return root;
  };
  const yml = (text: string) => ({ '.github/twinbox.yml': text });
  // Detection runs in the root folder: its package.json, not the repository's.
  const nested = await readProfile(
    await dir({
      ...yml('root: server/node\nport: 4242\n'),
      'package.json': '{"scripts":{"start":"node top.js"}}',
      'server/node/package.json': '{"scripts":{"start":"node app.js"},"dependencies":{"stripe":"1"}}',
    }),
  );
  t.match(nested, { root: 'server/node', port: 4242, start: 'node app.js', source: 'twinbox.yml+node' });
  t.same(nested.dependencies, ['stripe']);
  t.match(await readProfile(await dir({ 'index.html': 'x' })), { root: '', port: null });
  // `./a/` is the folder `a`; `.` the repository root.
  t.match(await readProfile(await dir({ ...yml('root: ./a/\n'), 'a/index.html': 'x' })), { root: 'a' });
  t.match(await readProfile(await dir({ ...yml('root: .\n'), 'index.html': 'x' })), { root: '' });

  for (const bad of ['../..', 'a/../../x', '/etc', 'a\\b'])
    await t.rejects(
      readProfile(await dir({ ...yml(`root: '${bad}'\nstart: x\n`), 'a/x': 'x' })),
      { message: /"root" must be a folder inside the repository/ },
      bad,
    );
  await t.rejects(readProfile(await dir({ ...yml('root: nope\nstart: x\n') })), {
    message: /"root" \("nope"\) does not exist/,
  });
  await t.rejects(readProfile(await dir({ ...yml('root: f\nstart: x\n'), f: 'file' })), {
    message: /is not a folder/,
  });
  // A hostile repository links its root out of the workspace: the link is followed and refused.
  const linked = await dir({ ...yml('root: out/inner\nstart: x\n') });
  const elsewhere = await tempDir(t);
  await mkdir(join(elsewhere, 'inner'));
  await symlink(elsewhere, join(linked, 'out'));
  await t.rejects(readProfile(linked), { message: /leads outside the repository/ });
  const selfLink = await dir({ ...yml('root: up\nstart: x\n'), 'a/x': 'x' });
  await symlink('..', join(selfLink, 'up'));
  await t.rejects(readProfile(selfLink), { message: /leads outside the repository/ });

  for (const bad of ['80', '1023', '65536', '42.5', 'web', '3128', '5432'])
    await t.rejects(readProfile(await dir(yml(`port: ${bad}\nstart: x\n`))), { message: /"port" must/ }, bad);
  t.match(await readProfile(await dir(yml('port: 1024\nstart: x\n'))), { port: 1024 });
  t.match(await readProfile(await dir(yml('port: 65535\nstart: x\n'))), { port: 65535 });

  const url = 'http://0b1c.localhost:3000';
  t.same(withAppUrl({ A: '${APP_URL}/cb', B: 'x${APP_URL}${APP_URL}', C: '$APP_URL ${HOME}', D: '' }, url), {
    A: `${url}/cb`,
    B: `x${url}${url}`,
    C: '$APP_URL ${HOME}',
    D: '',
  });
  const profile = await readProfile(await dir(yml('start: x\nport_variable: HTTP_PORT\n')));
  const env = appEnvironment('/w', { APP_URL: 'http://evil', PUBLIC_URL: 'http://cdn' }, profile, 4242, url);
  t.match(env, { APP_URL: url, PUBLIC_URL: 'http://cdn', HTTP_PORT: '4242', PORT: '4242' });
  t.equal(appEnvironment('/w', {}, profile, 4242, url).PUBLIC_URL, url);
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

t.test('logs: a bounded ring buffer in memory; on disk two files within the cap, newest last', async (t) => {
  const dir = await tempDir(t);
  const path = join(dir, 'x.log');
  const sink = new LogSink(path, 10, 40);
  sink.write('0123456789');
  sink.write('abcdef');
  t.equal(sink.text(), '6789abcdef');
  sink.write('a very long line that alone is bigger than the buffer');
  t.equal(sink.text().length, 10);
  await sink.close();
  // Each file holds at most half the cap; a chunk bigger than that keeps its tail.
  t.equal(readFileSync(path, 'utf8'), 'lone is bigger than the buffer'.slice(-20));
  t.equal(readFileSync(`${path}.1`, 'utf8'), '0123456789abcdef');

  const logs = new SandboxLogs(dir, 1000, 64);
  const live = await logs.open('s1');
  for (let i = 0; i < 100; i++) live.write(`line ${i}\n`);
  await logs.close('s1');
  const total = readdirSync(dir)
    .filter((f) => f.startsWith('s1.log'))
    .reduce((sum, f) => sum + statSync(join(dir, f)).size, 0);
  t.ok(total <= 64, `${total} bytes on disk`);
  t.match(await logs.read('s1'), /line 98\nline 99\n$/);
  // Reopened (a redeploy of the same sandbox): the cap counts what is already there.
  const again = await logs.open('s1');
  again.write('x'.repeat(30));
  await logs.close('s1');
  t.ok(statSync(join(dir, 's1.log')).size <= 32);
});

t.test('logs: nextWrite settles at the next write, one promise for every waiter', async (t) => {
  const sink = new LogSink(join(await tempDir(t), 'x.log'), 100);
  let settled = 0;
  const first = sink.nextWrite().then(() => settled++);
  const second = sink.nextWrite().then(() => settled++);
  t.equal(sink.nextWrite(), sink.nextWrite(), 'the same promise while no write came');
  await new Promise((resolve) => setImmediate(resolve));
  t.equal(settled, 0, 'nothing before a write');
  sink.write('pod ready\n');
  await Promise.all([first, second]);
  t.equal(settled, 2, 'both waiters hear of it');
  const next = sink.nextWrite();
  let later = false;
  void next.then(() => (later = true));
  await new Promise((resolve) => setImmediate(resolve));
  t.notOk(later, 'a wait begun after the write waits for the one after');
  sink.write('more');
  await next;
  t.ok(later);
  await sink.close();
});

t.test('cgroups v2: limits written, controllers delegated down the tree', async (t) => {
  const root = await tempDir(t);
  const base = join(root, 'svc');
  await mkdir(base, { recursive: true });
  await writeFile(join(root, 'cgroup.controllers'), 'cpuset cpu io memory pids\n');
  await writeFile(join(base, 'cgroup.controllers'), 'cpu memory pids\n');
  const cgroups = Cgroups.open(
    { pids: 64, cpus: 0.5, memoryBytes: 256 * 1024 * 1024 },
    { root, selfCgroup: '0::/svc\n', instance: 'inst' },
  );
  t.equal(cgroups.version, 'v2', cgroups.reason ?? '');
  const procs = cgroups.create('sb-1');
  const dir = join(base, 'twinbox', 'inst', 'sb-1');
  t.same(procs, [join(dir, 'cgroup.procs')]);
  t.equal(readFileSync(join(dir, 'pids.max'), 'utf8'), '64');
  t.equal(readFileSync(join(dir, 'memory.max'), 'utf8'), String(256 * 1024 * 1024));
  t.equal(readFileSync(join(dir, 'cpu.max'), 'utf8'), '50000 100000');
  for (const level of [base, join(base, 'twinbox'), join(base, 'twinbox', 'inst')])
    t.equal(readFileSync(join(level, 'cgroup.subtree_control'), 'utf8'), '+pids +memory +cpu');
  t.throws(() => cgroups.create('../escape'), /not a usable cgroup name/);

  const missing = await tempDir(t);
  await writeFile(join(missing, 'cgroup.controllers'), 'memory\n');
  const none = Cgroups.open({ pids: 1, cpus: 1, memoryBytes: 1 }, { root: missing, selfCgroup: '0::/\n' });
  t.equal(none.version, 'none');
  t.match(none.reason, /pids, cpu not delegated/);
  t.same(none.create('x'), [], 'no cgroup: nothing to join');
});
