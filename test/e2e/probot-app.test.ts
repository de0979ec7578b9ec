import t, { type Test } from 'tap';
import '../helpers/sandbox-hosts.ts';
import { call, createUser } from '../helpers/twinbox.ts';
import {
  deployingTwinbox,
  deploySandbox,
  exampleFiles,
  githubToDeployFrom,
  until,
} from '../helpers/deploy.ts';
import { requireHost } from '../security/isolation-fixtures.ts';
import { githubClient } from '../twins/vendor-schema.ts';
import { TwinAdminClient } from '../../server/twins/kit/admin-client.ts';

// A Probot app as create-probot-app writes it (examples/probot-app: `probot run ./index.js`, the `probot`
// dependency, no Twinbox code), deployed with full isolation from a repository on a GitHub twin. Probot
// reads the sandbox's GitHub App from APP_ID, PRIVATE_KEY and WEBHOOK_SECRET, takes the twin's events at
// its default /api/github/webhooks, and calls https://api.github.com (the sandbox routes it to its twin);
// then the same app with GHE_HOST, which makes Probot call https://<GHE_HOST>/api/v3, the twin's GitHub
// Enterprise layout. Needs the npm registry (the sandbox installs probot; the second deploy reuses it).

const THANKS = 'Thanks for opening this issue!';

t.test('a create-probot-app app comments on a new issue with its installation token', async (t) => {
  if (!requireHost(t, { bwrap: true, root: true, cgroups: true })) return;
  const gh = await githubToDeployFrom(t);
  await gh.createRepo({ owner: 'octocat', name: 'probot-hello', files: await exampleFiles('probot-app') });
  const tb = await deployingTwinbox(t, gh);
  const user = await createUser(tb);

  const run = async (t: Test, env: Record<string, string>) => {
    const sandbox = await deploySandbox(
      tb,
      user,
      { repo: 'octocat/probot-hello', branch: 'main', env },
      240_000,
    );
    const logs = async () =>
      (await call(tb, { url: `/sandboxes/${sandbox.sandbox_id}/logs`, token: user.key })).body as string;
    if (sandbox.status !== 'ready') t.comment(await logs());
    t.equal(sandbox.status, 'ready', sandbox.error ?? '');
    t.equal(sandbox.isolation, 'full');
    t.same(Object.keys(sandbox.twins), ['github'], 'the probot dependency brought a GitHub twin');
    const vars: Record<string, string> = sandbox.env_vars;
    t.match(vars.APP_ID, /^\d+$/, "Probot's APP_ID");
    t.match(vars.PRIVATE_KEY, /^-----BEGIN RSA PRIVATE KEY-----/, "Probot's PRIVATE_KEY");
    t.equal(vars.WEBHOOK_SECRET, vars.GITHUB_WEBHOOK_SECRET, "Probot's WEBHOOK_SECRET signs the events");

    // Outside the sandbox: the twin's public URL and token, a repository of the account the app is on.
    const github = sandbox.twins.github;
    const octokit = githubClient({ auth: github.env_vars.GITHUB_TOKEN, baseUrl: github.base_url });
    const me = (await octokit.users.getAuthenticated()).data.login;
    await octokit.repos.createForAuthenticatedUser({ name: 'storefront' });
    const issue = await octokit.issues.create({ owner: me, repo: 'storefront', title: 'The cart is empty' });
    let comments: Awaited<ReturnType<typeof octokit.issues.listComments>>['data'] = [];
    await until(
      async () => {
        comments = (
          await octokit.issues.listComments({
            owner: me,
            repo: 'storefront',
            issue_number: issue.data.number,
          })
        ).data;
        return comments.length > 0;
      },
      "the app's comment",
      90_000,
    ).catch(async (error: Error) => {
      t.comment(await logs());
      throw error;
    });
    t.equal(comments.length, 1, 'one comment');
    t.equal(comments[0]!.body, THANKS);
    t.equal(comments[0]!.user?.login, 'twinbox-app[bot]', "authored by the app's bot user");
    t.equal(comments[0]!.user?.type, 'Bot');

    // The app's calls, as the twin logged them.
    // A write is logged once it is on disk, which may be just after a read already shows it.
    const admin = new TwinAdminClient(github.admin_url, sandbox.twin_admin_token);
    let entries = await admin.requests();
    await until(
      async () =>
        (entries = await admin.requests()).some((e) => e.method === 'POST' && /\/comments$/.test(e.path)),
      "the comment's request in the twin's log",
      30_000,
    );
    return { entries, vars };
  };

  // The two deploys are independent (a sandbox, a twin and a repository each; the second install is the
  // first's, shared through the dependency cache): they run side by side, each waiting on its own app.
  t.jobs = 2;
  t.test('with Probot defaults: https://api.github.com, intercepted', async (t) => {
    const { entries, vars } = await run(t, {});
    const tokenCall = entries.find((e) => /\/app\/installations\/\d+\/access_tokens$/.test(e.path));
    t.match(tokenCall, { method: 'POST', status: 201 }, 'Probot made an installation token');
    t.equal(tokenCall?.path, `/app/installations/${vars.GITHUB_APP_INSTALLATION_ID}/access_tokens`);
    t.match(
      entries.find((e) => e.method === 'POST' && /\/comments$/.test(e.path)),
      { path: /^\/repos\/[^/]+\/storefront\/issues\/1\/comments$/, status: 201 },
      'and commented through the REST root, as api.github.com lays it out',
    );
  });

  t.test('with GHE_HOST: https://<GHE_HOST>/api/v3, the GitHub Enterprise layout', async (t) => {
    // github.com is one of the twin's own host names: the sandbox's GitHub, as a GHES host is its company's.
    const { entries } = await run(t, { GHE_HOST: 'github.com' });
    t.match(
      entries.find((e) => /\/access_tokens$/.test(e.path)),
      { method: 'POST', path: /^\/api\/v3\/app\/installations\/\d+\/access_tokens$/, status: 201 },
      'the installation token through /api/v3',
    );
    t.match(
      entries.find((e) => e.method === 'POST' && /\/comments$/.test(e.path)),
      { path: /^\/api\/v3\/repos\/[^/]+\/storefront\/issues\/1\/comments$/, status: 201 },
      'and the comment',
    );
  });
});
