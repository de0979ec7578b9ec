import t from 'tap';
import { execFile } from 'node:child_process';
import { spawnProcessGroup } from '../helpers/process.ts';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, symlink } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startGitHubTwin } from '../../examples/github-twin.ts';
import { exampleFiles } from '../helpers/deploy.ts';
import { REPO_ROOT } from '../helpers/process.ts';
import { hostCounts, NOTHING, registryEntryFor } from '../helpers/leftovers.ts';
import { requireHost } from '../security/isolation-fixtures.ts';
import '../helpers/sandbox-hosts.ts';

const run = promisify(execFile);

// The README's "Start it", word for word, in a fresh clone: `npm start` with no settings (so the data
// directory is the default `./.twinbox`, inside the checkout), the key from `.twinbox/dev-api-key`, and
// the README's `POST /sandboxes`. Only PORT (a free one) and GITHUB_API_URL (a GitHub twin playing GitHub,
// as `npm run demo` does, since this machine has no internet) are set. Every other test and the demo use
// a temporary data directory elsewhere, which is how a data directory inside the checkout went unseen.

/** A free TCP port on loopback, as a person would pick one. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

// The app of a second sandbox: what of Twinbox's data directory can a deployed app read? Its workspace
// is <data dir>/workspaces/<id>/files, so the data directory is three levels up.
const PROBE_APP = `import { createServer } from 'node:http';
import { readdirSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
const dataDir = resolve(process.cwd(), '../../..');
const attempt = (fn) => { try { return { ok: true, value: fn() }; } catch (e) { return { ok: false, code: e.code }; } };
createServer((req, res) => {
  if (req.url === '/healthz') return res.end('ok');
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify({
    dataDir,
    key: attempt(() => readFileSync(resolve(dataDir, 'encryption-key'), 'utf8')),
    devKey: attempt(() => readFileSync(resolve(dataDir, 'dev-api-key'), 'utf8')),
    listing: attempt(() => readdirSync(dataDir)),
    workspaces: attempt(() => readdirSync(resolve(dataDir, 'workspaces'))),
    folder: attempt(() => readdirSync('..')),
    checkout: attempt(() => readdirSync(resolve(dataDir, '..'))),
  }));
}).listen(Number(process.env.PORT), '0.0.0.0');
`;

t.test('README first run: npm start in a fresh clone, the README curl, a sandbox ready', async (t) => {
  if (!requireHost(t, { bwrap: true, cgroups: true, root: true })) return;
  const base = await mkdtemp(join(tmpdir(), 'twinbox-readme-'));
  const clone = join(base, 'twinbox');
  await run('git', ['clone', '--quiet', REPO_ROOT, clone]);
  // A fresh `npm install` takes a minute of CPU; the checkout's own install is the same packages. The
  // pod reads node_modules through this link (server/deploy/pods.ts binds its real directory).
  await symlink(join(REPO_ROOT, 'node_modules'), join(clone, 'node_modules'), 'dir');
  t.notOk(existsSync(join(clone, '.twinbox')), 'a fresh clone has no data directory');

  const gh = await startGitHubTwin({ seed: { users: [{ login: 'octocat' }] } });
  t.teardown(() => gh.close());
  await gh.createRepo({ owner: 'octocat', name: 'zero-dep', files: await exampleFiles('zero-dep') });
  await gh.createRepo({
    owner: 'octocat',
    name: 'probe',
    files: {
      'package.json': JSON.stringify({
        name: 'probe',
        private: true,
        type: 'module',
        scripts: { start: 'node probe.js' },
      }),
      'probe.js': PROBE_APP,
    },
  });

  const port = await freePort();
  const api = `http://127.0.0.1:${port}`;
  const { child, output, exited } = spawnProcessGroup(t, 'npm', ['start'], {
    cwd: clone,
    // What a person's shell has (PATH, HOME), and the two settings above: no TWINBOX_DATA_DIR.
    env: { PATH: process.env.PATH, HOME: process.env.HOME, PORT: String(port), GITHUB_API_URL: gh.baseUrl },
  });
  t.teardown(async () => {
    // A failed run may leave its workspaces mounted (a stop keeps a ready sandbox's for a resume).
    const { stdout } = await run('findmnt', ['-rn', '-o', 'TARGET']).catch(() => ({ stdout: '' }));
    for (const target of stdout
      .split('\n')
      .filter((line) => line.startsWith(`${base}/`))
      .reverse())
      await run('umount', ['-l', target]).catch(() => {});
    await rm(base, { recursive: true, force: true, maxRetries: 3 });
  });

  // Bounds a hang on a loaded machine; measures nothing.
  const until = async (what: string, check: () => boolean | Promise<boolean>, timeoutMs: number) => {
    const deadline = Date.now() + timeoutMs;
    while (!(await check())) {
      if (Date.now() > deadline || child.exitCode !== null)
        throw new Error(
          `${child.exitCode !== null ? 'Twinbox exited' : 'timed out'} waiting for ${what}:\n${output()}`,
        );
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  };
  await until('Twinbox to listen', () => output().includes(`Twinbox listening on ${api}`), 180_000);
  t.match(
    output(),
    `(data in ${join(clone, '.twinbox')})`,
    'the default data directory, inside the checkout',
  );
  const keyFile = join(clone, '.twinbox', 'dev-api-key');
  await until('the dev API key', () => existsSync(keyFile), 60_000);
  const headers = {
    authorization: `Bearer ${(await readFile(keyFile, 'utf8')).trim()}`,
    'content-type': 'application/json',
  };

  const deploy = async (repo: string) => {
    // The README's curl, with the twin's repository.
    const created = await fetch(`${api}/sandboxes`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ repo, branch: 'main', ttl_minutes: 30 }),
    });
    const body = (await created.json()) as Record<string, any>;
    t.equal(created.status, 201, `POST /sandboxes accepted ${repo}: ${body.detail ?? body.status}`);
    let sandbox = body;
    await until(
      `${repo} to settle`,
      async () => {
        sandbox = (await (await fetch(`${api}/sandboxes/${body.sandbox_id}`, { headers })).json()) as any;
        return sandbox.status !== 'queued' && sandbox.status !== 'building';
      },
      240_000,
    );
    t.equal(sandbox.status, 'ready', `${repo} is ready (error: ${sandbox.error})`);
    return sandbox;
  };

  const app = await deploy('octocat/zero-dep');
  const page = await fetch(app.app_url);
  t.equal(page.status, 200, 'its app_url serves the app');
  t.match(await page.text(), /<html|<!doctype/i, 'the zero-dep page');

  // The data directory is inside the checkout: the app attempts to read its secrets and fails.
  const probe = await deploy('octocat/probe');
  const seen = (await (await fetch(`${probe.app_url}/`)).json()) as Record<string, any>;
  t.equal(seen.dataDir, join(clone, '.twinbox'), 'the probe looked in the data directory');
  t.equal(seen.key.ok, false, `the app cannot read <data dir>/encryption-key (${seen.key.code})`);
  t.equal(seen.devKey.ok, false, `the app cannot read <data dir>/dev-api-key (${seen.devKey.code})`);
  t.equal(seen.listing.ok, true, 'the app lists what it sees of the data directory');
  t.same(seen.listing.value, ['workspaces'], 'of the data directory, only its own workspace is there');
  t.same(
    seen.workspaces.value,
    [encodeURIComponent(probe.sandbox_id)],
    "of the workspaces, its own folder alone: not another sandbox's, nor its own image's",
  );
  t.same(seen.folder.value, ['files'], 'and in that folder, its files alone');
  t.notOk(seen.checkout.ok && seen.checkout.value.includes('package.json'), 'the checkout is not in view');
  t.ok(existsSync(join(clone, '.twinbox', 'encryption-key')), 'the key it could not read exists');

  // Done with them: a stop then has no ready sandbox to keep for a resume.
  for (const sandbox of [app, probe]) {
    const deleted = await fetch(`${api}/sandboxes/${sandbox.sandbox_id}`, { method: 'DELETE', headers });
    t.ok(deleted.ok, `DELETE ${sandbox.sandbox_id}: ${deleted.status}`);
  }

  // Stopped as a service manager stops it: SIGTERM to `npm start` alone, which npm passes on to its
  // script. The script execs Twinbox: a shell in between would die of the signal and leave Twinbox
  // running, its namespaces and registry entry left behind once the test removed its directory.
  const entry = registryEntryFor(join(clone, '.twinbox'));
  t.ok(entry, 'Twinbox is in the host registry');
  process.kill(child.pid!, 'SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  const code = await Promise.race([
    exited,
    new Promise<string>(
      (resolve) => (timer = setTimeout(() => resolve('still running after 120 s'), 120_000)),
    ),
  ]);
  clearTimeout(timer);
  t.match(code, /^(0|SIGTERM|143)$/, `npm start ends on SIGTERM:\n${output().slice(-600)}`);
  t.match(output(), /kept nothing for resume/, 'Twinbox itself stopped');
  t.same(hostCounts(entry!), NOTHING, 'and left no namespace, mount, cgroup or process');
  t.notOk(registryEntryFor(join(clone, '.twinbox')), 'nor its registry entry');
});
