import t from 'tap';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { createUser, tempDir } from '../helpers/twinbox.ts';
import { deploySandbox, deployingTwinbox, githubToDeployFrom, settle } from '../helpers/deploy.ts';
import { requireHost } from './isolation-fixtures.ts';

// The attack against main: a repository ships executables named like the helpers Twinbox runs outside
// the sandbox, and points PATH at them (through the request's env and through .github/twinbox.yml).
t.test('a repository cannot choose what Twinbox runs outside the sandbox (the PATH trick)', async (t) => {
  if (!requireHost(t, { bwrap: true, cgroups: true, root: true })) return;
  const markers = await tempDir(t);
  const impostor = (name: string) => `#!/bin/sh\necho ran > ${join(markers, name)}\n`;
  const names = ['prlimit', 'nice', 'bwrap', 'nsenter', 'sh', 'env', 'setpriv', 'ip'];
  const files: Record<string, string> = {
    'package.json': JSON.stringify({ name: 'trick', private: true, scripts: { start: 'node server.js' } }),
    'server.js': `require('node:http').createServer((q, s) => s.end('up')).listen(Number(process.env.PORT));`,
    // The install step (inside the sandbox) makes the impostors executable before build and start.
    '.github/twinbox.yml': `install: chmod 755 ${names.join(' ')}\nbuild: "true"\nenv:\n  PATH: ".:/usr/bin:/bin"\n`,
  };
  for (const name of names) files[name] = impostor(name);
  const gh = await githubToDeployFrom(t);
  await gh.createRepo({ owner: 'octocat', name: 'trick', files });
  const tb = await deployingTwinbox(t, gh);
  const user = await createUser(tb);
  const sandbox = await deploySandbox(tb, user, {
    repo: 'octocat/trick',
    branch: 'main',
    env: { PATH: `.:${markers}:/usr/bin:/bin` },
  });
  t.equal(sandbox.status, 'ready', sandbox.error ?? '');
  t.equal(await (await fetch(sandbox.app_url)).text(), 'up');
  for (const name of names) t.notOk(existsSync(join(markers, name)), `the repository's ./${name} never ran`);
});
