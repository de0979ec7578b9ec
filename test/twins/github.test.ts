import t, { type Test } from 'tap';
import { createHash, createHmac, createSign, generateKeyPairSync, randomBytes } from 'node:crypto';
import { startGitHubTwin } from '../../examples/github-twin.ts';
import { statusOf, untarGz, webhookReceiver } from './helpers.ts';
import { githubClient } from './vendor-schema.ts';

const seed = {
  users: [{ login: 'octocat', name: 'The Octocat', email: 'octocat@example.com' }],
  repos: [
    {
      owner: 'octocat',
      name: 'shop',
      files: {
        'package.json': '{"name":"shop","scripts":{"start":"node index.js"}}',
        'index.js': 'console.log("hi")\n',
      },
    },
  ],
  oauth_apps: [
    {
      client_id: 'Iv1.twinbox',
      client_secret: 'oauth-client-secret-123',
      name: 'Twinbox',
      redirect_uris: ['http://127.0.0.1/callback'],
    },
  ],
};

t.test(
  'github twin: repositories, pulls, comments, deployments, checks, tarball via @octokit/rest',
  async (t) => {
    const gh = await startGitHubTwin({ seed });
    t.teardown(() => gh.close());
    const octokit = githubClient({ auth: gh.token, baseUrl: gh.env.GITHUB_API_URL });
    const repo = { owner: 'octocat', repo: 'shop' };

    t.equal((await octokit.users.getAuthenticated()).data.login, 'octocat');
    const file = await octokit.repos.getContent({ ...repo, path: 'index.js' });
    t.equal(
      Buffer.from((file.data as { content: string }).content, 'base64').toString(),
      'console.log("hi")\n',
    );

    const created = await octokit.repos.createOrUpdateFileContents({
      ...repo,
      path: 'docs/readme.md',
      message: 'docs',
      content: Buffer.from('# Docs').toString('base64'),
    });
    t.ok(created.data.commit.sha, 'contents API commits');

    const pushed = await gh.pushFiles({
      ...repo,
      branch: 'feature',
      files: { 'feature.txt': 'new' },
      message: 'feature',
    });
    const branches = await octokit.repos.listBranches(repo);
    t.same(branches.data.map((b) => b.name).sort(), ['feature', 'main']);
    t.equal(branches.data.find((b) => b.name === 'feature')?.commit.sha, pushed.commit_sha);

    const pr = await octokit.pulls.create({ ...repo, head: 'feature', base: 'main', title: 'Add feature' });
    t.equal(pr.data.head.sha, pushed.commit_sha);
    t.equal((await octokit.pulls.get({ ...repo, pull_number: pr.data.number })).data.title, 'Add feature');

    const comment = await octokit.issues.createComment({
      ...repo,
      issue_number: pr.data.number,
      body: 'Sandbox: building',
    });
    await octokit.issues.updateComment({ ...repo, comment_id: comment.data.id, body: 'Sandbox: ready' });
    const comments = await octokit.issues.listComments({ ...repo, issue_number: pr.data.number });
    t.same(
      comments.data.map((c) => c.body),
      ['Sandbox: ready'],
    );

    const deployment = await octokit.repos.createDeployment({
      ...repo,
      ref: 'feature',
      environment: 'pr-1',
      auto_merge: false,
      required_contexts: [],
      transient_environment: true,
    });
    const deploymentId = (deployment.data as { id: number }).id;
    t.equal((deployment.data as { sha: string }).sha, pushed.commit_sha);
    await octokit.repos.createDeploymentStatus({
      ...repo,
      deployment_id: deploymentId,
      state: 'in_progress',
    });
    await octokit.repos.createDeploymentStatus({
      ...repo,
      deployment_id: deploymentId,
      state: 'success',
      environment_url: 'http://127.0.0.1:9999',
    });
    const statuses = await octokit.repos.listDeploymentStatuses({ ...repo, deployment_id: deploymentId });
    t.same(
      statuses.data.map((s) => s.state),
      ['success', 'in_progress'],
    );
    t.equal(statuses.data[0]?.environment_url, 'http://127.0.0.1:9999');
    t.equal((await octokit.repos.listDeployments({ ...repo, environment: 'pr-1' })).data.length, 1);
    t.equal(await statusOf(octokit.repos.createDeployment({ ...repo, ref: 'no-such-branch' })), 422);

    const check = await octokit.checks.create({
      ...repo,
      name: 'twinbox/sandbox',
      head_sha: pushed.commit_sha,
      status: 'completed',
      conclusion: 'success',
    });
    t.equal(check.data.conclusion, 'success');
    const checks = await octokit.checks.listForRef({ ...repo, ref: pushed.commit_sha });
    t.equal(checks.data.check_runs[0]?.name, 'twinbox/sandbox');

    const tarball = await octokit.repos.downloadTarballArchive({ ...repo, ref: 'feature' });
    const files = untarGz(tarball.data as ArrayBuffer);
    const root = `octocat-shop-${pushed.commit_sha.slice(0, 7)}`;
    t.equal(files.get(`${root}/index.js`), 'console.log("hi")\n');
    t.equal(files.get(`${root}/feature.txt`), 'new');
    t.equal(files.get(`${root}/docs/readme.md`), '# Docs');
    t.ok(files.has(`${root}/README.md`), 'initial README is in the archive');

    const tree = await octokit.git.getTree({ ...repo, tree_sha: pushed.commit_sha, recursive: 'true' });
    t.ok(
      tree.data.tree.some((e) => e.path === 'docs/readme.md'),
      'git trees list nested files',
    );
  },
);

