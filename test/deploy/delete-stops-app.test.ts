import t, { type Test } from 'tap';
import { existsSync } from 'node:fs';
import { groupAlive } from '../../server/deploy/confinement/processes.ts';
import { call, createUser } from '../helpers/twinbox.ts';
import { deployingTwinbox, deploySandbox, githubToDeployFrom, until } from '../helpers/deploy.ts';
import { requireHost } from '../security/isolation-fixtures.ts';

/** A plain Node server that shrugs SIGTERM off, as some apps do: only SIGKILL stops it. */
const stubbornApp = {
  'package.json': JSON.stringify({ name: 'stubborn', private: true, scripts: { start: 'node server.js' } }),
  'server.js': `const http = require('node:http');
process.on('SIGTERM', () => console.log('SIGTERM received, carrying on'));
http
  .createServer((req, res) => res.end('still here'))
  .listen(Number(process.env.PORT), () => console.log('listening on ' + process.env.PORT));
`,
};

async function deleteStubborn(t: Test, env: Record<string, string>): Promise<void> {
  const gh = await githubToDeployFrom(t);
  await gh.createRepo({ owner: 'octocat', name: 'stubborn', files: stubbornApp });
  const tb = await deployingTwinbox(t, gh, env);
  const user = await createUser(tb);
  const sandbox = await deploySandbox(tb, user, { repo: 'octocat/stubborn', branch: 'main' });
  t.equal(sandbox.status, 'ready', sandbox.error ?? '');
  const live = await fetch(sandbox.app_url);
  t.equal(live.status, 200);
  t.equal(await live.text(), 'still here');
  const pid = tb.engine!.deployer.appPid(sandbox.sandbox_id)!;
  t.ok(groupAlive(pid), 'the app runs');
  const workspace = tb.engine!.deployer.workspaceOf(sandbox.sandbox_id);

  const deleted = await call(tb, {
    method: 'DELETE',
    url: `/sandboxes/${sandbox.sandbox_id}`,
    token: user.key,
  });
  t.equal(deleted.status, 200);
  t.equal(deleted.body.status, 'deleted');
  // Unreachable as soon as DELETE has answered, whatever is still being cleaned up behind it.
  const gone = await fetch(sandbox.app_url);
  t.equal(gone.status, 410, 'the app URL says the sandbox is gone');
  t.notMatch(await gone.text(), 'still here');
  t.equal(tb.engine!.deployer.podOf(sandbox.sandbox_id), undefined, 'its pod is no longer its own');

  // The workspace goes last: once it is gone the cleanup is done, and SIGKILL has ended the app.
  await until(() => !existsSync(workspace), 'the cleanup to remove the workspace', 60_000);
  t.notOk(groupAlive(pid), "the app's process group is gone, though it ignored SIGTERM");
}

t.test('DELETE of an app that ignores SIGTERM, with full isolation', async (t) => {
  if (!requireHost(t, { bwrap: true })) return;
  await deleteStubborn(t, {});
});

t.test('DELETE of an app that ignores SIGTERM, isolation off (a plain process group)', async (t) => {
  await deleteStubborn(t, { TWINBOX_SANDBOX_ISOLATION: 'off' });
});
