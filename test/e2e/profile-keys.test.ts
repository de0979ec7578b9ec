import t from 'tap';
import { call, createUser } from '../helpers/twinbox.ts';
import { deployingTwinbox, deploySandbox, githubToDeployFrom } from '../helpers/deploy.ts';
import { requireHost } from '../security/isolation-fixtures.ts';

// An app in a subfolder that listens on a fixed port, as many tutorials' apps do (Stripe's samples:
// server/node, 4242), told its own URL through twinbox.yml's `${APP_URL}`.
const app =
  "const fs = require('node:fs');" +
  "require('node:http').createServer((q, s) => s.end(JSON.stringify({" +
  ' domain: process.env.DOMAIN, appUrl: process.env.APP_URL, port: process.env.PORT, cwd: process.cwd(),' +
  " sibling: fs.readFileSync('../../shared.txt', 'utf8') }))).listen(4242);";

// The two tests are independent (a GitHub twin and a Twinbox each) and mostly wait on deploys: they run
// at once.
t.jobs = 2;

t.test('root:, port: and ${APP_URL} in a real deploy with full isolation', async (t) => {
  if (!requireHost(t, { bwrap: true, root: true, cgroups: true })) return;
  const gh = await githubToDeployFrom(t);
  await gh.createRepo({
    owner: 'octocat',
    name: 'sample',
    files: {
      '.github/twinbox.yml': "root: server/node\nport: 4242\nenv:\n  DOMAIN: '${APP_URL}'\n",
      'README.md': 'A sample whose app lives in server/node.',
      'shared.txt': 'from the repository root',
      'server/node/package.json': '{"main":"server.js"}',
      'server/node/server.js': app,
    },
  });
  await gh.createRepo({
    owner: 'octocat',
    name: 'hostile',
    files: { '.github/twinbox.yml': 'root: ../..\nstart: cat /etc/shadow\n', 'index.html': 'x' },
  });
  const tb = await deployingTwinbox(t, gh);
  const user = await createUser(tb);

  const sandbox = await deploySandbox(tb, user, { repo: 'octocat/sample', branch: 'main' }, 240_000);
  if (sandbox.status !== 'ready')
    t.comment((await call(tb, { url: `/sandboxes/${sandbox.sandbox_id}/logs`, token: user.key })).body);
  t.equal(sandbox.status, 'ready', sandbox.error ?? '');
  t.equal(sandbox.isolation, 'full', 'in its own network namespace');
  t.match(sandbox.app_url, /^http:\/\//);
  t.equal(sandbox.env_vars.DOMAIN, sandbox.app_url, 'env_vars shows the interpolated value');
  // Through the router: it reaches the app on its fixed port inside the sandbox.
  const page = (await (await fetch(sandbox.app_url)).json()) as Record<string, string>;
  t.equal(page.domain, sandbox.app_url, 'DOMAIN: ${APP_URL} is the sandbox app_url');
  t.equal(page.appUrl, sandbox.app_url, 'APP_URL');
  t.equal(page.port, '4242', 'PORT says the fixed port');
  t.match(page.cwd, /\/server\/node$/, 'started in root:');
  t.equal(page.sibling, 'from the repository root', 'the rest of the repository is there');

  const hostile = await deploySandbox(tb, user, { repo: 'octocat/hostile', branch: 'main' });
  t.equal(hostile.status, 'failed');
  t.match(hostile.error, /^Runtime profile: .*"root" must be a folder inside the repository/);
});

t.test(
  "port: may not be the port of Twinbox's public URLs, where the pod answers the twins inside",
  async (t) => {
    if (!requireHost(t, { bwrap: true, root: true, cgroups: true })) return;
    const gh = await githubToDeployFrom(t);
    const tb = await deployingTwinbox(t, gh);
    const publicPort = tb.server.info.port;
    await gh.createRepo({
      owner: 'octocat',
      name: 'clash',
      files: {
        '.github/twinbox.yml': `port: ${publicPort}\n`,
        'package.json': '{"scripts":{"start":"node server.js"}}',
        'server.js': `require('node:http').createServer((q, s) => s.end('up')).listen(${publicPort});`,
      },
    });
    const user = await createUser(tb);
    const sandbox = await deploySandbox(tb, user, {
      repo: 'octocat/clash',
      branch: 'main',
      twins: ['stripe'],
    });
    t.equal(sandbox.status, 'failed');
    t.match(
      sandbox.error,
      `Runtime profile: twinbox.yml: port ${publicPort} is where this Twinbox serves its public URLs`,
      'the error names the port and why',
    );
  },
);