t.test('github twin: OAuth web flow with PKCE, /user and /user/emails', async (t) => {
  const gh = await startGitHubTwin({ seed });
  t.teardown(() => gh.close());
  const verifier = randomBytes(32).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  const authorize = new URL('/login/oauth/authorize', gh.env.GITHUB_SERVER_URL);
  authorize.search = new URLSearchParams({
    client_id: 'Iv1.twinbox',
    redirect_uri: 'http://127.0.0.1/callback',
    scope: 'read:user user:email',
    state: 'st4te',
    code_challenge: challenge,
    code_challenge_method: 'S256',
  }).toString();

  // Without auto-approve the twin shows GitHub's consent page; the user picks an account (form POST).
  const page = await fetch(authorize);
  t.equal(page.status, 200);
  t.match(await page.text(), /octocat/);
  const approve = await fetch(new URL('/login/oauth/callback', gh.baseUrl), {
    method: 'POST',
    redirect: 'manual',
    body: new URLSearchParams({
      login: 'octocat',
      client_id: 'Iv1.twinbox',
      redirect_uri: 'http://127.0.0.1/callback',
      scope: 'read:user user:email',
      state: 'st4te',
    }),
  });
  t.equal(approve.status, 302);
  const redirect = new URL(approve.headers.get('location')!);
  t.equal(redirect.searchParams.get('state'), 'st4te');
  const code = redirect.searchParams.get('code')!;

  const exchange = (codeVerifier: string) =>
    fetch(new URL('/login/oauth/access_token', gh.baseUrl), {
      method: 'POST',
      headers: { accept: 'application/json', 'content-type': 'application/json' },
      body: JSON.stringify({
        client_id: 'Iv1.twinbox',
        client_secret: 'oauth-client-secret-123',
        code,
        code_verifier: codeVerifier,
      }),
    }).then((r) => r.json() as Promise<{ access_token?: string; error?: string }>);
  t.equal(
    (await exchange('wrong-verifier')).error,
    'bad_verification_code',
    'a wrong code_verifier is refused',
  );
  const token = await exchange(verifier);
  t.match(token.access_token, /^gho_/);

  const user = githubClient({ auth: token.access_token, baseUrl: gh.baseUrl });
  t.equal((await user.users.getAuthenticated()).data.login, 'octocat');
  const emails = await user.users.listEmailsForAuthenticatedUser();
  t.same(emails.data[0], {
    email: 'octocat@example.com',
    primary: true,
    verified: true,
    visibility: 'public',
  });

  const log = await gh.admin.requests();
  const tokenCalls = log.filter((e) => e.path === '/login/oauth/access_token');
  t.equal(tokenCalls.length, 2);
  const body = tokenCalls[1]!.request_body as Record<string, string>;
  t.equal(body.code_verifier, verifier, 'the PKCE code_verifier is in the request log');
  t.equal(body.client_secret, '[REDACTED]', 'the client secret is not');
  t.notMatch(JSON.stringify(log), token.access_token!, 'issued tokens are not in the log');

  // Auto-approve: a headless client follows the redirect as a browser would for an app already authorised.
  await gh.admin.setOAuthAutoApprove('octocat');
  const quick = await fetch(authorize, { redirect: 'manual' });
  t.equal(quick.status, 302);
  t.match(quick.headers.get('location'), /^http:\/\/127\.0\.0\.1\/callback\?code=/);
});

