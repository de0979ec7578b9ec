import t from 'tap';
import { exampleFiles, until } from '../helpers/deploy.ts';
import {
  allComments,
  appComments,
  connectedUser,
  githubWithApp,
  INSTALLATION_ID,
  issueCommentPayload,
  postWebhook,
  pullRequestPayload,
  twinboxWithApp,
  type AppRig,
} from '../app/rig.ts';

// What a signed webhook may NOT make the App do, and which configuration it may not take.

/** The App's log lines at warn or above. */
function warnings(rig: AppRig): string[] {
  return rig.tb.logs.lines
    .map((line) => JSON.parse(line) as { level: number; msg: string })
    .filter((entry) => entry.level >= 40)
    .map((entry) => entry.msg);
}

async function pullRequest(
  rig: AppRig,
  who: string,
  repo: string,
  head: string,
  files: Record<string, string>,
) {
  const [owner, name] = repo.split('/') as [string, string];
  await rig.gh.pushFiles({
    owner: head.includes(':') ? head.split(':')[0]! : owner,
    repo: name,
    branch: head.split(':').at(-1)!,
    files,
  });
  const octokit = await rig.as(who);
  const { data } = await octokit.rest.pulls.create({
    owner,
    repo: name,
    head,
    base: 'main',
    title: 'Change',
  });
  return data;
}

t.test('a signed webhook for a repository the installation does not cover creates nothing', async (t) => {
  const { gh, privateKey } = await githubWithApp(t);
  const rig = await twinboxWithApp(t, gh, privateKey, {}, { deploy: false });
  // Only the deliveries below reach Twinbox.
  await gh.setWebhookTarget({ url: 'http://127.0.0.1:9/nowhere' });
  const user = await connectedUser(rig);
  const files = await exampleFiles('zero-dep');
  // The App is installed on octocat's account; writer's repository is not covered by it.
  await gh.createRepo({ owner: 'writer', name: 'elsewhere', files });
  await gh.createRepo({ owner: 'octocat', name: 'shop', files });
  const outside = await pullRequest(rig, 'writer', 'writer/elsewhere', 'feature', { 'a.txt': 'a' });
  const inside = await pullRequest(rig, 'octocat', 'octocat/shop', 'feature', { 'a.txt': 'a' });
  await rig.tb.githubApp!.idle();

  const nothingHappened = async (what: string) => {
    await rig.tb.githubApp!.idle();
    t.equal(await rig.tb.store.sandboxes.count(), 0, `${what}: no sandbox`);
    t.equal(await rig.tb.store.githubPulls.count(), 0, `${what}: no pull request record`);
    t.equal((await allComments(rig, 'writer/elsewhere', outside.number)).length, 0, `${what}: no comment`);
    t.equal((await allComments(rig, 'octocat/shop', inside.number)).length, 0, `${what}: no comment`);
  };

  for (const action of ['opened', 'reopened', 'synchronize', 'closed']) {
    const payload = await pullRequestPayload(rig, 'writer/elsewhere', outside.number, action);
    const res = await postWebhook(rig.url, 'pull_request', payload);
    t.equal(res.status, 202, `${action}: accepted (signed), then ignored`);
  }
  await nothingHappened('pull_request for a repository outside the installation');

  const command = await issueCommentPayload(
    rig,
    'writer/elsewhere',
    outside.number,
    '/twinbox deploy',
    'writer',
  );
  t.equal((await postWebhook(rig.url, 'issue_comment', command)).status, 202);
  await nothingHappened('/twinbox deploy on a repository outside the installation');

  // A covered repository, but the event claims another installation.
  const wrongInstallation = {
    ...(await pullRequestPayload(rig, 'octocat/shop', inside.number, 'opened')),
    installation: { id: INSTALLATION_ID + 1 },
  };
  t.equal((await postWebhook(rig.url, 'pull_request', wrongInstallation)).status, 202);
  const wrongCommand = await issueCommentPayload(
    rig,
    'octocat/shop',
    inside.number,
    '/twinbox deploy',
    'octocat',
    INSTALLATION_ID + 1,
  );
  t.equal((await postWebhook(rig.url, 'issue_comment', wrongCommand)).status, 202);
  await nothingHappened('the wrong installation id');

  // A covered name paired with another repository's id, and an event whose repository is not its base.
  const real = await pullRequestPayload(rig, 'octocat/shop', inside.number, 'opened');
  const foreign = await pullRequestPayload(rig, 'writer/elsewhere', outside.number, 'opened');
  const otherId = foreign.repository.id;
  const forgedId = {
    ...real,
    repository: { ...real.repository, id: otherId },
    pull_request: {
      ...real.pull_request,
      base: { ...real.pull_request.base, repo: { ...real.pull_request.base.repo, id: otherId } },
    },
  };
  t.equal((await postWebhook(rig.url, 'pull_request', forgedId)).status, 202);
  const mixed = { ...foreign, repository: real.repository };
  t.equal((await postWebhook(rig.url, 'pull_request', mixed)).status, 202);
  await nothingHappened('a forged repository id, or a repository that is not the base');
  t.ok(
    warnings(rig).some((msg) => /does not cover the repository|not its base repository/.test(msg)),
    'the refusals are logged',
  );

  // The same delivery for the covered repository and the right installation does create the sandbox.
  t.equal((await postWebhook(rig.url, 'pull_request', real)).status, 202);
  await until(async () => {
    await rig.tb.githubApp!.idle();
    return (await appComments(rig, 'octocat/shop', inside.number)).some((c) =>
      /deploying/.test(c.body ?? ''),
    );
  }, 'the sandbox for the covered repository');
  const sandboxes = await rig.tb.store.sandboxes.findBy('owner_id', user.id);
  t.equal(sandboxes.length, 1);
  t.equal(sandboxes[0]!.repo, 'octocat/shop');
});

