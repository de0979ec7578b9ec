/**
 * The GitHub App on two processes sharing one PostgreSQL (docs/github-app.md, "Several processes"): two
 * API Twinboxes in this test process on one fresh schema, each with its own App, job workers and
 * in-memory state, so the only thing they share is the database, as two hosts would. The GitHub twin
 * plays GitHub; the test sends each delivery itself, to the process it chooses. No deploy engine: a
 * sandbox's later states are written to the store and announced by the other process, as a runner does.
 *
 * - Deliveries of one pull request raced over both processes: exactly one record, one sandbox, one
 *   comment, every delivery processed once without an error, and the comment and the Deployment end on
 *   the newest state even though it was announced while the deliveries were being processed.
 * - The ordering rule: an older state handled after a newer one changes nothing (no comment edit, no
 *   Deployment status going back).
 */
import t, { type Test } from 'tap';
import { randomUUID } from 'node:crypto';
import { Octokit } from '@octokit/rest';
import { MARKER } from '../../app/comment.ts';
import type { SandboxRecord } from '../../server/store/records.ts';
import { missingPart } from '../helpers/ci.ts';
import { freshSchema, postgresMissing, deliveryJob as deliveryJobOf } from '../helpers/postgres.ts';
import { createUser, startTestTwinbox, tempDir, type TestTwinbox } from '../helpers/twinbox.ts';
import { githubWithApp, INSTALLATION_ID, postWebhook, APP_ID, WEBHOOK_SECRET } from './rig.ts';

async function twoProcesses(t: Test) {
  const { gh, privateKey } = await githubWithApp(t);
  // The twin's own deliveries go nowhere: the test sends each one itself.
  await gh.setWebhookTarget({ url: 'http://127.0.0.1:9/nowhere' });
  await gh.createRepo({ owner: 'octocat', name: 'shop', files: { 'README.md': '# shop\n' } });
  const { url, schema } = await freshSchema();
  const start = async () => {
    const tb = await startTestTwinbox(
      t,
      {
        TWINBOX_DATABASE_URL: url,
        TWINBOX_ROLE: 'api',
        TWINBOX_ADMIN_TOKEN: 'processes-test-admin-token-0123456789',
        // One public URL, as every process of a deployment has: the comment's links are the same whoever writes.
        TWINBOX_PUBLIC_URL: 'http://twinbox.test',
        GITHUB_API_URL: gh.baseUrl,
        GITHUB_OAUTH_URL: gh.baseUrl,
        GITHUB_APP_ID: String(APP_ID),
        GITHUB_APP_PRIVATE_KEY: privateKey,
        GITHUB_WEBHOOK_SECRET: WEBHOOK_SECRET,
      },
      { dataDir: await tempDir(t) },
    );
    await tb.server.start();
    return tb;
  };
  // One after the other: the first applies the migrations.
  const a = await start();
  const b = await start();
  const octokit = new Octokit({ baseUrl: gh.baseUrl, auth: gh.token });
  const { data: octocat } = await octokit.rest.users.getByUsername({ username: 'octocat' });
  // The installer's Twinbox account, connected to GitHub as octocat (what GitHub connect records).
  const user = await createUser(a, 'pro');
  await a.store.identities.insert({
    id: randomUUID(),
    account_id: user.id,
    provider: 'github',
    provider_key: `github:${octocat.id}`,
    login: 'octocat',
    created_at: new Date().toISOString(),
  });
  const { data: repository } = await octokit.rest.repos.get({ owner: 'octocat', repo: 'shop' });

  const openPull = async (branch: string) => {
    await gh.pushFiles({ owner: 'octocat', repo: 'shop', branch, files: { 'branch.txt': branch } });
    const { data: pr } = await octokit.rest.pulls.create({
      owner: 'octocat',
      repo: 'shop',
      head: branch,
      base: 'main',
      title: branch,
    });
    const payload = (action: string) => ({
      action,
      number: pr.number,
      pull_request: pr,
      repository,
      sender: octocat,
      installation: { id: INSTALLATION_ID },
    });
    return { pr, payload, key: `${repository.id}-${pr.number}` };
  };
  const comments = async (number: number) =>
    (
      await octokit.paginate(octokit.rest.issues.listComments, {
        owner: 'octocat',
        repo: 'shop',
        issue_number: number,
        per_page: 100,
      })
    ).filter((c) => c.body?.includes(MARKER));
  /** Every status of every Deployment of the pull request's environment, oldest first per Deployment. */
  const deployments = async (number: number) => {
    const { data } = await octokit.rest.repos.listDeployments({
      owner: 'octocat',
      repo: 'shop',
      environment: `twinbox/pr-${number}`,
    });
    const result: Array<{ id: number; states: string[] }> = [];
    for (const deployment of data) {
      const { data: statuses } = await octokit.rest.repos.listDeploymentStatuses({
        owner: 'octocat',
        repo: 'shop',
        deployment_id: deployment.id,
      });
      // GitHub lists the newest first.
      result.push({ id: deployment.id, states: statuses.map((s) => s.state).reverse() });
    }
    return result;
  };
  const sandboxesOf = async (prUrl: string) =>
    (await a.store.sandboxes.findBy('owner_id', user.id)).filter((s) => s.pr_url === prUrl);
  /** What a runner does when the app answers: the record says ready, and its process announces it. */
  const markReady = async (on: TestTwinbox, id: string): Promise<SandboxRecord> => {
    const ready = await on.store.sandboxes.update(id, (current) => ({
      ...current,
      status: 'ready',
      app_url: `http://${id}.sandbox.test`,
      updated_at: new Date().toISOString(),
    }));
    on.lifecycle.emit('change', ready!);
    return ready!;
  };
  /** Both Apps have nothing left to do: every delivery job (of either process) and every comment update. */
  const idle = async () => {
    await a.githubApp!.idle();
    await b.githubApp!.idle();
    await a.githubApp!.idle();
  };
  /** The delivery's job: how often it was started and its state. */
  const deliveryJob = (id: string) => deliveryJobOf(url, schema, id);

  return { a, b, gh, openPull, comments, deployments, sandboxesOf, markReady, idle, deliveryJob };
}