t.test('github twin: GitHub App JWT -> installation token', async (t) => {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const pem = privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();
  const gh = await startGitHubTwin({
    seed: {
      ...seed,
      apps: [
        {
          app_id: 4242,
          slug: 'twinbox',
          name: 'Twinbox',
          private_key: pem,
          permissions: { contents: 'read', issues: 'write', pull_requests: 'write', deployments: 'write' },
          events: ['pull_request'],
          installations: [{ installation_id: 77, account: 'octocat', repository_selection: 'all' }],
        },
      ],
    },
  });
  t.teardown(() => gh.close());
  const now = Math.floor(Date.now() / 1000);
  const b64 = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const unsigned = `${b64({ alg: 'RS256', typ: 'JWT' })}.${b64({ iat: now - 60, exp: now + 540, iss: '4242' })}`;
  const jwt = `${unsigned}.${createSign('RSA-SHA256').update(unsigned).sign(pem).toString('base64url')}`;

  const asApp = githubClient({ auth: jwt, baseUrl: gh.baseUrl });
  t.equal((await asApp.apps.getAuthenticated()).data?.slug, 'twinbox');
  const installation = await asApp.apps.getRepoInstallation({ owner: 'octocat', repo: 'shop' });
  t.equal(installation.data.id, 77);
  const token = await asApp.apps.createInstallationAccessToken({ installation_id: 77 });
  t.match(token.data.token, /^ghs_/);

  const asInstallation = githubClient({ auth: token.data.token, baseUrl: gh.baseUrl });
  const issue = await asInstallation.issues.create({ owner: 'octocat', repo: 'shop', title: 'From the app' });
  const comment = await asInstallation.issues.createComment({
    owner: 'octocat',
    repo: 'shop',
    issue_number: issue.data.number,
    body: 'app comment',
  });
  t.equal(comment.data.body, 'app comment', 'the installation token writes');
  const repos = await asInstallation.apps.listReposAccessibleToInstallation();
  t.ok(repos.data.repositories.some((r) => r.full_name === 'octocat/shop'));
});

t.test('github twin: webhooks signed with X-Hub-Signature-256, arbitrary events, redelivery', async (t) => {
  const gh = await startGitHubTwin({ seed });
  t.teardown(() => gh.close());
  const receiver = await webhookReceiver(t);
  const secret = 'hook-secret-xyz';
  await gh.setWebhookTarget({ url: receiver.url, secret });
  const verify = (r: { headers: Record<string, unknown>; body: string }) =>
    r.headers['x-hub-signature-256'] ===
    `sha256=${createHmac('sha256', secret).update(r.body).digest('hex')}`;

  const octokit = githubClient({ auth: gh.token, baseUrl: gh.baseUrl });
  const issue = await octokit.issues.create({ owner: 'octocat', repo: 'shop', title: 'Bug' });
  const first = await receiver.next();
  t.equal(first.headers['x-github-event'], 'issues');
  t.ok(verify(first), 'engine events are signed');
  await octokit.issues.createComment({
    owner: 'octocat',
    repo: 'shop',
    issue_number: issue.data.number,
    body: 'hi',
  });
  const commentEvent = await receiver.next();
  t.equal(commentEvent.headers['x-github-event'], 'issue_comment');
  t.equal(JSON.parse(commentEvent.body).comment.body, 'hi');

  const payload = {
    action: 'opened',
    number: 7,
    pull_request: { number: 7, head: { ref: 'feature' } },
    installation: { id: 1 },
  };
  const delivery = await gh.deliverWebhook('pull_request', payload);
  t.equal(delivery.status_code, 200);
  const received = await receiver.next();
  t.equal(received.headers['x-github-event'], 'pull_request');
  t.ok(verify(received), 'arbitrary events are signed');
  t.same(JSON.parse(received.body), payload);

  const again = await gh.admin.redeliver(delivery.id);
  t.equal(again.redelivery_of, delivery.id);
  const redelivered = await receiver.next();
  t.equal(redelivered.body, received.body);
  t.not(
    redelivered.headers['x-github-delivery'],
    received.headers['x-github-delivery'],
    'a redelivery has a new GUID',
  );
  const deliveries = await gh.admin.deliveries();
  t.ok(deliveries.length >= 4);
});

