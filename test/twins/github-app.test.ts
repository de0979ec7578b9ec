import t, { type Test } from 'tap';
import { createHmac, createPrivateKey, createSign, generateKeyPairSync } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { createNodeMiddleware, createProbot, type Probot } from 'probot';
import { startGitHubTwin } from '../../examples/github-twin.ts';
import { tempDir, webhookReceiver } from './helpers.ts';
import { assertVendorResponse, githubClient } from './vendor-schema.ts';
import { TwinHost } from '../../server/twins/runtime/host.ts';
import { twinFactories } from '../../server/twins/registry.ts';

// The sandbox's GitHub App (server/twins/vendors/github/app.ts) driven by Probot itself: createProbot reads
// the variables the twin hands out, exactly as `probot run` does, and every answer is checked against
// GitHub's description (the GHES layout's too, with /api/v3 taken off the path for the lookup).

const seed = {
  users: [{ login: 'octocat', name: 'The Octocat' }, { login: 'hubot' }],
  orgs: [{ login: 'acme' }],
  repos: [
    { owner: 'octocat', name: 'shop' },
    { owner: 'acme', name: 'site' },
  ],
};

/** fetch that checks every answer against GitHub's description, for clients on the GHES layout too. */
function checkedFetch(): typeof fetch {
  return async (input, init) => {
    const request = input instanceof Request ? input : new Request(input, init);
    const response = await fetch(input, init);
    const bytes = Buffer.from(await response.clone().arrayBuffer());
    let body: unknown = bytes.length ? bytes.toString('utf8') : undefined;
    if (bytes.length && /json/i.test(response.headers.get('content-type') ?? ''))
      body = JSON.parse(String(body));
    assertVendorResponse('github', {
      method: init?.method ?? request.method,
      path: new URL(request.url).pathname.replace(/^\/api\/v3(?=\/)/, ''),
      status: response.status,
      body,
      redirected: response.redirected,
    });
    return response;
  };
}

/**
 * Probot as `probot run` makes it, from the app's environment. Test clients name the twin's base URL
 * (api.github.com is the default only inside a sandbox, where it is intercepted); with GHE_HOST,
 * Probot's own Enterprise URL is used.
 */
function probotFrom(env: Record<string, string>, extra: Record<string, string> = {}): Probot {
  return createProbot({
    env: {
      APP_ID: env.APP_ID!,
      PRIVATE_KEY: env.PRIVATE_KEY!,
      WEBHOOK_SECRET: env.WEBHOOK_SECRET!,
      LOG_LEVEL: 'fatal',
      ...extra,
    },
    overrides: {
      ...(extra.GHE_HOST ? {} : { baseUrl: env.GITHUB_API_URL }),
      request: { fetch: checkedFetch(), retries: 0 },
    },
  });
}

const b64 = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
function jwt(pem: string, claims: Record<string, unknown>): string {
  const unsigned = `${b64({ alg: 'RS256', typ: 'JWT' })}.${b64(claims)}`;
  return `${unsigned}.${createSign('RSA-SHA256').update(unsigned).sign(pem).toString('base64url')}`;
}

async function twin(t: Test, opts: Parameters<typeof startGitHubTwin>[0] = { seed }) {
  const gh = await startGitHubTwin(opts);
  t.teardown(() => gh.close());
  return gh;
}

