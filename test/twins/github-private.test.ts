/**
 * The GitHub twin's private repositories and GitHub App-style user tokens, through @octokit/rest and
 * GitHub's documented OAuth token endpoint: what Twinbox's source fetch and GitHub connections rely on.
 */
import t, { type Test } from 'tap';
import { generateKeyPairSync } from 'node:crypto';
import { ProbotOctokit } from 'probot';
import { startGitHubTwin } from '../../examples/github-twin.ts';
import { statusOf } from './helpers.ts';
import { githubClient } from './vendor-schema.ts';

const CLIENT_ID = 'Iv1.private-test';
const CLIENT_SECRET = 'private-test-secret-123';
const REDIRECT = 'http://127.0.0.1/callback';

async function twin(t: Test) {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const pem = privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();
  const gh = await startGitHubTwin({
    seed: {
      users: [{ login: 'octocat' }, { login: 'mallory' }],
      repos: [
        { owner: 'octocat', name: 'secret', private: true, files: { 'index.js': 'console.log(1)\n' } },
        { owner: 'octocat', name: 'open', files: { 'index.js': 'console.log(2)\n' } },
      ],
      oauth_apps: [
        {
          client_id: CLIENT_ID,
          client_secret: CLIENT_SECRET,
          redirect_uris: [REDIRECT],
          expiring_tokens: true,
        },
      ],
      apps: [
        {
          app_id: 99,
          slug: 'reader',
          private_key: pem,
          permissions: { contents: 'read', metadata: 'read' },
          installations: [{ installation_id: 5, account: 'octocat', repository_selection: 'all' }],
        },
      ],
    },
  });
  t.teardown(() => gh.close());
  return { gh, pem };
}

/** The consent form approved as `login`, then the code exchanged: GitHub's web flow, by hand. */
async function exchange(baseUrl: string, login: string): Promise<Record<string, unknown>> {
  const approve = await fetch(new URL('/login/oauth/callback', baseUrl), {
    method: 'POST',
    redirect: 'manual',
    body: new URLSearchParams({ login, client_id: CLIENT_ID, redirect_uri: REDIRECT, scope: '', state: 's' }),
  });
  const code = new URL(approve.headers.get('location')!).searchParams.get('code');
  return tokenCall(baseUrl, { client_id: CLIENT_ID, client_secret: CLIENT_SECRET, code });
}

async function tokenCall(baseUrl: string, body: Record<string, unknown>): Promise<Record<string, unknown>> {
  const response = await fetch(new URL('/login/oauth/access_token', baseUrl), {
    method: 'POST',
    headers: { accept: 'application/json', 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return (await response.json()) as Record<string, unknown>;
}

t.test('a private repository is 404 to anyone who cannot read it, the tarball included', async (t) => {
  const { gh, pem } = await twin(t);
  const secret = { owner: 'octocat', repo: 'secret' };
  const anonymous = githubClient({ baseUrl: gh.baseUrl });
  for (const [what, request] of [
    ['repos.get', () => anonymous.rest.repos.get(secret)],
    ['getBranch', () => anonymous.rest.repos.getBranch({ ...secret, branch: 'main' })],
    ['getContent', () => anonymous.rest.repos.getContent({ ...secret, path: 'index.js' })],
    ['tarball', () => anonymous.rest.repos.downloadTarballArchive({ ...secret, ref: 'main' })],
  ] as const) {
    t.equal(await statusOf(request()), 404, `anonymous ${what}`);
  }
  const mallory = githubClient({
    baseUrl: gh.baseUrl,
    auth: String((await exchange(gh.baseUrl, 'mallory')).access_token),
  });
  t.equal(await statusOf(mallory.rest.repos.get(secret)), 404, 'a user without access: 404, not 403');
  t.equal(await statusOf(mallory.rest.repos.downloadTarballArchive({ ...secret, ref: 'main' })), 404);
  t.equal(
    (await anonymous.rest.repos.get({ owner: 'octocat', repo: 'open' })).status,
    200,
    'public: readable',
  );

  // The owner's token and the installation's token read it; the tarball's codeload link carries a token.
  const owner = githubClient({ baseUrl: gh.baseUrl, auth: gh.token });
  t.equal((await owner.rest.repos.get(secret)).data.private, true);
  // Probot's Octokit, as the GitHub App builds it: the installation's token minted from the App's key.
  const installation = new ProbotOctokit({
    baseUrl: gh.baseUrl,
    auth: { appId: 99, privateKey: pem, installationId: 5 },
  });
  const tarball = await installation.rest.repos.downloadTarballArchive({ ...secret, ref: 'main' });
  t.equal(tarball.status, 200, 'the installation downloads the tarball');
  t.match(tarball.url, /\/_codeload\/octocat\/secret\/legacy\.tar\.gz\/[0-9a-f]{40}\?token=[0-9a-f]+$/);
  t.equal((await fetch(tarball.url)).status, 200, 'the codeload link works on its own, as GitHub’s does');
  t.equal((await fetch(tarball.url.replace(/\?.*$/, ''))).status, 404, 'without its token it is 404');
  t.equal(
    (await fetch(tarball.url.replace(/token=[0-9a-f]+/, 'token=0000'))).status,
    404,
    'a made-up token too',
  );
});

t.test('expiring user tokens: 8 hours, refresh tokens, rotation, refusals', async (t) => {
  const { gh } = await twin(t);
  const first = await exchange(gh.baseUrl, 'octocat');
  t.match(first.access_token, /^ghu_/);
  t.match(first.refresh_token, /^ghr_/);
  t.equal(first.expires_in, 8 * 3600);
  t.equal(first.refresh_token_expires_in, 15_811_200);
  const as = (token: unknown) => githubClient({ baseUrl: gh.baseUrl, auth: String(token) });
  t.equal((await as(first.access_token).rest.users.getAuthenticated()).data.login, 'octocat');

  t.same(await gh.admin.expireUserTokens('octocat'), { expired: 1 });
  t.equal(
    await statusOf(as(first.access_token).rest.users.getAuthenticated()),
    401,
    'expired: Bad credentials',
  );

  const wrongClient = await tokenCall(gh.baseUrl, {
    client_id: CLIENT_ID,
    client_secret: 'not-the-secret',
    grant_type: 'refresh_token',
    refresh_token: first.refresh_token,
  });
  t.equal(wrongClient.error, 'incorrect_client_credentials');
  const second = await tokenCall(gh.baseUrl, {
    client_id: CLIENT_ID,
    client_secret: CLIENT_SECRET,
    grant_type: 'refresh_token',
    refresh_token: first.refresh_token,
  });
  t.match(second.access_token, /^ghu_/);
  t.not(second.refresh_token, first.refresh_token, 'the refresh token rotates');
  t.equal((await as(second.access_token).rest.users.getAuthenticated()).data.login, 'octocat');
  const reused = await tokenCall(gh.baseUrl, {
    client_id: CLIENT_ID,
    client_secret: CLIENT_SECRET,
    grant_type: 'refresh_token',
    refresh_token: first.refresh_token,
  });
  t.equal(reused.error, 'bad_refresh_token', 'a spent refresh token is refused');
  t.match(reused.error_description, /incorrect or expired/);
});
