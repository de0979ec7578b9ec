/**
 * Private repositories in production mode (issue 14, part 1), on the store TWINBOX_TEST_STORE picks:
 * a sandbox made through the API fetches with its owner's GitHub connection (token sealed at rest,
 * refreshed once expired, dropped on disconnect); one the GitHub App starts fetches with the
 * installation's token; an owner who cannot read the repository gets a clear error.
 */
import t from 'tap';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { CookieBrowser } from '../identity/browser.ts';
import { exampleFiles, settle, until } from '../helpers/deploy.ts';
import { call, createUser, type TestUser } from '../helpers/twinbox.ts';
import { recordsAtRest, storeTextAtRest } from '../helpers/store-at-rest.ts';
import { connectGitHub, githubWithApp, INSTALLATION_ID, twinboxWithApp, type AppRig } from '../app/rig.ts';
import { SecretBox } from '../../server/identity/secret-box.ts';

const CLIENT_ID = 'Iv1.twinbox-private';
const CLIENT_SECRET = 'twinbox-private-secret-123';
const KEY = randomBytes(32);
const REPO = 'octocat/secret';

/** What the store holds of identities, as stored: the table rows on PostgreSQL, the files on lowdb. */
async function storedIdentities(rig: AppRig): Promise<string> {
  if (rig.tb.config.databaseUrl) {
    const client = new pg.Client({ connectionString: rig.tb.config.databaseUrl });
    await client.connect();
    try {
      const { rows } = await client.query<{ data: string }>('SELECT data::text AS data FROM identities');
      return rows.map((row) => row.data).join('\n');
    } finally {
      await client.end();
    }
  }
  return storeTextAtRest(rig.tb.dataDir);
}

async function identityOf(rig: AppRig, user: TestUser) {
  return (await rig.tb.store.identities.findBy('account_id', user.id)).find((i) => i.provider === 'github');
}

/** The plain access token of `user`'s connection, opened with the test's key (what a deploy gets). */
async function plainToken(rig: AppRig, user: TestUser): Promise<string> {
  const identity = await identityOf(rig, user);
  const box = await SecretBox.create({ key: KEY, dataDir: '/nonexistent', production: true });
  return box.open(identity!.github_token!.access_token, identity!.id);
}

/** Connects `user`'s account to GitHub user `login` through the real OAuth flow (browser, twin, callback). */
async function connectThroughOAuth(rig: AppRig, user: TestUser, login: string): Promise<URL> {
  const browser = new CookieBrowser(rig.url);
  const session = await rig.tb.sessions.issue(user.id);
  (browser as unknown as { remember(o: string, h: string[]): void }).remember(rig.url, [
    `twinbox_session=${session}; Path=/; HttpOnly; SameSite=Lax`,
  ]);
  await rig.gh.admin.setOAuthAutoApprove(login);
  return browser.navigate(`${rig.url}/auth/github/connect`);
}

/**
 * Waits for the engine's spare pod (started when the previous deploy took one) before the next deploy: on
 * a loaded machine a pod that starts while another deploy runs can take longer than the engine's 30 s.
 */
async function spareReady(rig: AppRig): Promise<void> {
  const deployer = rig.tb.engine!.deployer as unknown as { opts: { pods: { spares: Promise<unknown>[] } } };
  await Promise.allSettled(deployer.opts.pods.spares);
}

async function createPrivateSandbox(rig: AppRig, user: TestUser) {
  await spareReady(rig);
  const { status, body } = await call(rig.tb, {
    method: 'POST',
    url: '/sandboxes',
    token: user.key,
    payload: { repo: REPO, branch: 'main' },
  });
  if (status !== 201) throw new Error(`POST /sandboxes answered ${status}: ${JSON.stringify(body)}`);
  return settle(rig.tb, user, body.sandbox_id, 120_000);
}

