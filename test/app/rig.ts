import { createHmac, generateKeyPairSync, randomUUID } from 'node:crypto';
import type { Test } from 'tap';
import { Octokit } from '@octokit/rest';
import { startGitHubTwin, type StandaloneGitHubTwin } from '../../examples/github-twin.ts';
import { MARKER } from '../../app/comment.ts';
import { deployingTwinbox } from '../helpers/deploy.ts';
import { createUser, startTestTwinbox, type TestTwinbox, type TestUser } from '../helpers/twinbox.ts';

export const APP_ID = 4242;
export const INSTALLATION_ID = 77;
export const WEBHOOK_SECRET = 'twinbox-app-webhook-secret-0123456789';

/** The Twinbox GitHub App as the GitHub twin's seed registers it: its permissions and events, installed on octocat. */
export function twinboxAppSeed(privateKey: string) {
  return {
    app_id: APP_ID,
    slug: 'twinbox',
    name: 'Twinbox',
    private_key: privateKey,
    permissions: {
      contents: 'read',
      issues: 'write',
      pull_requests: 'write',
      deployments: 'write',
      metadata: 'read',
    },
    events: ['pull_request', 'issue_comment', 'installation'],
    installations: [{ installation_id: INSTALLATION_ID, account: 'octocat', repository_selection: 'all' }],
  };
}

/** A GitHub twin with the Twinbox GitHub App installed on `octocat`, plus a writer, a reader and a forker. */
export async function githubWithApp(t: Test): Promise<{ gh: StandaloneGitHubTwin; privateKey: string }> {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const pem = privateKey.export({ type: 'pkcs1', format: 'pem' }).toString();
  const gh = await startGitHubTwin({
    seed: {
      users: [{ login: 'octocat' }, { login: 'writer' }, { login: 'reader' }, { login: 'forker' }],
      oauth_apps: [
        {
          client_id: 'Iv1.people',
          client_secret: 'people-client-secret-123',
          redirect_uris: ['http://127.0.0.1/callback'],
        },
      ],
      apps: [twinboxAppSeed(pem)],
    },
  });
  t.teardown(() => gh.close());
  return { gh, privateKey: pem };
}

export interface AppRig {
  gh: StandaloneGitHubTwin;
  tb: TestTwinbox;
  /** Twinbox's listening base URL. */
  url: string;
  /** Octokit as `login` on the twin (a real token from the twin's OAuth flow). */
  as(login: string): Promise<Octokit>;
  octokit: Octokit;
}

/**
 * A Twinbox listening on a port, with the App configured against `gh`, and `gh` delivering to it. It
 * deploys for real unless `deploy: false`: then sandboxes stay `queued` (what the App decides and
 * records is all there is to see, in a fraction of the time).
 */
export async function twinboxWithApp(
  t: Test,
  gh: StandaloneGitHubTwin,
  privateKey: string,
  env: Record<string, string> = {},
  opts: { deploy?: boolean } = {},
): Promise<AppRig> {
  const appEnv = {
    GITHUB_APP_ID: String(APP_ID),
    GITHUB_APP_PRIVATE_KEY: privateKey,
    GITHUB_WEBHOOK_SECRET: WEBHOOK_SECRET,
    ...env,
  };
  const tb =
    opts.deploy === false
      ? await startTestTwinbox(t, { GITHUB_API_URL: gh.baseUrl, GITHUB_OAUTH_URL: gh.baseUrl, ...appEnv })
      : await deployingTwinbox(t, gh, appEnv);
  await tb.server.start();
  const url = tb.server.info.uri;
  await gh.setWebhookTarget({ url: `${url}/github/webhooks`, secret: WEBHOOK_SECRET });
  const as = async (login: string) =>
    new Octokit({ baseUrl: gh.baseUrl, auth: login === 'octocat' ? gh.token : await tokenFor(gh, login) });
  return { gh, tb, url, as, octokit: await as('octocat') };
}

