import t from 'tap';
import { existsSync, readFileSync } from 'node:fs';
import { chmod, mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  findExecutable,
  trustedExecutables,
  TRUSTED_ENV,
  TRUSTED_PATH,
} from '../../server/deploy/confinement/trusted-executables.ts';
import { environmentScript } from '../../server/deploy/confinement/isolation.ts';
import {
  isolationFor,
  requireHost,
  runIn,
  runnableModes,
  sandboxId,
  scratch,
  startIn,
} from './isolation-fixtures.ts';

/** Every program Twinbox runs outside a sandbox, as a repository would ship it to be run instead. */
const IMPOSTORS = [
  'prlimit',
  'nice',
  'bwrap',
  'nsenter',
  'sh',
  'setpriv',
  'env',
  'cat',
  'mount',
  'umount',
  'ip',
];

/** A repository whose top directory holds impostors that leave a marker outside when they run. */
async function poisonedWorkspace(t: Parameters<typeof scratch>[0]) {
  const outside = await scratch(t, 'twinbox-outside-');
  const markers = join(outside, 'markers');
  await mkdir(markers);
  const workspace = await scratch(t, 'twinbox-repo-');
  for (const name of IMPOSTORS) {
    const path = join(workspace, name);
    await writeFile(path, `#!/bin/sh\necho ran > ${markers}/${name}\nexit 0\n`);
    await chmod(path, 0o755);
  }
  return { outside, markers, workspace };
}

t.test('helpers are resolved once, on the fixed trusted path, to absolute paths', async (t) => {
  const found = trustedExecutables();
  const trusted = TRUSTED_PATH.split(':');
  for (const [name, path] of Object.entries(found)) {
    t.ok(path!.startsWith('/'), `${name} is absolute`);
    t.ok(
      trusted.includes(path!.slice(0, path!.lastIndexOf('/'))),
      `${name} (${path}) is on the trusted path`,
    );
  }
  t.ok(found.sh && found.cat && found.env, 'sh, cat and env are found');
  const { workspace } = await poisonedWorkspace(t);
  const saved = process.env.PATH;
  process.env.PATH = `${workspace}:${saved}`;
  try {
    t.equal(trustedExecutables(), found, 'a changed PATH of Twinbox itself changes nothing');
  } finally {
    process.env.PATH = saved;
  }
  t.equal(
    findExecutable('sh', `.:relative:${workspace.slice(1)}`),
    undefined,
    'relative entries are ignored',
  );
  t.same(Object.keys(TRUSTED_ENV).sort(), ['LANG', 'PATH']);
});

t.test('the app environment is a script of quoted exports, names checked', async (t) => {
  const script = environmentScript({ A: "it's $(x) `y`\nz", 'BASH_FUNC_x%%': '() { :; }', 'bad-name': 'v' });
  t.equal(script, `export A='it'\\''s $(x) \`y\`\nz'\n`);
});

t.test('PATH and impostor binaries in the repository never run outside the sandbox', async (t) => {
  if (!requireHost(t, { bwrap: true, cgroups: true })) return;
  const { markers, outside, workspace } = await poisonedWorkspace(t);
  // Twinbox's own PATH poisoned too, before anything is resolved in this process.
  const saved = process.env.PATH;
  process.env.PATH = `${workspace}:${saved}`;
  t.teardown(() => {
    process.env.PATH = saved;
  });
  const appEnv = {
    PATH: `${workspace}:/usr/bin:/bin`,
    LD_PRELOAD: join(workspace, 'evil.so'),
    SECRET: 'app-secret-value',
  };
  for (const mode of runnableModes()) {
    await t.test(mode, async (t) => {
      const isolation = isolationFor(t, mode);
      const id = sandboxId();
      const bubblewrap = mode !== 'process-group';
      const result = await runIn(
        isolation,
        {
          sandboxId: id,
          cwd: workspace,
          // Into this process's own network namespace: exercises the nsenter prefix.
          netns: `/proc/${process.pid}/ns/net`,
          // Builtins only: inside, the app's PATH legitimately finds the repository's programs first.
          command: `echo "ran-inside $SECRET"; if [ -e ${outside} ]; then echo host-view; else echo no-host-view; fi`,
        },
        appEnv,
      );
      t.ok(result.ok, `the command ran: ${result.error ?? ''}`);
      t.match(result.output, /ran-inside app-secret-value/);
      t.match(result.output, bubblewrap ? /no-host-view/ : /host-view/);
      t.ok((isolation.usage(id)?.cpuUsec ?? 0) > 0, 'it ran inside the sandbox cgroup');
      t.same(await readdir(markers), [], 'no impostor ran');

      // While it runs, the programs outside hold Twinbox's fixed environment, and no secret in argv.
      const { proc } = await startIn(
        t,
        isolation,
        { sandboxId: id, cwd: workspace, command: 'echo up; exec /usr/bin/sleep 30' },
        /up/,
        appEnv,
      );
      // Under bubblewrap that pid stays the outside bwrap (a test harness may add its own variables to every
      // spawn; the app's never appear). Without it the chain execs all the way into the app itself.
      if (bubblewrap) {
        const environ = readFileSync(`/proc/${proc.pid}/environ`, 'utf8').split('\0');
        t.ok(environ.includes(`PATH=${TRUSTED_ENV.PATH}`), 'outside PATH is the trusted one');
        t.notOk(
          environ.some((v) => /^(SECRET|LD_PRELOAD)=/.test(v)),
          'none of the app environment outside',
        );
      }
      t.notMatch(readFileSync(`/proc/${proc.pid}/cmdline`, 'utf8'), /app-secret-value/, 'no secret in argv');
      t.ok(readFileSync(`/proc/${proc.pid}/cmdline`, 'utf8').startsWith('/'), 'spawned by absolute path');
      t.same(await readdir(markers), []);
    });
  }
  t.notOk(existsSync(join(markers, 'prlimit')));
});
