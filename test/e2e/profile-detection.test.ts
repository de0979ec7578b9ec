import t from 'tap';
import { call, createUser } from '../helpers/twinbox.ts';
import { deployingTwinbox, deploySandbox, githubToDeployFrom } from '../helpers/deploy.ts';
import { requireHost } from '../security/isolation-fixtures.ts';

// Stripe's samples keep the app in server/node, with the README at the root and no twinbox.yml.
const app =
  "require('node:http').createServer((q, s) => s.end(JSON.stringify({ cwd: process.cwd(), port: process.env.PORT })))" +
  '.listen(Number(process.env.PORT));';

t.test(
  'no twinbox.yml, no app at the root: the one below it is deployed; several are an error',
  async (t) => {
    if (!requireHost(t, { bwrap: true, root: true, cgroups: true })) return;
    const gh = await githubToDeployFrom(t);
    await gh.createRepo({
      owner: 'octocat',
      name: 'sample',
      files: {
        'README.md': '# A sample\nThe app is in server/node.',
        'client/html/index.html': '<h1>the client</h1>',
        'server/node/package.json': '{"scripts":{"start":"node server.js"}}',
        'server/node/server.js': app,
        'server/python/requirements.txt': 'stripe',
      },
    });
    await gh.createRepo({
      owner: 'octocat',
      name: 'examples',
      files: {
        'README.md': 'Two examples.',
        'examples/express/package.json': '{"scripts":{"start":"node server.js"}}',
        'examples/fastify/package.json': '{"scripts":{"start":"node server.js"}}',
      },
    });
    const tb = await deployingTwinbox(t, gh);
    const user = await createUser(tb);

    const sandbox = await deploySandbox(tb, user, { repo: 'octocat/sample', branch: 'main' }, 240_000);
    const logs = (await call(tb, { url: `/sandboxes/${sandbox.sandbox_id}/logs`, token: user.key })).body;
    if (sandbox.status !== 'ready') t.comment(logs);
    t.equal(sandbox.status, 'ready', sandbox.error ?? '');
    t.equal(sandbox.isolation, 'full', 'in its own network namespace');
    t.match(
      logs,
      "profile: the repository's root has no app: deploying the one found below it, server/node, as if .github/twinbox.yml said root: server/node",
    );
    t.match(logs, 'profile (node): root=server/node');
    const answer = await fetch(sandbox.app_url, { headers: { accept: 'application/json' } });
    t.equal(answer.status, 200);
    const body = (await answer.json()) as { cwd: string; port: string };
    t.match(body.cwd, /\/server\/node$/, 'the app itself answers, from its folder, not a README page');

    const several = await deploySandbox(tb, user, { repo: 'octocat/examples', branch: 'main' });
    t.equal(several.status, 'failed');
    t.equal(
      several.error,
      'Runtime profile: The repository\'s root has no app, and there are several below it: examples/express, examples/fastify. Say which to deploy with "root:" in .github/twinbox.yml, e.g. root: examples/express',
    );
  },
);
