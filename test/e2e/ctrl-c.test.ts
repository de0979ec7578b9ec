import t from 'tap';
import { existsSync, realpathSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { instanceOf } from '../../server/deploy/confinement/leftovers.ts';
import { groupAlive } from '../../server/deploy/confinement/processes.ts';
import { exampleFiles, githubToDeployFrom, until } from '../helpers/deploy.ts';
import { hostCounts, NOTHING, registryEntry } from '../helpers/leftovers.ts';
import { REPO_ROOT } from '../helpers/process.ts';
import { requireHost } from '../security/isolation-fixtures.ts';
import '../helpers/sandbox-hosts.ts';
import { localStartEnv, spawnProcessGroup } from '../helpers/process.ts';

/**
 * Ctrl-C in the terminal of `npm start` (issue 20, part 2): the terminal sends SIGINT to the whole
 * foreground process group, npm and Twinbox at once, and npm relays it to Twinbox again. Twinbox must stop
 * as cleanly as on a SIGTERM of its own: no namespace, mount, cgroup or process of it left, its ready
 * sandbox kept for a resume in files only, the data directory removable. (Under the tsx wrapper the
 * second signal ended Twinbox mid-stop: this test failed then.)
 */
t.test('Ctrl-C of npm start leaves nothing on the host', async (t) => {
  if (!requireHost(t, { bwrap: true, cgroups: true, root: true })) return;
  const gh = await githubToDeployFrom(t);
  await gh.createRepo({ owner: 'octocat', name: 'shop', files: await exampleFiles('zero-dep') });
  const dataDir = realpathSync(await mkdtemp(join(tmpdir(), 'twinbox-ctrl-c-')));
  t.teardown(() => rm(dataDir, { recursive: true, force: true, maxRetries: 3 }));

  const { child, output, exited } = spawnProcessGroup(t, 'npm', ['start', '--silent'], {
    cwd: REPO_ROOT,
    env: localStartEnv({
      TWINBOX_DATA_DIR: dataDir,
      GITHUB_API_URL: gh.baseUrl,
      GITHUB_OAUTH_URL: gh.baseUrl,
      GITHUB_TOKEN: gh.token,
    }),
  });

  // Generous: a start on a loaded 2-core machine took 13 s; this bounds a hang, it measures nothing.
  await until(() => /Twinbox listening on http/.test(output()), `npm start to listen:\n${output()}`, 120_000);
  const baseUrl = /Twinbox listening on (http:\/\/\S+)/.exec(output())![1]!;
  const entry = registryEntry(instanceOf(dataDir));
  t.ok(entry, 'Twinbox is in the host registry');
  t.not(entry!.pid, child.pid, 'Twinbox is a process of its own under npm (same group)');
  // Written just after it listens (server/bootstrap.ts).
  await until(() => existsSync(join(dataDir, 'dev-api-key')), 'the local API key', 30_000);
  const key = (await readFile(join(dataDir, 'dev-api-key'), 'utf8')).trim();
  const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/json' };
  const created = await fetch(`${baseUrl}/sandboxes`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ repo: 'octocat/shop', branch: 'main', twins: ['stripe'] }),
  });
  t.equal(created.status, 201);
  let sandbox = (await created.json()) as Record<string, any>;
  await until(
    async () => {
      sandbox = (await (
        await fetch(`${baseUrl}/sandboxes/${sandbox.sandbox_id}`, { headers })
      ).json()) as any;
      return sandbox.status !== 'queued' && sandbox.status !== 'building';
    },
    'the sandbox to settle',
    180_000,
  );
  t.equal(sandbox.status, 'ready', sandbox.error ?? '');
  t.equal((await fetch(`${sandbox.app_url}/data.json`)).status, 200, 'its app answers');
  const running = hostCounts(entry!);
  t.ok(running.namespaces.length >= 1, `namespaces while running: ${running.namespaces.length}`);
  t.ok(running.mounts.length >= 1, `mounts while running: ${running.mounts.length}`);
  t.ok(running.processes.length >= 1, `processes while running: ${running.processes.length}`);

  // Ctrl-C: SIGINT to the whole group; then a second Ctrl-C while the stop runs, as an impatient user
  // (or npm's relay of the first) sends. Neither may end Twinbox before its stop has removed everything.
  process.kill(-child.pid!, 'SIGINT');
  await until(() => /"stopping"/.test(output()), 'the stop to begin', 30_000);
  try {
    process.kill(-child.pid!, 'SIGINT');
  } catch {
    // the group is gone already: the stop was quicker than this second signal
  }
  // npm reports the signal it got itself (it re-raises it once its script has ended).
  t.match(await exited, /^(0|SIGINT|130)$/, 'npm ends');
  await until(() => !groupAlive(child.pid!), 'every process of the group to end', 60_000);
  t.match(output(), /kept 1 ready sandbox for resume/, 'the stop ran to its end and says what it keeps');
  t.match(output(), /already stopping/, 'the second signal was told to wait, not obeyed');
  t.same(hostCounts(entry!), NOTHING, 'no namespace, mount, cgroup or process of it is left');
  t.notOk(registryEntry(entry!.instance), 'its registry entry went with it');
  await t.resolves(rm(dataDir, { recursive: true }), 'its data directory can be removed');
});