t.test('github twin: fault injection is seen by the SDK, then stops', async (t) => {
  const gh = await startGitHubTwin({ seed });
  t.teardown(() => gh.close());
  const octokit = githubClient({ auth: gh.token, baseUrl: gh.baseUrl });
  await gh.admin.addFault({ status: 503, count: 1 });
  t.equal(await statusOf(octokit.users.getAuthenticated()), 503);
  t.equal((await octokit.users.getAuthenticated()).status, 200, 'the fault is spent after one request');

  await gh.admin.addFault({ rate_limit: true, count: 2, path_prefix: '/repos' });
  t.equal((await octokit.users.getAuthenticated()).status, 200, 'other paths are unaffected');
  const limited = await octokit.repos
    .get({ owner: 'octocat', repo: 'shop' })
    .catch((e: { status: number; response: { headers: Record<string, string> } }) => e);
  t.equal((limited as { status: number }).status, 403);
  t.equal(
    (limited as { response: { headers: Record<string, string> } }).response.headers['x-ratelimit-remaining'],
    '0',
  );
  t.equal(await statusOf(octokit.repos.get({ owner: 'octocat', repo: 'shop' })), 403);
  t.equal((await octokit.repos.get({ owner: 'octocat', repo: 'shop' })).status, 200);

  await gh.admin.addFault({ latency_ms: 150, count: 1 });
  const started = performance.now();
  await octokit.users.getAuthenticated();
  t.ok(performance.now() - started >= 140, 'latency is injected');
  const log = await gh.admin.requests();
  t.ok(
    log.some((e) => e.fault?.startsWith('rate_limit')),
    'faults are marked in the request log',
  );
});

/** A GitHub twin with the shared seed, Octokit on it, and the repository most calls are about. */
async function appTwin(t: Test) {
  const gh = await startGitHubTwin({ seed });
  t.teardown(() => gh.close());
  const octokit = githubClient({ auth: gh.token, baseUrl: gh.baseUrl });
  return { gh, octokit, repo: { owner: 'octocat', repo: 'shop' } };
}

t.test('github twin: what apps call — repositories, branches and commits', async (t) => {
  const { gh, octokit, repo } = await appTwin(t);
  t.equal((await octokit.repos.get(repo)).data.full_name, 'octocat/shop');
  t.ok(
    (await octokit.repos.listForAuthenticatedUser()).data.some((r) => r.name === 'shop'),
    'the token user lists its repositories',
  );
  t.equal((await octokit.users.getByUsername({ username: 'octocat' })).data.name, 'The Octocat');

  const main = await octokit.repos.getBranch({ ...repo, branch: 'main' });
  const head = (await octokit.repos.getCommit({ ...repo, ref: 'main' })).data;
  t.equal(main.data.commit.sha, head.sha, 'the branch points at its real head commit');
  t.equal(main.data.commit.commit?.message, head.commit.message, 'with the commit itself, not a stub');
  t.match(main.data._links, { self: `${gh.baseUrl}/repos/octocat/shop/branches/main` });
  t.equal(main.data.protected, false);
  t.equal(main.data.protection?.enabled, false, 'an unprotected branch says so');
  t.ok((await octokit.repos.listCommits({ ...repo, sha: 'main' })).data.some((c) => c.sha === head.sha));
});

