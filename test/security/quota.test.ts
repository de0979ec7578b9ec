import t from 'tap';
import type { Test } from 'tap';
import { loadConfig } from '../../server/config.ts';
import { call, createSandbox, createUser, startTestTwinbox } from '../helpers/twinbox.ts';
import { exampleFiles, until } from '../helpers/deploy.ts';
import { appComments, connectedUser, githubWithApp, twinboxWithApp } from '../app/rig.ts';

// Sandboxes not yet ended (queued, building, ready) per account, per plan: free 3, pro 50 by default.
// Without a deploy engine a sandbox stays queued, so every one made here counts until it is deleted.

/** The shipped quotas (test Twinboxes otherwise lift them, since most tests make many sandboxes). */
const QUOTAS = { TWINBOX_SANDBOX_QUOTA_FREE: '3', TWINBOX_SANDBOX_QUOTA_PRO: '50' };
const twinbox = (t: Test, env: Record<string, string> = {}) => startTestTwinbox(t, { ...QUOTAS, ...env });

t.test('the defaults are free 3 and pro 50', async (t) => {
  t.same(loadConfig({}).sandboxQuota, { free: 3, pro: 50 });
});

t.test('a free account holds 3 active sandboxes; the 4th is 403; deleting one makes room', async (t) => {
  const tb = await twinbox(t);
  const user = await createUser(tb, 'free');
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) {
    const res = await createSandbox(tb, user.key);
    t.equal(res.status, 201, `sandbox ${i + 1}`);
    ids.push(res.body.sandbox_id);
  }
  const over = await createSandbox(tb, user.key);
  t.equal(over.status, 403);
  t.equal(over.body.code, 'plan_limit_exceeded');
  t.equal(over.body.detail, over.body.message);
  t.match(over.body.detail, /free plan allows 3 active sandboxes/, 'the limit');
  t.match(over.body.detail, /this account has 3/, 'how many are active');
  t.equal((await tb.store.sandboxes.findBy('owner_id', user.id)).length, 3, 'nothing stored');

  const deleted = await call(tb, { method: 'DELETE', url: `/sandboxes/${ids[0]}`, token: user.key });
  t.equal(deleted.status, 200);
  t.equal((await createSandbox(tb, user.key)).status, 201, 'room again after a delete');
  t.equal((await createSandbox(tb, user.key)).status, 403, 'and full again');

  // Another account is not affected by this one's sandboxes.
  const other = await createUser(tb, 'free');
  t.equal((await createSandbox(tb, other.key)).status, 201);
});

t.test('ended and failed sandboxes do not count', async (t) => {
  const tb = await twinbox(t);
  const user = await createUser(tb, 'free');
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) ids.push((await createSandbox(tb, user.key)).body.sandbox_id);
  const statuses = ['failed', 'expired', 'deleted'] as const;
  for (const [i, status] of statuses.entries()) {
    await tb.store.sandboxes.update(ids[i]!, (s) => ({ ...s, status }));
  }
  for (let i = 0; i < 3; i++) t.equal((await createSandbox(tb, user.key)).status, 201);
  const over = await createSandbox(tb, user.key);
  t.equal(over.status, 403);
  t.match(over.body.detail, /this account has 3/);
});

t.test('30 concurrent creates from one free account make exactly 3 sandboxes', async (t) => {
  const tb = await twinbox(t);
  const user = await createUser(tb, 'free');
  const results = await Promise.all(
    Array.from({ length: 30 }, (_, i) => createSandbox(tb, user.key, { repo: 'a/b', branch: `b${i}` })),
  );
  const statuses = results.map((r) => r.status);
  t.equal(statuses.filter((s) => s === 201).length, 3, 'three created');
  t.equal(statuses.filter((s) => s === 403).length, 27, 'the rest refused');
  t.ok(
    results.filter((r) => r.status === 403).every((r) => r.body.code === 'plan_limit_exceeded'),
    'all refusals are plan_limit_exceeded',
  );
  t.equal((await tb.store.sandboxes.findBy('owner_id', user.id)).length, 3, 'three stored');
});

t.test('pro: more than the free quota; both quotas are configurable', async (t) => {
  const tb = await twinbox(t);
  const pro = await createUser(tb, 'pro');
  for (let i = 0; i < 5; i++) t.equal((await createSandbox(tb, pro.key)).status, 201);

  const small = await twinbox(t, {
    TWINBOX_SANDBOX_QUOTA_PRO: '2',
    TWINBOX_SANDBOX_QUOTA_FREE: '1',
  });
  const limitedPro = await createUser(small, 'pro');
  t.equal((await createSandbox(small, limitedPro.key)).status, 201);
  t.equal((await createSandbox(small, limitedPro.key)).status, 201);
  const over = await createSandbox(small, limitedPro.key);
  t.equal(over.status, 403);
  t.match(over.body.detail, /pro plan allows 2 active sandboxes .* this account has 2\./);
  t.notMatch(over.body.detail, /upgrade/, 'no upgrade advice on the top plan');
  const free = await createUser(small, 'free');
  t.equal((await createSandbox(small, free.key)).status, 201);
  const freeOver = await createSandbox(small, free.key);
  t.match(freeOver.body.detail, /free plan allows 1 active sandbox \(/, 'singular');
  t.match(freeOver.body.detail, /upgrade to the pro plan/);
});

t.test(
  'the GitHub App goes through the same quota: the pull request gets a comment, not a sandbox',
  async (t) => {
    const { gh, privateKey } = await githubWithApp(t);
    const rig = await twinboxWithApp(t, gh, privateKey, QUOTAS, { deploy: false });
    const user = await connectedUser(rig);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await createSandbox(rig.tb, user.key)).body.sandbox_id);
    await gh.createRepo({ owner: 'octocat', name: 'shop', files: await exampleFiles('zero-dep') });
    await gh.pushFiles({ owner: 'octocat', repo: 'shop', branch: 'feature', files: { 'a.txt': 'a' } });
    const { data: pr } = await rig.octokit.rest.pulls.create({
      owner: 'octocat',
      repo: 'shop',
      head: 'feature',
      base: 'main',
      title: 'Feature',
    });
    const comment = async (pattern: RegExp) => {
      let last = '';
      await until(async () => {
        await rig.tb.githubApp!.idle();
        last = (await appComments(rig, 'octocat/shop', pr.number))[0]?.body ?? '';
        return pattern.test(last);
      }, `the comment to match ${pattern} (last: ${last})`);
      return last;
    };
    const refused = await comment(/refused/);
    t.match(refused, /free plan allows 3 active sandboxes/);
    t.match(refused, /this account has 3/);
    t.match(refused, /comment `\/twinbox deploy`/, 'says how to try again');
    t.equal((await rig.tb.store.sandboxes.findBy('owner_id', user.id)).length, 3, 'no sandbox for the PR');

    await call(rig.tb, { method: 'DELETE', url: `/sandboxes/${ids[0]}`, token: user.key });
    await rig.octokit.rest.issues.createComment({
      owner: 'octocat',
      repo: 'shop',
      issue_number: pr.number,
      body: '/twinbox deploy',
    });
    await comment(/deploying/);
    const mine = await rig.tb.store.sandboxes.findBy('owner_id', user.id);
    t.equal(mine.filter((s) => s.pr_url === pr.html_url).length, 1, 'the pull request has its sandbox now');
  },
);