const BASE_CONFIG = 'twins: [github]\nttl_minutes: 30\n';
const HEAD_CONFIG =
  'twins: [github, stripe]\nttl_minutes: 45\nenv:\n  FROM_THE_HEAD: set by the pull request\n';

t.test(
  'decisions and env come from the base branch, never the head; a fork gets no env at all',
  async (t) => {
    const { gh, privateKey } = await githubWithApp(t);
    const rig = await twinboxWithApp(t, gh, privateKey, {}, { deploy: false });
    const user = await connectedUser(rig);
    await gh.createRepo({
      owner: 'octocat',
      name: 'shop',
      files: { ...(await exampleFiles('zero-dep')), '.github/twinbox.yml': BASE_CONFIG },
    });

    // A branch of the repository whose config asks for other twins, a longer TTL and a variable.
    const own = await pullRequest(rig, 'octocat', 'octocat/shop', 'feature', {
      '.github/twinbox.yml': HEAD_CONFIG,
    });
    await until(async () => {
      await rig.tb.githubApp!.idle();
      return (await rig.tb.store.sandboxes.findBy('owner_id', user.id)).length === 1;
    }, 'the branch sandbox');
    const [branchSandbox] = await rig.tb.store.sandboxes.findBy('owner_id', user.id);
    t.equal(branchSandbox!.pr_url, own.html_url);
    t.same(branchSandbox!.env, {}, "no env: the base's config has none, the head's is not read");
    t.equal(branchSandbox!.ttl_minutes, 30, "the base's ttl_minutes");
    t.same(branchSandbox!.twin_names, ['github'], "the base's twins");

    // A fork whose head sets env, approved by a writer.
    const forker = await rig.as('forker');
    await forker.rest.repos.createFork({ owner: 'octocat', repo: 'shop', default_branch_only: false });
    const fork = await pullRequest(rig, 'forker', 'octocat/shop', 'forker:patch', {
      '.github/twinbox.yml': HEAD_CONFIG,
    });
    await until(async () => {
      await rig.tb.githubApp!.idle();
      return (await appComments(rig, 'octocat/shop', fork.number)).some((c) =>
        /comes from a fork/.test(c.body ?? ''),
      );
    }, 'the approval notice');
    await rig.octokit.rest.issues.createComment({
      owner: 'octocat',
      repo: 'shop',
      issue_number: fork.number,
      body: '/twinbox deploy',
    });
    await until(async () => {
      await rig.tb.githubApp!.idle();
      return (await rig.tb.store.sandboxes.findBy('owner_id', user.id)).length === 2;
    }, 'the fork sandbox');
    const forkSandbox = (await rig.tb.store.sandboxes.findBy('owner_id', user.id)).find(
      (s) => s.pr_url === fork.html_url,
    );
    t.ok(forkSandbox, 'the fork sandbox');
    t.same(forkSandbox!.env, {}, 'no env for a fork');
    t.equal(forkSandbox!.ttl_minutes, 30, "the base's ttl_minutes");
    t.same(forkSandbox!.twin_names, ['github'], "the base's twins");
  },
);

