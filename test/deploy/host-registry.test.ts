import t from 'tap';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { trustedExecutables } from '../../server/deploy/confinement/trusted-executables.ts';
import { HostRegistry, processStart, type InstanceEntry } from '../../server/deploy/confinement/leftovers.ts';
import { namespacePids, netnsPrefixOf } from '../../server/deploy/confinement/netns.ts';
import { missingPart } from '../helpers/ci.ts';
import { namespacesWith } from '../helpers/leftovers.ts';
import { until } from '../helpers/deploy.ts';

/**
 * The host registry's rule (server/deploy/confinement/leftovers.ts), on a registry of this test's own: a start sweeps
 * a registered Twinbox only when its owner is dead (a pid reused by another process counts as dead) AND
 * its data directory is gone. Real namespaces; cgroups as plain `twinbox/<instance>` directories (rmdir
 * and the kill loop treat them alike).
 */
t.test('a start sweeps only Twinboxes whose owner is dead and whose data directory is gone', async (t) => {
  if (process.getuid?.() !== 0) return missingPart(t, 'not root (cannot make network namespaces)');
  if (!trustedExecutables().ip) return missingPart(t, '`ip` (iproute2) is not installed');
  const root = await mkdtemp(join(tmpdir(), 'twinbox-registry-'));
  t.teardown(() => rm(root, { recursive: true, force: true }));
  const registry = join(root, 'instances');
  mkdirSync(registry);
  const made: string[] = [];
  t.teardown(() => {
    for (const name of made) {
      try {
        execFileSync('ip', ['netns', 'del', name], { stdio: 'ignore' });
      } catch (error) {
        // Once its sleeper is gone, another file's Twinbox start may sweep it first (see `occupy` below).
        if (namespacesWith(name).length) throw error;
      }
    }
  });
  // A pid that no longer runs: a child that has exited (and been reaped).
  const deadPid = spawnSync('true').pid!;

  const entry = (label: string, owner: { pid: number; start: string }, dataDirExists: boolean) => {
    const instance = randomBytes(8).toString('hex');
    const dataDir = join(root, `data-${label}`);
    if (dataDirExists) mkdirSync(dataDir);
    const cgroup = join(root, `cgroup-${label}`, 'twinbox', instance);
    mkdirSync(join(cgroup, 'sandbox-1'), { recursive: true });
    const netns = `${netnsPrefixOf(instance)}slot1`;
    execFileSync('ip', ['netns', 'add', netns]);
    made.push(netns);
    const record: InstanceEntry = {
      format: 1,
      instance,
      data_dir: dataDir,
      pid: owner.pid,
      pid_start: owner.start,
      netns_prefix: netnsPrefixOf(instance),
      cgroups: [cgroup],
      registered_at: new Date().toISOString(),
    };
    writeFileSync(join(registry, `${instance}.json`), JSON.stringify(record));
    return { instance, netns, cgroup, file: join(registry, `${instance}.json`) };
  };
  // Other test files start Twinboxes meanwhile, and a start deletes every empty `tb-` namespace that the
  // host's real registry does not name (this registry is the test's own): a process inside each namespace
  // that must stay keeps those sweeps off it, so only the sweep under test decides.
  const occupy = (netns: string) => {
    const sleeper = spawn('ip', ['netns', 'exec', netns, 'sleep', '600'], { stdio: 'ignore' });
    t.teardown(() => void sleeper.kill('SIGKILL'));
    return until(async () => ((await namespacePids('ip', netns)) ?? []).length > 0, `a process in ${netns}`);
  };
  const self = { pid: process.pid, start: processStart(process.pid)! };
  const gone = entry('gone', { pid: deadPid, start: '1' }, false);
  const reused = entry('reused', { pid: process.pid, start: `${self.start}0` }, false);
  const kept = entry('kept', { pid: deadPid, start: '1' }, true);
  const live = entry('live', self, false);
  await occupy(kept.netns);
  await occupy(live.netns);

  const logged: string[] = [];
  const sweep = await new HostRegistry({
    instance: randomBytes(8).toString('hex'),
    dataDir: root,
    cgroups: [],
    logger: pino({ level: 'info' }, { write: (line: string) => void logged.push(line) }),
    dir: registry,
    unregisteredNamespaces: false,
  }).start();

  for (const [what, swept] of [
    ['owner dead, directory gone', gone],
    ['pid reused by another process, directory gone', reused],
  ] as const) {
    t.same(namespacesWith(swept.netns), [], `${what}: its namespace is deleted`);
    t.notOk(existsSync(swept.cgroup), `${what}: its cgroups are removed`);
    t.notOk(existsSync(swept.file), `${what}: its entry is dropped`);
  }
  t.same(sweep.instances.sort(), [gone.instance, reused.instance].sort(), 'the sweep names those two');
  const said = logged
    .map((line) => JSON.parse(line) as { msg?: string; instances?: string[]; namespaces?: number })
    .find((entry) => entry.msg === 'removed what earlier Twinboxes left on this host');
  t.same(
    { instances: said?.instances?.sort(), namespaces: said?.namespaces },
    { instances: [gone.instance, reused.instance].sort(), namespaces: 2 },
    'and the start says what it removed, and whose',
  );
  for (const [what, untouched] of [
    ['owner dead, directory still there (its next start resumes and sweeps)', kept],
    ['owner alive, directory gone', live],
  ] as const) {
    t.same(namespacesWith(untouched.netns), [untouched.netns], `${what}: its namespace stays`);
    t.ok(existsSync(join(untouched.cgroup, 'sandbox-1')), `${what}: its cgroups stay`);
    t.ok(existsSync(untouched.file), `${what}: its entry stays`);
  }
});