t.test('github twin: what apps call — commit statuses', async (t) => {
  const { gh, octokit, repo } = await appTwin(t);
  const { commit_sha: sha } = await gh.pushFiles({ ...repo, branch: 'fix', files: { 'fix.txt': 'fixed' } });
  const receiver = await webhookReceiver(t);
  await gh.setWebhookTarget({ url: receiver.url, secret: 'status-secret' });
  const status = await octokit.repos.createCommitStatus({
    ...repo,
    sha,
    state: 'pending',
    context: 'twinbox/sandbox',
    description: 'Deploying',
    target_url: 'http://127.0.0.1:9999/logs',
  });
  t.equal(status.status, 201);
  t.equal(status.data.state, 'pending');
  t.equal(status.data.target_url, 'http://127.0.0.1:9999/logs');
  let event = await receiver.next();
  while (event.headers['x-github-event'] !== 'status') event = await receiver.next();
  t.match(JSON.parse(event.body), {
    sha,
    state: 'pending',
    context: 'twinbox/sandbox',
    target_url: 'http://127.0.0.1:9999/logs',
    branches: [{ name: 'fix' }],
    repository: { full_name: 'octocat/shop' },
  });
  await octokit.repos.createCommitStatus({ ...repo, sha, state: 'success', context: 'twinbox/sandbox' });
  await octokit.repos.createCommitStatus({ ...repo, sha, state: 'failure', context: 'ci/lint' });
  const statuses = await octokit.repos.listCommitStatusesForRef({ ...repo, ref: sha });
  t.same(
    statuses.data.map((s) => `${s.context}:${s.state}`),
    ['ci/lint:failure', 'twinbox/sandbox:success', 'twinbox/sandbox:pending'],
    'newest first',
  );
  const combined = await octokit.repos.getCombinedStatusForRef({ ...repo, ref: 'fix' });
  t.equal(combined.data.sha, sha);
  t.equal(combined.data.state, 'failure', 'one failing context fails the combined state');
  t.same(
    combined.data.statuses.map((s) => `${s.context}:${s.state}`).sort(),
    ['ci/lint:failure', 'twinbox/sandbox:success'],
    'the latest status of each context',
  );
  t.equal(
    await statusOf(octokit.repos.createCommitStatus({ ...repo, sha, state: 'bogus' as 'success' })),
    422,
  );
  t.equal(
    await statusOf(octokit.repos.createCommitStatus({ ...repo, sha: 'f'.repeat(40), state: 'success' })),
    422,
    'an unknown commit',
  );
});

t.test('github twin: what apps call — check runs', async (t) => {
  const { gh, octokit, repo } = await appTwin(t);
  const { commit_sha: sha } = await gh.pushFiles({ ...repo, branch: 'fix', files: { 'fix.txt': 'fixed' } });
  const check = await octokit.checks.create({
    ...repo,
    name: 'twinbox/preview',
    head_sha: sha,
    status: 'in_progress',
    output: { title: 'Deploying', summary: 'Building the sandbox' },
  });
  t.equal(
    check.data.output.annotations_url,
    `${gh.baseUrl}/repos/octocat/shop/check-runs/${check.data.id}/annotations`,
  );
  const done = await octokit.checks.update({
    ...repo,
    check_run_id: check.data.id,
    status: 'completed',
    conclusion: 'success',
    output: { title: 'Ready', summary: 'Preview is up' },
  });
  t.equal(done.data.conclusion, 'success');
  t.equal((await octokit.checks.get({ ...repo, check_run_id: check.data.id })).data.output.title, 'Ready');
  t.same((await octokit.checks.listAnnotations({ ...repo, check_run_id: check.data.id })).data, []);
  const listed = await octokit.checks.listForRef({ ...repo, ref: sha });
  t.same(
    listed.data.check_runs.map((c) => c.output.annotations_url),
    [check.data.output.annotations_url],
  );
});