async function listen(t: Test, server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  const address = server.address();
  return `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
}

t.test('a new twin has a GitHub App of its own, handed out under Probot and GitHub names', async (t) => {
  const gh = await twin(t);
  const other = await twin(t);
  const env = gh.env;
  t.match(env.APP_ID, /^\d+$/);
  t.equal(env.GITHUB_APP_ID, env.APP_ID);
  t.match(env.PRIVATE_KEY, /^-----BEGIN RSA PRIVATE KEY-----\n[\s\S]+\n-----END RSA PRIVATE KEY-----\n?$/);
  t.equal(env.GITHUB_APP_PRIVATE_KEY, env.PRIVATE_KEY);
  const key = createPrivateKey(env.PRIVATE_KEY!);
  t.equal(key.asymmetricKeyType, 'rsa');
  t.equal(key.asymmetricKeyDetails?.modulusLength, 2048, 'a 2048-bit RSA key, as GitHub issues');
  t.equal(env.WEBHOOK_SECRET, env.GITHUB_WEBHOOK_SECRET, 'events are signed with the secret handed out');
  t.equal(env.GITHUB_APP_WEBHOOK_SECRET, env.GITHUB_WEBHOOK_SECRET);
  t.not(other.env.PRIVATE_KEY, env.PRIVATE_KEY, 'each instance makes its own key');

  const probot = probotFrom(env);
  const asApp = await probot.auth();
  const app = (await asApp.rest.apps.getAuthenticated()).data!;
  t.equal(app.id, Number(env.APP_ID));
  t.equal(app.slug, 'twinbox-app');
  t.equal((app.owner as { login?: string } | null)?.login, 'octocat', "the token user's account owns it");
  t.ok(app.permissions.issues === 'write' && app.events.includes('issues'));
  const installations = (await asApp.rest.apps.listInstallations()).data;
  t.same(
    installations.map((i) => (i.account as { login?: string } | null)?.login).sort(),
    ['acme', 'admin', 'hubot', 'octocat'],
    'installed on every account (the engine always has `admin`)',
  );
  const own = installations.find((i) => i.account && 'login' in i.account && i.account.login === 'octocat')!;
  t.equal(String(own.id), env.GITHUB_APP_INSTALLATION_ID, "GITHUB_APP_INSTALLATION_ID: the token user's");
  t.equal(own.repository_selection, 'all');
  t.equal(
    (
      (await asApp.rest.apps.getRepoInstallation({ owner: 'acme', repo: 'site' })).data.account as {
        login?: string;
      }
    ).login,
    'acme',
  );
  t.equal((await asApp.rest.apps.getOrgInstallation({ org: 'acme' })).data.target_type, 'Organization');
  t.equal((await asApp.rest.apps.getUserInstallation({ username: 'octocat' })).data.id, own.id);

  // An account added later (the admin API's create-repository, a later seed) gets an installation too.
  await gh.createRepo({ owner: 'newcomer', name: 'tools' });
  const added = (await asApp.rest.apps.getRepoInstallation({ owner: 'newcomer', repo: 'tools' })).data;
  t.equal(added.repository_selection, 'all', 'a new account is installed on');
  t.notOk(
    installations.some((i) => i.id === added.id),
    'with an installation of its own',
  );

  // A later seed cannot take the app's slug, nor another app's id (refused, nothing applied).
  const spare = String(
    generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs1', format: 'pem' }),
  );
  for (const [app, message] of [
    [
      { app_id: 77, slug: 'twinbox-app', private_key: spare },
      /"apps\[0\]\.slug" twinbox-app is the sandbox's own app/,
    ],
    [{ app_id: Number(env.APP_ID), slug: 'copycat', private_key: spare }, /"apps\[0\]\.app_id" \d+ is taken/],
  ] as const) {
    const refused = await gh.admin.seed({ apps: [app] }).catch((e: { status: number; message: string }) => e);
    t.equal((refused as { status: number }).status, 400);
    t.match((refused as { message: string }).message, message);
  }

  // The installation's token writes as the app's bot user.
  const asInstallation = await probot.auth(own.id);
  const issue = await asInstallation.rest.issues.create({
    owner: 'octocat',
    repo: 'shop',
    title: 'From the app',
  });
  t.equal(issue.data.user?.login, 'twinbox-app[bot]');
  t.equal(issue.data.user?.type, 'Bot');
  await asInstallation.rest.issues.createComment({
    owner: 'octocat',
    repo: 'shop',
    issue_number: issue.data.number,
    body: `my key is ${env.PRIVATE_KEY}`,
  });
  const logged = JSON.stringify(await gh.admin.requests());
  t.match(logged, /my key is \[REDACTED\]/, 'the generated key is masked in the request log');
  t.notMatch(logged, /BEGIN RSA PRIVATE KEY/);
});

t.test('app JWTs are checked as GitHub checks them: key, iat, exp', async (t) => {
  const gh = await twin(t);
  const pem = gh.env.PRIVATE_KEY!;
  const iss = gh.env.APP_ID!;
  const now = Math.floor(Date.now() / 1000);
  const other = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({
    type: 'pkcs1',
    format: 'pem',
  });
  const cases: Array<[string, string, string]> = [
    [
      'signed with another key',
      jwt(String(other), { iat: now - 60, exp: now + 540, iss }),
      'A JSON web token could not be decoded',
    ],
    [
      'an app that does not exist',
      jwt(pem, { iat: now - 60, exp: now + 540, iss: '987654' }),
      'A JSON web token could not be decoded',
    ],
    ['not a JWT', 'eyJub3QiOiJhIEpXVCJ9', 'A JSON web token could not be decoded'],
    [
      'iat in the future',
      jwt(pem, { iat: now + 120, exp: now + 500, iss }),
      "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued",
    ],
    [
      'no iat',
      jwt(pem, { exp: now + 500, iss }),
      "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued",
    ],
    [
      'expired',
      jwt(pem, { iat: now - 700, exp: now - 100, iss }),
      "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires",
    ],
    [
      'more than 10 minutes ahead',
      jwt(pem, { iat: now - 30, exp: now + 660, iss }),
      "'Expiration time' claim ('exp') is too far in the future",
    ],
  ];
  for (const [what, token, message] of cases) {
    const failure = await githubClient({ auth: token, baseUrl: gh.baseUrl })
      .apps.createInstallationAccessToken({ installation_id: Number(gh.env.GITHUB_APP_INSTALLATION_ID) })
      .catch((e: { status: number; response: { data: unknown } }) => e);
    t.equal((failure as { status: number }).status, 401, what);
    t.same(
      (failure as { response: { data: unknown } }).response.data,
      { message, documentation_url: 'https://docs.github.com/rest', status: '401' },
      `${what}: GitHub's message`,
    );
  }
  // As GitHub's own examples write it: iat 60 s back, exp 10 minutes ahead.
  const good = jwt(pem, { iat: now - 60, exp: now + 600, iss });
  const token = await githubClient({ auth: good, baseUrl: gh.baseUrl }).apps.createInstallationAccessToken({
    installation_id: Number(gh.env.GITHUB_APP_INSTALLATION_ID),
  });
  t.equal(token.status, 201);
  t.match(token.data.token, /^ghs_/);
  // A user's token is not an app's.
  const asUser = await githubClient({ auth: gh.token, baseUrl: gh.baseUrl })
    .apps.getRepoInstallation({ owner: 'octocat', repo: 'shop' })
    .catch((e: { status: number }) => e);
  t.equal((asUser as { status: number }).status, 401, 'the installation lookups take a JWT only');
});

