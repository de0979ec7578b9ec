import t from 'tap';
import { existsSync, lstatSync, readdirSync, readFileSync, readlinkSync, statSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  DependencyCache,
  PRIVATE_NPM_CACHE,
  type InstallRunner,
} from '../../server/deploy/steps/dependency-cache.ts';
import type { Isolation } from '../../server/deploy/confinement/isolation.ts';
import { LogSink } from '../../server/deploy/confinement/logs.ts';
import { runStep } from '../../server/deploy/confinement/processes.ts';
import type { RuntimeProfile } from '../../server/deploy/steps/profile.ts';
import { createWorkspace, isMountPoint, removeWorkspace } from '../../server/deploy/steps/workspace.ts';
import {
  bubblewrapModes,
  isolationFor,
  MiB,
  requireHost,
  runnableModes,
  sandboxId,
  scratch,
} from './isolation-fixtures.ts';

const profile = (install: string, lockfile: string | null = 'package-lock.json'): RuntimeProfile => ({
  source: 'node',
  install,
  lockfile,
  build: null,
  start: 'node index.js',
  portVariable: 'PORT',
  healthPath: '/',
  twins: [],
  env: {},
  dependencies: [],
  staticSite: false,
  webhooks: {},
  root: '',
  port: null,
});

/** A repository checkout with a lockfile (and any extra files). */
async function repo(t: Parameters<typeof scratch>[0], extra: Record<string, string> = {}): Promise<string> {
  const dir = await scratch(t, 'twinbox-ws-');
  const files = {
    'package.json': '{"name":"app","dependencies":{"left-pad":"1"}}',
    'package-lock.json': '{}',
    ...extra,
  };
  for (const [name, text] of Object.entries(files)) await writeFile(join(dir, name), text);
  return dir;
}

/** Runs installs as the deployer does: a step of the sandbox, confined, with the cache's env added. */
function runner(
  isolation: Isolation,
  id: string,
  log: LogSink,
  env: Record<string, string> = {},
  seen: Array<{ cwd: string; env: Record<string, string> }> = [],
): InstallRunner {
  return (command, cwd, writable, extra) => {
    seen.push({ cwd, env: extra });
    return runStep(
      'install',
      { command, cwd, writable, sandboxId: id, memoryBytes: 1024 * MiB },
      { PATH: '/usr/bin:/bin', ...env, ...extra },
      isolation,
      log,
      { timeoutMs: 60_000 },
    );
  };
}

async function sinkFor(t: Parameters<typeof scratch>[0]): Promise<LogSink> {
  const log = new LogSink(join(await scratch(t), 'install.log'), MiB, 4 * MiB);
  t.teardown(() => log.close());
  return log;
}

const FAKE_NPM =
  'mkdir -p node_modules/pkg && echo "$TENANT" > node_modules/pkg/owner && echo "planted-by-$TENANT" > "$npm_config_cache/planted"';

t.test('node_modules: one tree per account; .npmrc and the lockfile are in the key', async (t) => {
  if (!requireHost(t, { bwrap: true, cgroups: true })) return;
  const isolation = isolationFor(t, runnableModes()[0]!);
  const data = await scratch(t);
  const cache = new DependencyCache(join(data, 'cache', 'node_modules'), { stagingBytes: 64 * MiB });
  const log = await sinkFor(t);
  const installs: Array<{ cwd: string; env: Record<string, string> }> = [];
  const provide = async (scope: string, ws: string) =>
    cache.provide(
      profile(FAKE_NPM),
      ws,
      runner(isolation, sandboxId(), log, { TENANT: scope }, installs),
      scope,
    );

  const wsA = await repo(t);
  const wsB = await repo(t);
  const entryA = (await provide('acct-a', wsA))!;
  const entryB = (await provide('acct-b', wsB))!;
  t.not(entryA, entryB, 'two accounts, same lockfile: two trees');
  t.equal(readFileSync(join(entryA, 'node_modules/pkg/owner'), 'utf8'), 'acct-a\n');
  t.equal(readFileSync(join(entryB, 'node_modules/pkg/owner'), 'utf8'), 'acct-b\n');
  t.equal(readlinkSync(join(wsB, 'node_modules')), join(entryB, 'node_modules'));
  t.equal(readFileSync(join(wsB, 'node_modules/pkg/owner'), 'utf8'), 'acct-b\n', "B's app sees B's tree");

  const wsA2 = await repo(t);
  t.equal(await provide('acct-a', wsA2), entryA, 'the same account reuses its tree');
  t.equal(installs.length, 2, 'without installing again');

  const withNpmrc = await repo(t, { '.npmrc': 'registry=https://registry.example.test/\n' });
  t.not(await provide('acct-a', withNpmrc), entryA, '.npmrc changes the key');
  const otherLock = await repo(t, { 'package-lock.json': '{"lockfileVersion":3}' });
  t.not(await provide('acct-a', otherLock), entryA, 'the lockfile changes the key');

  t.notOk(existsSync(join(data, 'cache', 'npm')), 'no shared npm cache exists');
  t.same(
    readdirSync(join(data, 'cache', 'node_modules')).filter((n) => n.startsWith('.')),
    [],
    'no staging left',
  );
  for (const { cwd, env } of installs) {
    t.equal(env.npm_config_cache, join(cwd, PRIVATE_NPM_CACHE), 'npm cache inside the install dir');
    t.notOk(existsSync(env.npm_config_cache!), 'and removed after');
  }
  t.equal(statSync(join(data, 'cache', 'node_modules')).mode & 0o777, 0o700);
});

