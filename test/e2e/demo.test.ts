import t from 'tap';
import { existsSync } from 'node:fs';
import { instanceOf } from '../../server/deploy/confinement/leftovers.ts';
import { netnsPrefixOf } from '../../server/deploy/confinement/netns.ts';
import { groupAlive } from '../../server/deploy/confinement/processes.ts';
import { until } from '../helpers/deploy.ts';
import { hostCounts, NOTHING, registryEntryFor } from '../helpers/leftovers.ts';
import { REPO_ROOT } from '../helpers/process.ts';
import '../helpers/sandbox-hosts.ts';
import { spawnProcessGroup } from '../helpers/process.ts';

// The README's `npm run demo`: a whole deploy against the GitHub twin, seeded from a prompt.
t.test('npm run demo deploys the zero-dep example and its page shows data from the twins', async (t) => {
  const { child, output, exited } = spawnProcessGroup(t, 'npm', ['run', 'demo', '--silent'], {
    cwd: REPO_ROOT,
    env: { PATH: process.env.PATH, HOME: process.env.HOME },
  });

  const deadline = Date.now() + 90_000;
  let appUrl: string | undefined;
  while (!appUrl && Date.now() < deadline && child.exitCode === null) {
    appUrl = /ready: the app is at (http:\/\/\S+)/.exec(output())?.[1];
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  t.ok(appUrl, `the demo reached ready:\n${output()}`);
  const data = (await (await fetch(`${appUrl}/data.json`)).json()) as any;
  t.equal(data.github.login, 'octocat', 'data from the GitHub twin');
  t.equal(data.stripe.customers.length, 3, 'the three customers the prompt seeded, from the Stripe twin');
  t.notMatch(output(), /twinbox_sk_/, 'no API key on the terminal');

  // Its data directory, named by the key file it prints; what it has on the host (helpers/leftovers.ts).
  const dataDir = /\$\(cat (\S+)\/demo-api-key\)/.exec(output())?.[1];
  t.ok(dataDir, 'the demo names its data directory');
  const entry = registryEntryFor(dataDir!) ?? {
    data_dir: dataDir!,
    netns_prefix: netnsPrefixOf(instanceOf(dataDir!)),
    cgroups: [],
  };
  t.ok(hostCounts(entry).processes.length > 0, 'its pods and app run while it is up');

  // Ctrl-C reaches npm and the demo alike (one process group); npm may report the signal itself.
  process.kill(-child.pid!, 'SIGINT');
  t.match(await exited, /^(0|SIGINT|130)$/, 'Ctrl-C stops it');
  await until(() => !groupAlive(child.pid!), 'every process of the demo to end', 60_000);
  await t.rejects(fetch(`${appUrl}/data.json`), 'the app stopped with the demo');
  // "removes its data" (issue 20): its workspace was left mounted in the removed directory.
  t.notOk(existsSync(dataDir!), 'its data directory is removed');
  t.same(hostCounts(entry), NOTHING, 'no namespace, mount, cgroup or process of it is left');
});