t.test('installation lookups answer for the app that asks', async (t) => {
  const keys = [1, 2].map(() =>
    String(
      generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ type: 'pkcs1', format: 'pem' }),
    ),
  );
  const gh = await twin(t, {
    seed: {
      ...seed,
      apps: [
        {
          app_id: 11,
          slug: 'first',
          name: 'First',
          private_key: keys[0]!,
          permissions: { issues: 'write' },
          installations: [{ installation_id: 101, account: 'octocat', repository_selection: 'all' }],
        },
        {
          app_id: 12,
          slug: 'second',
          name: 'Second',
          private_key: keys[1]!,
          permissions: { issues: 'write' },
          installations: [{ installation_id: 202, account: 'octocat', repository_selection: 'all' }],
        },
      ],
    },
  });
  t.equal(gh.env.APP_ID, '11', "a seed's own apps: its first is the sandbox's app, no other is made");
  t.equal(gh.env.PRIVATE_KEY, keys[0]);
  t.equal(gh.env.GITHUB_APP_INSTALLATION_ID, '101');
  const now = Math.floor(Date.now() / 1000);
  const second = githubClient({
    auth: jwt(keys[1]!, { iat: now - 60, exp: now + 540, iss: '12' }),
    baseUrl: gh.baseUrl,
  });
  t.equal((await second.apps.getRepoInstallation({ owner: 'octocat', repo: 'shop' })).data.id, 202);
  t.equal((await second.apps.getUserInstallation({ username: 'octocat' })).data.app_id, 12);
  const notInstalled = await second.apps
    .getOrgInstallation({ org: 'acme' })
    .catch((e: { status: number }) => e);
  t.equal((notInstalled as { status: number }).status, 404, 'not installed on acme');
  t.equal((await second.apps.listInstallations()).data.length, 1);

  // A key that reaches a request body (an app that posts its config) is masked in the request log.
  await githubClient({ auth: gh.token, baseUrl: gh.baseUrl }).issues.create({
    owner: 'octocat',
    repo: 'shop',
    title: 'config',
    body: `key: ${keys[1]}`,
  });
  const logged = JSON.stringify(await gh.admin.requests());
  t.match(logged, /key: \[REDACTED\]/, "a seeded app's key is masked");
  t.notMatch(logged, /BEGIN RSA PRIVATE KEY/, 'no key in the request log');
});

