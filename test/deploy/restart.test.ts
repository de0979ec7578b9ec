import t from 'tap';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { groupAlive } from '../../server/deploy/confinement/processes.ts';
import { freePort } from '../../server/deploy/ports.ts';
import { isMountPoint } from '../../server/deploy/steps/workspace.ts';
import { call, createUser } from '../helpers/twinbox.ts';
import {
  deployingTwinbox,
  deploySandbox,
  exampleFiles,
  githubToDeployFrom,
  until,
} from '../helpers/deploy.ts';
import { requireHost } from '../security/isolation-fixtures.ts';
import { checkResumed, createCustomer, dataDirFor, mountsUnder } from './restart-helpers.ts';

/**
 * Restarts lose nothing (issue 14, part 2), graceful: Twinbox stops and starts again on the same data dir
 * and port; its ready sandbox comes back ready (restart-helpers.ts says what must hold). The kill -9 case
 * is restart-kill.test.ts (two deploys in one file outgrow the file timeout on a loaded machine).
 */

t.test('a graceful stop and start on the same data dir resumes a ready sandbox', async (t) => {
  if (!requireHost(t, { bwrap: true, root: true })) return;
  const gh = await githubToDeployFrom(t);
  await gh.createRepo({ owner: 'octocat', name: 'shop', files: await exampleFiles('zero-dep') });
  const dataDir = await dataDirFor(t);
  // Same port both times: the sandbox's URLs name Twinbox's port.
  const port = String(await freePort());
  const first = await deployingTwinbox(t, gh, { PORT: port }, dataDir);
  const user = await createUser(first);
  const before = await deploySandbox(first, user, {
    repo: 'octocat/shop',
    branch: 'main',
    twins: ['stripe'],
  });
  t.equal(before.status, 'ready', before.error ?? '');
  await createCustomer(before);
  const oldApp = first.engine!.deployer.appPid(before.sandbox_id)!;
  const workspace = first.engine!.deployer.workspaceOf(before.sandbox_id);
  t.ok(isMountPoint(workspace), 'the workspace is mounted (a size-capped disk image) while it runs');
  await first.stop();
  t.notOk(groupAlive(oldApp), 'the app stopped with Twinbox');
  t.same(
    mountsUnder(dataDir),
    [],
    'nothing stays mounted while Twinbox is down (the workspace is kept on disk)',
  );

  const second = await deployingTwinbox(t, gh, { PORT: port }, dataDir);
  // Twinbox listens while it resumes (in the background): wait for the resume to end.
  await second.lifecycle.idle();
  const after = (await call(second, { url: `/sandboxes/${before.sandbox_id}`, token: user.key })).body;
  const logs = (await call(second, { url: `/sandboxes/${before.sandbox_id}/logs`, token: user.key })).body;
  await checkResumed(t, before, after, logs);
  t.ok(isMountPoint(workspace), 'its workspace is mounted again');
  const events = (await call(second, { url: `/sandboxes/${before.sandbox_id}/timeline`, token: user.key }))
    .body;
  t.match(JSON.stringify(events), /Deploy step \\"start\\" done/, 'the resume steps are on the timeline');

  // Torn down for good: its kept state goes with it.
  const deleted = await call(second, {
    method: 'DELETE',
    url: `/sandboxes/${before.sandbox_id}`,
    token: user.key,
  });
  t.equal(deleted.body.status, 'deleted');
  await until(
    () => !existsSync(join(dataDir, 'resume', `${before.sandbox_id}.json`)) && !existsSync(workspace),
    'the resume record and workspace removed',
  );
  const pods = readdirSync(join(dataDir, 'pods'));
  t.notOk(
    pods.some((slot) => existsSync(join(dataDir, 'pods', slot, 'state', before.sandbox_id))),
    'no twin state of the deleted sandbox is left',
  );
});
