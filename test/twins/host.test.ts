import t from 'tap';
import { TwinHost, TwinInputError } from '../../server/twins/runtime/host.ts';
import { statusOf, tempDir, tempHost } from './helpers.ts';
import { githubClient } from './vendor-schema.ts';
import { twinFactories } from '../../server/twins/registry.ts';

const seed = {
  users: [{ login: 'octocat', email: 'octocat@example.com' }],
  repos: [{ owner: 'octocat', name: 'app', files: { 'index.js': 'v1' } }],
};

const admin = (url: string, token: string, method = 'GET', body?: unknown) =>
  fetch(url, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
  });

t.test('two sandboxes never see each other, and their admin tokens are not interchangeable', async (t) => {
  const { host } = await tempHost(t);
  const a = (
    await host.start('sandbox-a', ['github'], { adminToken: 'admin-token-a', seeds: { github: seed } })
  ).github!;
  const b = (
    await host.start('sandbox-b', ['github'], { adminToken: 'admin-token-b', seeds: { github: seed } })
  ).github!;
  t.not(a.base_url, b.base_url);
  t.match(a.base_url, /^http:\/\/127\.0\.0\.1:\d+$/, 'base_url is host-only');
  t.equal(a.admin_url, `${a.base_url}/_twinbox`);
  t.not(a.env_vars.GITHUB_TOKEN, b.env_vars.GITHUB_TOKEN);

  const ga = githubClient({ auth: a.env_vars.GITHUB_TOKEN, baseUrl: a.base_url });
  const gb = githubClient({ auth: b.env_vars.GITHUB_TOKEN, baseUrl: b.base_url });
  await ga.issues.create({ owner: 'octocat', repo: 'app', title: 'only in A' });
  await ga.repos.createForAuthenticatedUser({ name: 'only-a' });
  t.equal((await gb.issues.listForRepo({ owner: 'octocat', repo: 'app' })).data.length, 0);
  t.equal(await statusOf(gb.repos.get({ owner: 'octocat', repo: 'only-a' })), 404);

  t.equal((await admin(`${b.admin_url}/state`, 'admin-token-a')).status, 401, "A's token is refused by B");
  t.equal((await admin(`${a.admin_url}/state`, 'admin-token-a')).status, 200);
  t.equal((await admin(`${a.admin_url}/state`, '')).status, 401);
  const refused = (await (await admin(`${a.admin_url}/state`, 'nope')).json()) as { detail: string };
  t.type(refused.detail, 'string');

  t.same(Object.keys(host.get('sandbox-a') ?? {}), ['github']);
  await host.stop('sandbox-a', { purge: true });
  t.equal(host.get('sandbox-a'), undefined);
  const closed = await fetch(a.base_url).then(
    () => 'open',
    () => 'closed',
  );
  t.equal(closed, 'closed', 'the port is released on stop');
  t.equal((await gb.users.getAuthenticated()).data.login, 'octocat', 'B is untouched');
});