/** A user token: the twin's OAuth consent form approved as `login`, then the code exchanged. */
async function tokenFor(gh: StandaloneGitHubTwin, login: string): Promise<string> {
  const approve = await fetch(new URL('/login/oauth/callback', gh.baseUrl), {
    method: 'POST',
    redirect: 'manual',
    body: new URLSearchParams({
      login,
      client_id: 'Iv1.people',
      redirect_uri: 'http://127.0.0.1/callback',
      scope: 'repo user',
      state: 'x',
    }),
  });
  const code = new URL(approve.headers.get('location')!).searchParams.get('code');
  const exchange = await fetch(new URL('/login/oauth/access_token', gh.baseUrl), {
    method: 'POST',
    headers: { accept: 'application/json', 'content-type': 'application/json' },
    body: JSON.stringify({ client_id: 'Iv1.people', client_secret: 'people-client-secret-123', code }),
  });
  const { access_token } = (await exchange.json()) as { access_token?: string };
  if (!access_token) throw new Error(`no token for ${login}`);
  return access_token;
}

/** Links `user`'s Twinbox account to the GitHub user `login` (what GitHub connect does; tested in test/identity). */
export async function connectGitHub(rig: AppRig, user: TestUser, login: string): Promise<number> {
  const { data } = await rig.octokit.rest.users.getByUsername({ username: login });
  await rig.tb.store.identities.insert({
    id: randomUUID(),
    account_id: user.id,
    provider: 'github',
    provider_key: `github:${data.id}`,
    login,
    created_at: new Date().toISOString(),
  });
  return data.id;
}

export async function connectedUser(rig: AppRig, login = 'octocat'): Promise<TestUser> {
  const user = await createUser(rig.tb);
  await connectGitHub(rig, user, login);
  return user;
}

/** The App's comments (with the marker) on a pull request. */
export async function appComments(rig: AppRig, repo: string, number: number) {
  const [owner, name] = repo.split('/') as [string, string];
  const comments = await rig.octokit.paginate(rig.octokit.rest.issues.listComments, {
    owner,
    repo: name,
    issue_number: number,
    per_page: 100,
  });
  return comments.filter((c) => c.body?.includes(MARKER));
}

export async function allComments(rig: AppRig, repo: string, number: number) {
  const [owner, name] = repo.split('/') as [string, string];
  return rig.octokit.paginate(rig.octokit.rest.issues.listComments, {
    owner,
    repo: name,
    issue_number: number,
    per_page: 100,
  });
}

/** The pull request's event payload as GitHub sends it (for events the twin does not emit on its own). */
export async function pullRequestPayload(rig: AppRig, repo: string, number: number, action: string) {
  const [owner, name] = repo.split('/') as [string, string];
  const { data: pull_request } = await rig.octokit.rest.pulls.get({ owner, repo: name, pull_number: number });
  const { data: repository } = await rig.octokit.rest.repos.get({ owner, repo: name });
  const { data: sender } = await rig.octokit.rest.users.getByUsername({ username: owner });
  return {
    action,
    number,
    pull_request,
    repository,
    sender,
    installation: { id: INSTALLATION_ID },
  };
}

/** POSTs a webhook to Twinbox as GitHub would, signed with `secret`. */
export async function postWebhook(
  url: string,
  event: string,
  payload: unknown,
  opts: { delivery?: string; secret?: string | null; signature?: string } = {},
): Promise<{ status: number; body: any }> {
  const body = JSON.stringify(payload);
  const secret = opts.secret === undefined ? WEBHOOK_SECRET : opts.secret;
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'x-github-event': event,
    'x-github-delivery': opts.delivery ?? randomUUID(),
  };
  if (opts.signature) headers['x-hub-signature-256'] = opts.signature;
  else if (secret !== null) {
    headers['x-hub-signature-256'] = `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
  }
  const response = await fetch(`${url}/github/webhooks`, { method: 'POST', headers, body });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON
  }
  return { status: response.status, body: parsed };
}

/** An `issue_comment.created` payload as GitHub sends it for a comment on pull request `number`. */
export async function issueCommentPayload(
  rig: AppRig,
  repo: string,
  number: number,
  body: string,
  login: string,
  installationId = INSTALLATION_ID,
) {
  const [owner, name] = repo.split('/') as [string, string];
  const { data: repository } = await rig.octokit.rest.repos.get({ owner, repo: name });
  const { data: user } = await rig.octokit.rest.users.getByUsername({ username: login });
  return {
    action: 'created',
    issue: {
      number,
      title: 'a pull request',
      state: 'open',
      user,
      pull_request: { url: `${rig.gh.baseUrl}/repos/${repo}/pulls/${number}` },
    },
    comment: { id: Math.floor(Math.random() * 1e9), body, user: { ...user, type: 'User' } },
    repository,
    sender: user,
    installation: { id: installationId },
  };
}
