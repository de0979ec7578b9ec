import t from 'tap';
import { existsSync } from 'node:fs';
import { Octokit } from '@octokit/rest';
import { groupAlive } from '../../server/deploy/processes.ts';
import { call, createUser } from '../helpers/twinbox.ts';
import { deployingTwinbox, exampleFiles, githubToDeployFrom, settle, until } from '../helpers/deploy.ts';

t.test('a branch deploys: ready only when the app answers, showing data from its twins', async (t) => {
  const gh = await githubToDeployFrom(t);
  await gh.createRepo({ owner: 'octocat', name: 'shop', files: await exampleFiles('zero-dep') });
  const tb = await deployingTwinbox(t, gh);
  const user = await createUser(tb);
  const created = await call(tb, {
    method: 'POST',
    url: '/sandboxes',
    token: user.key,
    payload: {
      repo: 'octocat/shop',
      branch: 'main',
      twins: ['github', 'stripe'],
      env: { APP_GREETING: 'Hi twins' },
    },
  });
  t.equal(created.status, 201);
  const sandbox = await settle(tb, user, created.body.sandbox_id);
  if (sandbox.status !== 'ready')
    t.comment((await call(tb, { url: `/sandboxes/${sandbox.sandbox_id}/logs`, token: user.key })).body);
  t.equal(sandbox.status, 'ready', sandbox.error ?? '');
  t.match(sandbox.app_url, /^http:\/\/127\.0\.0\.1:\d+$/);
  t.same(Object.keys(sandbox.twins).sort(), ['github', 'stripe']);
  t.equal(sandbox.env_vars.STRIPE_API_BASE, sandbox.twins.stripe.base_url);
  t.equal(sandbox.env_vars.APP_GREETING, 'Hi twins');

  // Data put into the sandbox's twins shows on the app's page.
  const stripe = sandbox.twins.stripe.env_vars;
  const made = await fetch(`${stripe.STRIPE_API_BASE}/v1/customers`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${stripe.STRIPE_SECRET_KEY}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: 'email=ada%40example.com',
  });
  t.equal(made.status, 200);
  const octokit = new Octokit({
    baseUrl: sandbox.twins.github.base_url,
    auth: sandbox.env_vars.GITHUB_TOKEN,
  });
  await octokit.rest.repos.createForAuthenticatedUser({ name: 'twin-made-repo' });
  const page = await (await fetch(sandbox.app_url)).text();
  t.match(page, 'Hi twins');
  t.match(page, 'ada@example.com', 'a Stripe customer from the twin');
  t.match(page, 'twin-made-repo', 'a repository from the GitHub twin');

  const logs = await call(tb, { url: `/sandboxes/${sandbox.sandbox_id}/logs`, token: user.key });
  t.equal(logs.status, 200);
  t.match(logs.headers['content-type'], /text\/plain/);
  t.match(logs.body, /listening on \d+/);
  const other = await createUser(tb);
  t.equal((await call(tb, { url: `/sandboxes/${sandbox.sandbox_id}/logs`, token: other.key })).status, 404);

  // DELETE: no process, no workspace, no twins left.
  const pid = tb.engine!.deployer.appPid(sandbox.sandbox_id)!;
  t.ok(groupAlive(pid));
  const workspace = tb.engine!.deployer.workspaceOf(sandbox.sandbox_id);
  t.ok(existsSync(workspace));
  await call(tb, { method: 'DELETE', url: `/sandboxes/${sandbox.sandbox_id}`, token: user.key });
  t.notOk(groupAlive(pid), 'the process group is gone');
  t.notOk(existsSync(workspace), 'the workspace is gone');
  t.equal(tb.engine!.twinHost.get(sandbox.sandbox_id), undefined, 'the twins are stopped');
  await t.rejects(fetch(sandbox.app_url), 'the app no longer answers');
});
