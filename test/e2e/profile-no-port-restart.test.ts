import t from 'tap';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from '../../server/deploy/ports.ts';
import { call, createUser } from '../helpers/twinbox.ts';
import { deployingTwinbox, deploySandbox, githubToDeployFrom } from '../helpers/deploy.ts';
import { requireHost } from '../security/isolation-fixtures.ts';
import { dataDirFor } from '../deploy/restart-helpers.ts';

// An app with no HTTP port (port: false) is resumed after a Twinbox restart like any other: its process
// started again from its kept workspace, and its URL still saying it has no HTTP port.

t.test('port: false across a Twinbox restart: resumed, started again, its URL still says so', async (t) => {
  if (!requireHost(t, { bwrap: true, root: true, cgroups: true })) return;
  const gh = await githubToDeployFrom(t);
  await gh.createRepo({
    owner: 'octocat',
    name: 'ticker',
    files: {
      '.github/twinbox.yml': 'port: false\nstart: node ticker.js\n',
      // Each start leaves a line: the restart must start it again, not only mark it ready.
      'ticker.js':
        "require('node:fs').appendFileSync('starts.txt', 'started\\n'); setInterval(() => {}, 1000);",
    },
  });
  const dataDir = await dataDirFor(t);
  // Same port both times: the sandbox's URLs name Twinbox's port.
  const port = String(await freePort());
  const first = await deployingTwinbox(t, gh, { PORT: port }, dataDir);
  const user = await createUser(first);
  const before = await deploySandbox(first, user, { repo: 'octocat/ticker', branch: 'main' }, 240_000);
  t.equal(before.status, 'ready', before.error ?? '');
  await first.stop();

  const second = await deployingTwinbox(t, gh, { PORT: port }, dataDir);
  await second.lifecycle.idle();
  const after = (await call(second, { url: `/sandboxes/${before.sandbox_id}`, token: user.key })).body;
  t.equal(after.status, 'ready', after.error ?? '');
  t.equal(after.app_url, before.app_url);
  const workspace = second.engine!.deployer.workspaceOf(before.sandbox_id);
  t.equal(readFileSync(join(workspace, 'starts.txt'), 'utf8'), 'started\nstarted\n', 'started again');
  const page = await fetch(after.app_url, { headers: { accept: 'application/json' } });
  t.equal(page.status, 404);
  t.match(await page.json(), { code: 'app_has_no_http_port' });
});