t.test('the GitHub App on two processes sharing one PostgreSQL', async (t) => {
  const problem = await postgresMissing();
  if (problem) return missingPart(t, problem);
  const rig = await twoProcesses(t);
  const { a, b } = rig;

  t.test('deliveries of one pull request raced over both processes', async (t) => {
    const { pr, payload, key } = await rig.openPull('race');
    // Six deliveries of the same pull request, each its own delivery id (GitHub sends opened, then
    // ready_for_review; a reopen; the same events again), half to each process, all at once.
    const sent = ['opened', 'ready_for_review', 'reopened', 'opened', 'ready_for_review', 'reopened'].map(
      (action, i) => ({ id: randomUUID(), to: i % 2 ? b : a, action }),
    );
    // Meanwhile, the "runner" (process B) announces the sandbox ready as soon as it exists, while the
    // deliveries are still being processed on both processes.
    let announced: SandboxRecord | undefined;
    const runner = (async () => {
      for (let i = 0; i < 1200 && !announced; i++) {
        const [sandbox] = await rig.sandboxesOf(pr.html_url);
        if (sandbox) announced = await rig.markReady(b, sandbox.id);
        else await new Promise((resolve) => setTimeout(resolve, 25));
      }
    })();
    const answers = await Promise.all(
      sent.map((d) =>
        postWebhook(d.to.server.info.uri, 'pull_request', payload(d.action), { delivery: d.id }),
      ),
    );
    t.same(
      answers.map((answer) => answer.status),
      [202, 202, 202, 202, 202, 202],
      'every delivery queued',
    );
    await runner;
    t.ok(announced, 'the sandbox was made and announced ready');
    await rig.idle();

    for (const d of sent)
      t.same(await rig.deliveryJob(d.id), { runs: 1, state: 'completed' }, `${d.action}: processed once`);
    const records = (await a.store.githubPulls.findBy('sandbox_id', announced!.id)).map((r) => r.id);
    t.same(records, [key], 'exactly one pull request record, pointing at the sandbox');
    const sandboxes = await rig.sandboxesOf(pr.html_url);
    t.equal(sandboxes.length, 1, 'one sandbox for the pull request');
    const comments = await rig.comments(pr.number);
    t.equal(comments.length, 1, 'one comment');
    t.match(comments[0]?.body, /ready/i, 'the comment shows the newest state');
    t.match(comments[0]?.body, announced!.app_url!, 'with the app URL');
    const deployments = await rig.deployments(pr.number);
    t.equal(deployments.length, 1, 'one Deployment');
    t.equal(
      deployments[0]?.states.at(-1),
      'success',
      `its last status is success (${deployments[0]?.states})`,
    );
    t.notOk(a.logs.text().includes('GitHub App work failed'), 'process A: no failed App work');
    t.notOk(b.logs.text().includes('GitHub App work failed'), 'process B: no failed App work');
  });

  t.test('an older state handled after a newer one changes nothing', async (t) => {
    const { pr, payload } = await rig.openPull('order');
    const opened = await postWebhook(a.server.info.uri, 'pull_request', payload('opened'));
    t.equal(opened.status, 202);
    await rig.idle();
    const [queued] = await rig.sandboxesOf(pr.html_url);
    t.equal(queued?.status, 'queued', 'the sandbox waits for a runner');
    const [first] = await rig.comments(pr.number);
    t.match(first?.body, /deploying/i, 'the comment says deploying');

    // The newer state, announced by process B.
    const ready = await rig.markReady(b, queued!.id);
    await rig.idle();
    const [shown] = await rig.comments(pr.number);
    t.match(shown?.body, ready.app_url!, 'the comment shows ready');
    const before = await rig.deployments(pr.number);
    t.same(
      before.at(-1)?.states,
      ['in_progress', 'success'],
      'the Deployment went in_progress, then success',
    );

    // The older state reaches process A's App late (its `queued` change, handled after B's `ready`).
    a.lifecycle.emit('change', queued!);
    b.lifecycle.emit('change', { ...queued!, status: 'building' });
    await rig.idle();
    const [after] = await rig.comments(pr.number);
    t.equal(after?.body, shown?.body, 'the comment still shows ready');
    t.equal(after?.updated_at, shown?.updated_at, 'and was not edited');
    t.same(await rig.deployments(pr.number), before, 'no Deployment status went back');
  });
});