t.test("the fork's env does not reach the app, even when the base config sets env", async (t) => {
  const { gh, privateKey } = await githubWithApp(t);
  const rig = await twinboxWithApp(t, gh, privateKey, {}, { deploy: false });
  const user = await connectedUser(rig);
  await gh.createRepo({
    owner: 'octocat',
    name: 'shop',
    files: {
      ...(await exampleFiles('zero-dep')),
      '.github/twinbox.yml': `${BASE_CONFIG}env:\n  BASE_SECRET: for this repository's own branches\n`,
    },
  });
  const forker = await rig.as('forker');
  await forker.rest.repos.createFork({ owner: 'octocat', repo: 'shop', default_branch_only: false });
  const fork = await pullRequest(rig, 'forker', 'octocat/shop', 'forker:patch', {
    '.github/twinbox.yml': HEAD_CONFIG,
  });
  await rig.tb.githubApp!.idle();
  await rig.octokit.rest.issues.createComment({
    owner: 'octocat',
    repo: 'shop',
    issue_number: fork.number,
    body: '/twinbox deploy',
  });
  await until(async () => {
    await rig.tb.githubApp!.idle();
    return (await rig.tb.store.sandboxes.findBy('owner_id', user.id)).length === 1;
  }, 'the fork sandbox');
  const [sandbox] = await rig.tb.store.sandboxes.findBy('owner_id', user.id);
  t.same(sandbox!.env, {}, "neither the base's env nor the head's");
});

t.test("a pull request's head config sets no variable of the deployed app", async (t) => {
  const { gh, privateKey } = await githubWithApp(t);
  const rig = await twinboxWithApp(t, gh, privateKey);
  const user = await connectedUser(rig);
  await gh.createRepo({
    owner: 'octocat',
    name: 'shop',
    files: { ...(await exampleFiles('zero-dep')), '.github/twinbox.yml': BASE_CONFIG },
  });
  await pullRequest(rig, 'octocat', 'octocat/shop', 'feature', {
    '.github/twinbox.yml': `${HEAD_CONFIG}  APP_GREETING: Hello from the head\n`,
  });
  await until(
    async () => {
      await rig.tb.githubApp!.idle();
      const [sandbox] = await rig.tb.store.sandboxes.findBy('owner_id', user.id);
      return sandbox !== undefined && !['queued', 'building'].includes(sandbox.status);
    },
    'the deploy',
    90_000,
  );
  const [sandbox] = await rig.tb.store.sandboxes.findBy('owner_id', user.id);
  t.equal(sandbox!.status, 'ready', sandbox!.error ?? '');
  t.notOk('FROM_THE_HEAD' in sandbox!.env_vars, "the head's env is not in the app's variables");
  t.notMatch(await (await fetch(sandbox!.app_url!)).text(), 'Hello from the head', 'nor does the app see it');
});