t.test('github twin: what apps call — labels, issues and comments', async (t) => {
  const { octokit, repo } = await appTwin(t);
  await octokit.issues.createLabel({ ...repo, name: 'preview', color: '00ff00' });
  t.equal((await octokit.issues.getLabel({ ...repo, name: 'preview' })).data.color, '00ff00');
  const issue = await octokit.issues.create({ ...repo, title: 'Broken', body: 'It broke', labels: ['bug'] });
  const number = issue.data.number;
  await octokit.issues.addLabels({ ...repo, issue_number: number, labels: ['preview'] });
  t.same(
    (await octokit.issues.listLabelsOnIssue({ ...repo, issue_number: number })).data
      .map((l) => l.name)
      .sort(),
    ['bug', 'preview'],
  );
  const closed = await octokit.issues.update({ ...repo, issue_number: number, state: 'closed' });
  t.equal(closed.data.state, 'closed');
  t.equal((await octokit.issues.get({ ...repo, issue_number: number })).data.state, 'closed');
  const note = await octokit.issues.createComment({ ...repo, issue_number: number, body: 'temp' });
  await octokit.issues.deleteComment({ ...repo, comment_id: note.data.id });
  t.same((await octokit.issues.listComments({ ...repo, issue_number: number })).data, []);
});

t.test('github twin: what apps call — pull requests, reviews, merge and refs', async (t) => {
  const { gh, octokit, repo } = await appTwin(t);
  const { commit_sha: sha } = await gh.pushFiles({ ...repo, branch: 'fix', files: { 'fix.txt': 'fixed' } });
  const pr = await octokit.pulls.create({ ...repo, head: 'fix', base: 'main', title: 'Fix it' });
  const pull_number = pr.data.number;
  t.same(
    (await octokit.pulls.listFiles({ ...repo, pull_number })).data.map((f) => f.filename),
    ['fix.txt'],
  );
  t.equal((await octokit.pulls.listCommits({ ...repo, pull_number })).data.at(-1)?.sha, sha);
  t.ok((await octokit.pulls.list({ ...repo, state: 'open' })).data.some((p) => p.number === pull_number));
  const review = await octokit.pulls.createReview({
    ...repo,
    pull_number,
    event: 'COMMENT',
    body: 'Preview looks good',
  });
  t.equal(review.data.state, 'COMMENTED');
  t.equal((await octokit.pulls.listReviews({ ...repo, pull_number })).data.length, 1);
  const compare = await octokit.repos.compareCommits({ ...repo, base: 'main', head: 'fix' });
  t.equal(compare.data.ahead_by, 1);

  // Octokit sends no body for a merge without options: GitHub merges with its defaults.
  const merged = await octokit.pulls.merge({ ...repo, pull_number });
  t.equal(merged.data.merged, true);
  t.match(merged.data.sha, /^[0-9a-f]{40}$/);
  t.equal((await octokit.pulls.get({ ...repo, pull_number })).data.merged, true);
  t.equal(await statusOf(octokit.pulls.merge({ ...repo, pull_number })), 405, 'merged once only');

  const ref = await octokit.git.getRef({ ...repo, ref: 'heads/main' });
  t.equal(ref.data.object.sha, merged.data.sha, 'the merge moved main');
  const commit = await octokit.git.getCommit({ ...repo, commit_sha: merged.data.sha });
  t.equal(commit.data.sha, merged.data.sha);
  await octokit.git.createRef({ ...repo, ref: 'refs/heads/release', sha: merged.data.sha });
  t.equal((await octokit.repos.getBranch({ ...repo, branch: 'release' })).data.commit.sha, merged.data.sha);
});