t.test('private repositories in production: the owner’s connection and the App’s installation', async (t) => {
  const { gh, privateKey } = await githubWithApp(t);
  const rig = await twinboxWithApp(t, gh, privateKey, {
    NODE_ENV: 'production',
    TWINBOX_ENCRYPTION_KEY: KEY.toString('base64'),
    GITHUB_CLIENT_ID: CLIENT_ID,
    GITHUB_CLIENT_SECRET: CLIENT_SECRET,
  });
  // A GitHub App's OAuth side: user tokens that expire in 8 hours, with refresh tokens.
  await gh.admin.seed({
    oauth_apps: [
      {
        client_id: CLIENT_ID,
        client_secret: CLIENT_SECRET,
        name: 'Twinbox',
        redirect_uris: [`${rig.url}/auth/github/callback`],
        expiring_tokens: true,
      },
    ],
  });
  await gh.createRepo({
    owner: 'octocat',
    name: 'secret',
    private: true,
    files: { ...(await exampleFiles('zero-dep')), '.github/twinbox.yml': 'ttl_minutes: 30\n' },
  });
  t.equal(rig.tb.config.env, 'production');

  // As on GitHub: nobody without access learns the repository exists, the tarball included.
  for (const path of [`/repos/${REPO}`, `/repos/${REPO}/tarball/main`, `/repos/${REPO}/contents/index.js`]) {
    t.equal((await fetch(`${gh.baseUrl}${path}`, { redirect: 'manual' })).status, 404, `anonymous ${path}`);
  }

  await t.test('API sandbox: fetched with the owner’s connection, sealed at rest, refreshed', async (t) => {
    const owner = await createUser(rig.tb);
    const landed = await connectThroughOAuth(rig, owner, 'octocat');
    t.equal(landed.searchParams.get('connected'), 'github', landed.toString());
    const identity = await identityOf(rig, owner);
    t.ok(identity?.github_token, 'the connection keeps a token');
    t.ok(identity!.github_token!.refresh_token, 'and its refresh token');
    t.ok(identity!.github_token!.expires_at, 'with its expiry');

    const token = await plainToken(rig, owner);
    t.match(token, /^ghu_/, 'the sealed value opens to the GitHub token');
    const user = await fetch(`${gh.baseUrl}/user`, { headers: { authorization: `Bearer ${token}` } });
    t.equal(((await user.json()) as { login: string }).login, 'octocat', 'a real token of octocat');
    const stored = await storedIdentities(rig);
    t.match(stored, identity!.id, 'the stored identities were read');
    t.notOk(stored.includes(token), 'the access token is not in the store in plain text');
    t.notOk(stored.includes('ghr_'), 'nor is the refresh token');
    t.notOk(rig.tb.logs.text().includes(token), 'nor in the log');

    // Eight hours pass before the first deploy: GitHub refuses the token, and Twinbox sees it expired.
    await gh.admin.expireUserTokens('octocat');
    t.equal(
      (await fetch(`${gh.baseUrl}/user`, { headers: { authorization: `Bearer ${token}` } })).status,
      401,
      'GitHub refuses the expired token',
    );
    await rig.tb.store.identities.update(identity!.id, (current) => ({
      ...current,
      github_token: { ...current.github_token!, expires_at: new Date(Date.now() - 1000).toISOString() },
    }));
    const sandbox = await createPrivateSandbox(rig, owner);
    t.equal(sandbox.status, 'ready', sandbox.error ?? '');
    t.equal((await fetch(sandbox.app_url)).status, 200, 'the private repository’s app answers');
    const refreshed = await plainToken(rig, owner);
    t.not(refreshed, token, 'the deploy refreshed the token');
    t.ok(
      Date.parse((await identityOf(rig, owner))!.github_token!.expires_at!) > Date.now() + 7 * 3600_000,
      'the new token lasts 8 hours',
    );
    t.notOk((await storedIdentities(rig)).includes(refreshed), 'the refreshed token is sealed too');

    // Disconnect: the link and its token are gone; production then refuses sandboxes outright.
    const gone = await call(rig.tb, { method: 'DELETE', url: '/integrations/github', token: owner.key });
    t.equal(gone.status, 204);
    t.equal(await identityOf(rig, owner), undefined, 'the GitHub link is deleted');
    // A removed record's earlier journal lines stay until the journal's checkpoint (docs/store.md): what
    // a restart would load is what counts here.
    const identities = rig.tb.config.databaseUrl
      ? await storedIdentities(rig)
      : (await recordsAtRest(rig.tb.dataDir, 'identities')).join('\n');
    t.notOk(identities.includes(identity!.id), 'with its sealed token');
    const twice = await call(rig.tb, { method: 'DELETE', url: '/integrations/github', token: owner.key });
    t.equal(twice.status, 404);
    t.equal(twice.body.code, 'github_not_connected');
    t.match(twice.body.detail, /no GitHub connection/);
    const refused = await call(rig.tb, {
      method: 'POST',
      url: '/sandboxes',
      token: owner.key,
      payload: { repo: REPO, branch: 'main' },
    });
    t.equal(refused.status, 403);
    t.equal(refused.body.code, 'scm_not_connected');

    // A link without a token (one made before tokens were kept, or after disconnect and a re-link by
    // an operator) reads only public repositories: the private one fails clearly, not silently.
    await connectGitHub(rig, owner, 'octocat');
    const tokenless = await createPrivateSandbox(rig, owner);
    t.equal(tokenless.status, 'failed');
    t.match(
      tokenless.error,
      /^GitHub answered 404 for octocat\/secret: the repository does not exist or the GitHub connection of this account cannot read it\. Connect GitHub with access to it, or install the Twinbox GitHub App on it\.$/,
    );
  });

  await t.test('an owner whose GitHub account cannot read the repository gets a clear error', async (t) => {
    const stranger = await createUser(rig.tb);
    const landed = await connectThroughOAuth(rig, stranger, 'reader');
    t.equal(landed.searchParams.get('connected'), 'github', landed.toString());
    t.ok((await identityOf(rig, stranger))?.github_token, 'connected with a token');
    const sandbox = await createPrivateSandbox(rig, stranger);
    t.equal(sandbox.status, 'failed');
    t.match(sandbox.error, /^GitHub answered 404 for octocat\/secret: the repository does not exist/);
    t.match(sandbox.error, /install the Twinbox GitHub App on it\.$/);
  });

  await t.test('App sandbox: fetched with the installation’s token', async (t) => {
    // The installer's account is linked without a token: only the installation can read the repository.
    const installer = await createUser(rig.tb);
    const { data: octocat } = await rig.octokit.rest.users.getByUsername({ username: 'octocat' });
    const earlier = await rig.tb.store.identities.findOneBy('provider_key', `github:${octocat.id}`);
    if (earlier) await rig.tb.store.identities.delete(earlier.id);
    await connectGitHub(rig, installer, 'octocat');
    await gh.pushFiles({ owner: 'octocat', repo: 'secret', branch: 'feature', files: { 'note.txt': 'v1' } });
    await spareReady(rig);
    const { data: pr } = await rig.octokit.rest.pulls.create({
      owner: 'octocat',
      repo: 'secret',
      head: 'feature',
      base: 'main',
      title: 'Feature',
    });
    let sandbox: Awaited<ReturnType<typeof rig.tb.store.sandboxes.get>>;
    await until(
      async () => {
        await rig.tb.githubApp!.idle();
        [sandbox] = await rig.tb.store.sandboxes.findBy('owner_id', installer.id);
        return sandbox !== undefined && !['queued', 'building'].includes(sandbox.status);
      },
      'the App’s sandbox to settle',
      120_000,
    );
    t.equal(sandbox!.installation_id, INSTALLATION_ID, 'the sandbox records its installation');
    t.equal(sandbox!.pr_url, pr.html_url);
    t.equal(sandbox!.status, 'ready', sandbox!.error ?? '');
  });
});