t.test('state survives a restart; reset returns to the seed with the same URLs', async (t) => {
  const dataDir = await tempDir(t);
  const first = new TwinHost({ factories: twinFactories, dataDir, publicHost: '127.0.0.1' });
  const before = (await first.start('sb', ['github'], { adminToken: 'tok', seeds: { github: seed } }))
    .github!;
  const octokit = githubClient({ auth: before.env_vars.GITHUB_TOKEN, baseUrl: before.base_url });
  const issue = await octokit.issues.create({ owner: 'octocat', repo: 'app', title: 'persist me' });
  await octokit.issues.createComment({
    owner: 'octocat',
    repo: 'app',
    issue_number: issue.data.number,
    body: 'c1',
  });
  const deployment = await octokit.repos.createDeployment({
    owner: 'octocat',
    repo: 'app',
    ref: 'main',
    required_contexts: [],
  });
  await first.close();

  const second = new TwinHost({ factories: twinFactories, dataDir, publicHost: '127.0.0.1' });
  t.teardown(() => second.close());
  t.equal(second.get('sb'), undefined);
  await second.restore(['sb', 'never-started']);
  const after = second.get('sb')!.github!;
  t.equal(after.env_vars.GITHUB_TOKEN, before.env_vars.GITHUB_TOKEN, 'credentials survive');
  t.equal(after.base_url, before.base_url, 'the same port is reused when free');
  const again = githubClient({ auth: after.env_vars.GITHUB_TOKEN, baseUrl: after.base_url });
  const comments = await again.issues.listComments({
    owner: 'octocat',
    repo: 'app',
    issue_number: issue.data.number,
  });
  t.same(
    comments.data.map((c) => c.body),
    ['c1'],
  );
  const d = await again.repos.getDeployment({
    owner: 'octocat',
    repo: 'app',
    deployment_id: (deployment.data as { id: number }).id,
  });
  t.equal(d.data.ref, 'main');
  t.equal(
    (await admin(`${after.admin_url}/state`, 'tok')).status,
    200,
    'the admin token still works (hash persisted)',
  );

  const reset = await admin(`${after.admin_url}/reset`, 'tok', 'POST');
  t.equal(reset.status, 200);
  t.same(second.get('sb')!.github, after, 'URLs and variables are unchanged by reset');
  t.equal(
    (await again.issues.listForRepo({ owner: 'octocat', repo: 'app' })).data.length,
    0,
    'issues are gone',
  );
  const file = await again.repos.getContent({ owner: 'octocat', repo: 'app', path: 'index.js' });
  t.equal(
    Buffer.from((file.data as { content: string }).content, 'base64').toString(),
    'v1',
    'seed files are back',
  );
});

t.test('bad input is a 4xx with detail, never a 500', async (t) => {
  const { host } = await tempHost(t);
  await t.rejects(host.start('x', ['nope'], { adminToken: 'tok' }), TwinInputError);
  await t.rejects(
    host.start('x', ['github'], { adminToken: 'tok', seeds: { github: { repos: [{ name: 'no-owner' }] } } }),
    {
      status: 400,
    } as never,
  );
  t.equal(host.get('x'), undefined, 'nothing started');
  const gh = (await host.start('x', ['github'], { adminToken: 'tok' })).github!;
  const cases: Array<[string, string, unknown]> = [
    ['POST', '/faults', { status: 200 }],
    ['POST', '/faults', {}],
    ['POST', '/faults', '{not json'],
    ['POST', '/seed', { users: 'octocat' }],
    ['PUT', '/webhooks/target', { url: 'ftp://x' }],
    ['POST', '/webhooks/deliveries', { event: 'push', payload: {} }],
    ['POST', '/webhooks/deliveries/99/redeliver', undefined],
    ['GET', '/requests?limit=-1', undefined],
    ['POST', '/repos/files', { owner: 'octocat', repo: 'missing', files: { a: 'b' } }],
    ['GET', '/nope', undefined],
  ];
  for (const [method, path, body] of cases) {
    const res = await admin(`${gh.admin_url}${path}`, 'tok', method, body);
    t.ok(res.status >= 400 && res.status < 500, `${method} ${path} -> ${res.status}`);
    t.type(((await res.json()) as { detail?: unknown }).detail, 'string');
  }
});

t.test('the catalog lists the twins the host can start, with their variables', async (t) => {
  const { builtInCatalog } = await import('../../server/twins/catalog.ts');
  const names = builtInCatalog.list().map((e) => e.name);
  t.same(names.slice(0, 3), ['github', 'stripe', 'slack'], 'the first three, then the issue 13 twins');
  const { host } = await tempHost(t);
  const twins = await host.start('all', names, { adminToken: 'tok' });
  for (const entry of builtInCatalog.list()) {
    t.same(
      Object.keys(twins[entry.name]!.env_vars).sort(),
      [...entry.env_vars].sort(),
      `${entry.name} variables match`,
    );
  }
  t.equal(new Set(Object.values(twins).map((e) => e.base_url)).size, names.length, 'one port per instance');
});