t.test("an install can neither read nor write another install's npm cache", async (t) => {
  if (!requireHost(t, { bwrap: true, cgroups: true })) return;
  for (const mode of bubblewrapModes(t)) {
    await t.test(mode, async (t) => {
      const isolation = isolationFor(t, mode);
      const data = await scratch(t);
      const cache = new DependencyCache(join(data, 'cache', 'node_modules'), { stagingBytes: 64 * MiB });
      const logA = await sinkFor(t);
      const logB = await sinkFor(t);
      const seenA: Array<{ cwd: string; env: Record<string, string> }> = [];
      // Tenant A plants a file in its npm cache and keeps its install running until told to finish.
      const installA = cache.provide(
        profile(
          'echo secret-a > "$npm_config_cache/planted"; while [ ! -e release-me ]; do /usr/bin/sleep 0.05; done; mkdir node_modules',
        ),
        await repo(t),
        runner(isolation, sandboxId(), logA, {}, seenA),
        'acct-a',
      );
      const deadline = Date.now() + 30_000;
      while (!(seenA[0] && existsSync(join(seenA[0].env.npm_config_cache!, 'planted')))) {
        if (Date.now() > deadline) throw new Error(`A never planted: ${logA.text()}`);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      const aCache = seenA[0]!.env.npm_config_cache!;
      const aDir = seenA[0]!.cwd;

      // Tenant B, meanwhile, goes looking for it by its exact path.
      await cache.provide(
        profile(
          `cat ${aCache}/planted && echo LEAKED; echo poison > ${aCache}/poison && echo WROTE; ` +
            `ls ${aDir} && echo LISTED; ls -A "$npm_config_cache"; echo B-DONE; mkdir node_modules`,
        ),
        await repo(t),
        runner(isolation, sandboxId(), logB),
        'acct-b',
      );
      const outB = logB
        .text()
        .split('\n')
        .filter((l) => !l.startsWith('[twinbox '))
        .join('\n');
      t.match(outB, /B-DONE/);
      t.notMatch(outB, /LEAKED|WROTE|LISTED|secret-a|^planted$/m, "B saw nothing of A's");
      t.notOk(existsSync(join(aCache, 'poison')), "A's cache was not written");
      t.equal(readFileSync(join(aCache, 'planted'), 'utf8'), 'secret-a\n');

      await writeFile(join(aDir, 'release-me'), '');
      await installA;
      t.notOk(existsSync(aCache), "A's npm cache is gone after its install");
    });
  }
});

t.test(
  'uncached installs (no lockfile) get a private npm cache in the workspace, removed after',
  async (t) => {
    if (!requireHost(t, { bwrap: true, cgroups: true })) return;
    const isolation = isolationFor(t, runnableModes()[0]!);
    const cache = new DependencyCache(join(await scratch(t), 'nm'));
    const ws = await repo(t);
    const log = await sinkFor(t);
    const result = await cache.provide(
      profile('echo "cache=$npm_config_cache"; test -d "$npm_config_cache" && mkdir node_modules', null),
      ws,
      runner(isolation, sandboxId(), log),
      'acct-a',
    );
    t.equal(result, undefined);
    t.match(log.text(), `cache=${join(ws, PRIVATE_NPM_CACHE)}`);
    t.ok(existsSync(join(ws, 'node_modules')));
    t.notOk(existsSync(join(ws, PRIVATE_NPM_CACHE)));
  },
);

t.test('a cache-filling install is capped, and setuid bits do not reach the cache', async (t) => {
  if (!requireHost(t, { bwrap: true, cgroups: true, root: true })) return;
  const isolation = isolationFor(t, runnableModes()[0]!);
  const dir = join(await scratch(t), 'nm');
  const cache = new DependencyCache(dir, { stagingBytes: 4 * MiB });
  const log = await sinkFor(t);
  await t.rejects(
    cache.provide(
      profile(`mkdir node_modules && head -c ${16 * MiB} /dev/zero > node_modules/huge`),
      await repo(t),
      runner(isolation, sandboxId(), log),
      'acct-a',
    ),
    /exited with code/,
  );
  t.match(log.text(), /No space left on device/);
  t.same(readdirSync(dir), [], 'no entry, no staging left');
  t.notOk(readFileSync('/proc/self/mountinfo', 'utf8').includes(dir), 'no mount left');

  const entry = (await cache.provide(
    profile('mkdir node_modules && cp /usr/bin/true node_modules/t && chmod 6755 node_modules/t'),
    await repo(t),
    runner(isolation, sandboxId(), log),
    'acct-a',
  ))!;
  const mode = lstatSync(join(entry, 'node_modules', 't')).mode;
  t.equal(mode & 0o6000, 0, 'setuid and setgid stripped');
  t.equal(mode & 0o755, 0o755);
  t.notOk(isMountPoint(entry));
});

t.test('sweep: staging areas a crashed run left (mounted or not) are removed', async (t) => {
  const dir = join(await scratch(t), 'nm');
  await createWorkspace(join(dir, '.staging-abc-1'), MiB);
  await createWorkspace(join(dir, '.incoming-2'), MiB);
  await createWorkspace(join(dir, 'kept-entry'), MiB);
  t.teardown(() => removeWorkspace(join(dir, 'kept-entry')));
  const cache = new DependencyCache(dir);
  t.same((await cache.sweep()).sort(), ['.incoming-2', '.staging-abc-1']);
  t.same(readdirSync(dir), ['kept-entry']);
  t.notOk(isMountPoint(join(dir, '.staging-abc-1')));
});