t.test("events reach Probot's middleware signed with WEBHOOK_SECRET, with the installation", async (t) => {
  const gh = await twin(t);
  const probot = probotFrom(gh.env);
  const handled: number[] = [];
  // create-probot-app's app, in Probot 14's spelling (octokit.rest).
  const app = (bot: Probot) => {
    bot.on('issues.opened', async (context) => {
      handled.push(context.payload.installation!.id);
      await context.octokit.rest.issues.createComment(
        context.issue({ body: 'Thanks for opening this issue!' }),
      );
    });
  };
  const middleware = await createNodeMiddleware(app, { probot });
  const origin = await listen(
    t,
    createServer((req, res) => {
      void middleware(req, res, () => res.writeHead(404).end());
    }),
  );
  // The deploy points a sandbox's twin at the app's /api/github/webhooks, with GITHUB_WEBHOOK_SECRET.
  await gh.setWebhookTarget({ url: `${origin}/api/github/webhooks` });
  const octokit = githubClient({ auth: gh.token, baseUrl: gh.baseUrl });
  const issue = await octokit.issues.create({ owner: 'octocat', repo: 'shop', title: 'Broken' });
  let comments: Awaited<ReturnType<typeof octokit.issues.listComments>>['data'] = [];
  for (let i = 0; i < 400 && comments.length === 0; i++) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    comments = (
      await octokit.issues.listComments({ owner: 'octocat', repo: 'shop', issue_number: issue.data.number })
    ).data;
  }
  t.same(handled, [Number(gh.env.GITHUB_APP_INSTALLATION_ID)], 'the payload names the installation');
  t.equal(comments.length, 1);
  t.equal(comments[0]!.body, 'Thanks for opening this issue!');
  t.equal(comments[0]!.user?.login, 'twinbox-app[bot]', "authored by the app's bot user");
  // Probot answers once its handler is done: the delivery is marked a moment after the comment exists.
  let deliveries: Awaited<ReturnType<typeof gh.admin.deliveries>> = [];
  for (let i = 0; i < 400 && deliveries[0]?.state !== 'delivered'; i++) {
    if (i) await new Promise((resolve) => setTimeout(resolve, 50));
    deliveries = (await gh.admin.deliveries()).filter((d) => d.event === 'issues');
  }
  t.match(deliveries, [{ state: 'delivered', url: `${origin}/api/github/webhooks` }]);

  // The signature is the one GitHub computes (what @octokit/webhooks checked above, shown plainly).
  const receiver = await webhookReceiver(t);
  await gh.setWebhookTarget({ url: receiver.url });
  await octokit.issues.create({ owner: 'octocat', repo: 'shop', title: 'Again' });
  const received = await receiver.next(30_000);
  t.equal(
    received.headers['x-hub-signature-256'],
    `sha256=${createHmac('sha256', gh.env.WEBHOOK_SECRET!).update(received.body).digest('hex')}`,
  );
  t.match(JSON.parse(received.body), {
    action: 'opened',
    installation: { id: Number(gh.env.GITHUB_APP_INSTALLATION_ID) },
  });
});

