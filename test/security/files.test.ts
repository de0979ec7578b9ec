import t from 'tap';
import { existsSync, readdirSync } from 'node:fs';
import { createUser } from '../helpers/twinbox.ts';
import { deploySandbox, deployingTwinbox, githubToDeployFrom } from '../helpers/deploy.ts';
import { journalSeq } from '../../server/store/journal.ts';
import { requireHost } from './isolation-fixtures.ts';

// A hostile app looks for Twinbox's secrets: its data dir, its environment, its processes, other
// sandboxes' workspaces. It reports what it could read at GET /.
const snoop = `
const fs = require('node:fs');
const tryRead = (p) => { try { return fs.readFileSync(p, 'utf8').slice(0, 200); } catch (e) { return null; } };
const tryList = (p) => { try { return fs.readdirSync(p); } catch (e) { return null; } };
const paths = JSON.parse(process.env.SNOOP);
const report = {
  read: Object.fromEntries(paths.files.map((p) => [p, tryRead(p)])),
  listed: Object.fromEntries(paths.dirs.map((p) => [p, tryList(p)])),
  pids: (tryList('/proc') || []).filter((n) => /^\\d+$/.test(n)).length,
  proc1: tryRead('/proc/1/cmdline'),
  proc1env: tryRead('/proc/1/environ'),
  env: Object.keys(process.env).sort(),
  nodeOptions: process.env.NODE_OPTIONS ?? null,
  uid: process.getuid(),
};
require('node:http').createServer((q, s) => s.end(JSON.stringify(report))).listen(Number(process.env.PORT));
`;

t.test("an app reads none of Twinbox's files, environment or processes, nor another workspace", async (t) => {
  if (!requireHost(t, { bwrap: true, cgroups: true, root: true })) return;
  process.env.TWINBOX_TEST_SECRET_MARKER = 'marker-only-in-twinbox';
  t.teardown(() => delete process.env.TWINBOX_TEST_SECRET_MARKER);
  const gh = await githubToDeployFrom(t);
  await gh.createRepo({
    owner: 'octocat',
    name: 'snoop',
    files: { 'package.json': JSON.stringify({ name: 'snoop', main: 'snoop.js' }), 'snoop.js': snoop },
  });
  const tb = await deployingTwinbox(t, gh);
  const user = await createUser(tb);
  const create = (snoopPaths: { files: string[]; dirs: string[] }) =>
    deploySandbox(tb, user, {
      repo: 'octocat/snoop',
      branch: 'main',
      twins: ['stripe'],
      env: { SNOOP: JSON.stringify(snoopPaths) },
    });
  const victim = await create({ files: [], dirs: [] });
  t.equal(victim.status, 'ready', victim.error ?? '');
  const data = tb.dataDir;
  const victimWorkspace = tb.engine!.deployer.workspaceOf(victim.sandbox_id);
  // Files that exist on the host, each checked here first, so an unreadable one means isolation, not
  // absence: the key that seals stored secrets, and on the embedded store the records of the JWT secret
  // and the API keys, in their files or still in the store's journal (docs/store.md).
  const secrets = [
    `${data}/encryption-key`,
    ...(existsSync(`${data}/store`)
      ? readdirSync(`${data}/store`)
          .filter((name) => journalSeq(name) !== undefined)
          .map((name) => `${data}/store/${name}`)
      : []),
    ...['server_secrets', 'api_keys'].flatMap((table) => {
      const dir = `${data}/store/${table}`;
      return existsSync(dir)
        ? readdirSync(dir)
            .filter((name) => name.endsWith('.json'))
            .slice(0, 1)
            .map((name) => `${dir}/${name}`)
        : [];
    }),
  ];
  for (const path of [...secrets, `${victimWorkspace}/snoop.js`]) t.ok(existsSync(path), `${path} exists`);
  const attacker = await create({
    files: [
      ...secrets,
      `${victimWorkspace}/snoop.js`,
      `/proc/${process.pid}/environ`,
      `/proc/${process.pid}/cmdline`,
    ],
    dirs: [
      `${data}/store`,
      `${data}/twins`,
      `${data}/logs`,
      `${data}/pods`,
      victimWorkspace,
      '/root',
      '/work',
    ],
  });
  t.equal(attacker.status, 'ready', attacker.error ?? '');
  t.equal(attacker.isolation, 'full');
  const report = (await (await fetch(attacker.app_url)).json()) as any;
  t.ok(Object.keys(report.read).length >= secrets.length + 3, 'every probe was reported');
  for (const [path, text] of Object.entries(report.read)) t.equal(text, null, `cannot read ${path}`);
  for (const [path, list] of Object.entries(report.listed)) t.equal(list, null, `cannot list ${path}`);
  t.ok(report.pids < 10, `sees only its own few processes (${report.pids}), not the host's`);
  t.notMatch(String(report.proc1), /node|tsx|tap/, 'pid 1 inside is not a Twinbox or host process');
  t.notMatch(String(report.proc1env), /marker-only-in-twinbox/);
  t.notOk(
    report.env.some((name: string) => /^TWINBOX_|^GITHUB_TOKEN$|^TAP/.test(name)),
    `only its own variables: ${report.env.join(' ')}`,
  );
  // NODE_OPTIONS is Twinbox's own, for the sandbox's CA (server/pod/layout.ts trustEnv): not the host's
  // (the test runner's loader would show here).
  t.equal(report.nodeOptions, '--use-openssl-ca', 'NODE_OPTIONS names only the CA store, none of the host’s');
  t.not(report.uid, 0, 'not root inside');
});