t.test(
  'github twin: what apps call — commits through the git data API, review comments, pull updates',
  async (t) => {
    const { octokit, repo } = await appTwin(t);
    const head = (await octokit.git.getRef({ ...repo, ref: 'heads/main' })).data.object.sha;
    const base = await octokit.git.getCommit({ ...repo, commit_sha: head });
    const blob = await octokit.git.createBlob({ ...repo, content: 'v2\n', encoding: 'utf-8' });
    const tree = await octokit.git.createTree({
      ...repo,
      base_tree: base.data.tree.sha,
      tree: [{ path: 'VERSION', mode: '100644', type: 'blob', sha: blob.data.sha }],
    });
    const commit = await octokit.git.createCommit({
      ...repo,
      message: 'Bump',
      tree: tree.data.sha,
      parents: [head],
    });
    await octokit.git.createRef({ ...repo, ref: 'refs/heads/bump', sha: commit.data.sha });
    const pr = await octokit.pulls.create({ ...repo, head: 'bump', base: 'main', title: 'Bump' });
    const pull_number = pr.data.number;
    const comment = await octokit.pulls.createReviewComment({
      ...repo,
      pull_number,
      commit_id: commit.data.sha,
      path: 'VERSION',
      line: 1,
      side: 'RIGHT',
      body: 'Looks right',
    });
    t.equal(comment.data.path, 'VERSION');
    t.same(
      (await octokit.pulls.listReviewComments({ ...repo, pull_number })).data.map((c) => c.body),
      ['Looks right'],
    );
    const updated = await octokit.pulls.update({
      ...repo,
      pull_number,
      title: 'Bump to v2',
      body: 'Preview ready',
    });
    t.equal(updated.data.title, 'Bump to v2');
    const branches = (await octokit.repos.listBranches(repo)).data.map((b) => b.name);
    t.ok(branches.includes('bump'));
    const moved = await octokit.git.updateRef({ ...repo, ref: 'heads/main', sha: commit.data.sha });
    t.equal(moved.data.object.sha, commit.data.sha, 'a fast-forward');
    const file = await octokit.repos.getContent({ ...repo, path: 'VERSION' });
    t.equal(Buffer.from((file.data as { content: string }).content, 'base64').toString(), 'v2\n');
    t.ok((await octokit.issues.listForRepo({ ...repo, state: 'all' })).status === 200);
  },
);

t.test('github twin: unknown and revoked tokens fail the way GitHub fails them', async (t) => {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const pem = privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();
  const gh = await startGitHubTwin({
    seed: {
      ...seed,
      apps: [
        {
          app_id: 99,
          slug: 'previewer',
          name: 'Previewer',
          private_key: pem,
          permissions: { contents: 'read', issues: 'write' },
          installations: [{ installation_id: 5, account: 'octocat', repository_selection: 'all' }],
        },
      ],
    },
  });
  t.teardown(() => gh.close());
  const badCredentials = {
    message: 'Bad credentials',
    documentation_url: 'https://docs.github.com/rest',
    status: '401',
  };
  for (const token of ['ghp_not-a-token-the-twin-issued', 'gho_x', 'ghs_revoked']) {
    const bogus = githubClient({ auth: token, baseUrl: gh.baseUrl });
    const failure = await bogus.users
      .getAuthenticated()
      .catch((e: { status: number; response: { data: unknown } }) => e);
    t.equal((failure as { status: number }).status, 401, `${token.slice(0, 4)}...: 401 on a read`);
    t.same((failure as { response: { data: unknown } }).response.data, badCredentials);
    t.equal(await statusOf(bogus.repos.get({ owner: 'octocat', repo: 'shop' })), 401, 'on a public read too');
    t.equal(await statusOf(bogus.issues.create({ owner: 'octocat', repo: 'shop', title: 'x' })), 401);
  }

  // An installation token revoked by its app (DELETE /installation/token) fails the same way.
  const now = Math.floor(Date.now() / 1000);
  const b64 = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
  const unsigned = `${b64({ alg: 'RS256', typ: 'JWT' })}.${b64({ iat: now - 60, exp: now + 540, iss: '99' })}`;
  const jwt = `${unsigned}.${createSign('RSA-SHA256').update(unsigned).sign(pem).toString('base64url')}`;
  const asApp = githubClient({ auth: jwt, baseUrl: gh.baseUrl });
  const { token } = (await asApp.apps.createInstallationAccessToken({ installation_id: 5 })).data;
  const asInstallation = githubClient({ auth: token, baseUrl: gh.baseUrl });
  t.equal((await asInstallation.repos.get({ owner: 'octocat', repo: 'shop' })).status, 200);
  t.equal((await asInstallation.apps.revokeInstallationAccessToken()).status, 204);
  const revoked = await asInstallation.repos
    .get({ owner: 'octocat', repo: 'shop' })
    .catch((e: { status: number; response: { data: unknown } }) => e);
  t.equal((revoked as { status: number }).status, 401);
  t.same((revoked as { response: { data: unknown } }).response.data, badCredentials);
});