t.test(
  'GitHub Enterprise layout: REST under /api/v3 with /api/v3 URLs, GraphQL at /api/graphql',
  async (t) => {
    const gh = await twin(t);
    const host = new URL(gh.baseUrl).host;
    // Probot's own GHE_HOST handling: https://<GHE_HOST>/api/v3 (GHE_PROTOCOL=http for a plain-HTTP host).
    const probot = probotFrom(gh.env, { GHE_HOST: host, GHE_PROTOCOL: 'http' });
    const asApp = await probot.auth();
    t.equal((await asApp.rest.apps.getAuthenticated()).data?.slug, 'twinbox-app');
    const installation = (await asApp.rest.apps.getRepoInstallation({ owner: 'octocat', repo: 'shop' })).data;
    t.equal(
      installation.access_tokens_url,
      `${gh.baseUrl}/api/v3/app/installations/${installation.id}/access_tokens`,
    );
    t.equal(
      installation.html_url,
      `${gh.baseUrl}/settings/installations/${installation.id}`,
      'web URLs stay at the root',
    );
    const octokit = await probot.auth(installation.id);
    const repo = (await octokit.rest.repos.get({ owner: 'octocat', repo: 'shop' })).data;
    t.equal(repo.url, `${gh.baseUrl}/api/v3/repos/octocat/shop`);
    t.equal(repo.issues_url, `${gh.baseUrl}/api/v3/repos/octocat/shop/issues{/number}`);
    t.equal(repo.owner.url, `${gh.baseUrl}/api/v3/users/octocat`);
    t.equal(repo.html_url, `${gh.baseUrl}/octocat/shop`);
    t.equal(repo.owner.html_url, `${gh.baseUrl}/octocat`);

    for (const title of ['one', 'two', 'three'])
      await octokit.rest.issues.create({ owner: 'octocat', repo: 'shop', title });
    const page = await octokit.rest.issues.listForRepo({ owner: 'octocat', repo: 'shop', per_page: 1 });
    t.match(
      page.headers.link,
      new RegExp(
        `^<${gh.baseUrl}/api/v3/repositories/\\d+/issues\\?|^<${gh.baseUrl}/api/v3/repos/octocat/shop/issues\\?`,
      ),
    );
    const all = await octokit.paginate(octokit.rest.issues.listForRepo, {
      owner: 'octocat',
      repo: 'shop',
      per_page: 1,
    });
    t.same(all.map((i) => i.title).sort(), ['one', 'three', 'two'], 'Link pagination under /api/v3');

    // The same answer at the root and under /api/v3, but for the URLs.
    const root = await (
      await fetch(`${gh.baseUrl}/repos/octocat/shop`, { headers: { authorization: `token ${gh.token}` } })
    ).json();
    const enterprise = await (
      await fetch(`${gh.baseUrl}/api/v3/repos/octocat/shop`, {
        headers: { authorization: `token ${gh.token}` },
      })
    ).json();
    t.same(
      JSON.parse(JSON.stringify(enterprise).replaceAll(`${gh.baseUrl}/api/v3/`, `${gh.baseUrl}/`)),
      root,
    );
    const apiRoot = (await (await fetch(`${gh.baseUrl}/api/v3`)).json()) as Record<string, string>;
    t.equal(apiRoot.current_user_url, `${gh.baseUrl}/api/v3/user`, 'the root document of /api/v3');

    // GraphQL: /api/graphql answers as /graphql does.
    const graphql = async (path: string) =>
      fetch(`${gh.baseUrl}${path}`, {
        method: 'POST',
        headers: { authorization: `bearer ${gh.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ query: '{ viewer { login } }' }),
      });
    const [atRoot, atEnterprise] = [await graphql('/graphql'), await graphql('/api/graphql')];
    t.equal(atEnterprise.status, atRoot.status);
    t.same(await atEnterprise.json(), await atRoot.json());
    const unauthenticated = await fetch(`${gh.baseUrl}/api/v3/repos/octocat/shop/issues`, {
      method: 'POST',
      body: '{}',
    });
    t.equal(unauthenticated.status, 401, 'the same door: writes need a token');
  },
);

t.test('the app, its key and its installations survive a restart and a reset', async (t) => {
  const dataDir = await tempDir(t);
  const first = new TwinHost({ factories: twinFactories, dataDir, publicHost: '127.0.0.1' });
  const before = (await first.start('sb', ['github'], { adminToken: 'tok', seeds: { github: seed } }))
    .github!;
  await first.close();
  const second = new TwinHost({ factories: twinFactories, dataDir, publicHost: '127.0.0.1' });
  t.teardown(() => second.close());
  await second.restore(['sb']);
  const after = second.get('sb')!.github!;
  for (const name of ['APP_ID', 'PRIVATE_KEY', 'WEBHOOK_SECRET', 'GITHUB_APP_INSTALLATION_ID']) {
    t.equal(after.env_vars[name], before.env_vars[name], `${name} survives a restart`);
  }
  const reset = await fetch(`${after.admin_url}/reset`, {
    method: 'POST',
    headers: { authorization: 'Bearer tok' },
  });
  t.equal(reset.status, 200);
  const probot = probotFrom(after.env_vars);
  const installation = (
    await (await probot.auth()).rest.apps.getRepoInstallation({ owner: 'octocat', repo: 'shop' })
  ).data;
  t.equal(
    String(installation.id),
    before.env_vars.GITHUB_APP_INSTALLATION_ID,
    'the same installation after a reset',
  );
  const comment = await (
    await probot.auth(installation.id)
  ).rest.issues.create({ owner: 'octocat', repo: 'shop', title: 'after reset' });
  t.equal(comment.data.user?.login, 'twinbox-app[bot]');
});
