import t from 'tap';
import { cp } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createHash, randomBytes } from 'node:crypto';
import { TwinAdminClient } from '../../server/twins/kit/admin-client.ts';
import type { TwinEntry } from '../../server/twins/runtime/host.ts';
import { tempHost, type Teardown } from './helpers.ts';
import { githubClient, slackClient } from './vendor-schema.ts';

/**
 * State files written by the github and slack twins of d4a1e50, before they moved onto engineTwinFactory
 * (fixtures/saved-d4a1e50/README.md says what each holds). Today's twins read that format once: the next
 * save is in the current one, which restores too.
 */
const FIXTURES = fileURLToPath(new URL('./fixtures/saved-d4a1e50/', import.meta.url));

/** A host on a temp data dir holding a copy of the fixture's sandbox, restored from it. */
async function restored(t: Teardown, sandbox: string) {
  const { host, dataDir } = await tempHost(t);
  await cp(join(FIXTURES, sandbox), join(dataDir, sandbox), { recursive: true });
  await host.restore([sandbox]);
  const again = async (): Promise<Record<string, TwinEntry>> => {
    await host.stop(sandbox);
    await host.restore([sandbox]);
    return host.get(sandbox)!;
  };
  return { entries: host.get(sandbox)!, again };
}

const GITHUB_TOKEN = 'ghp_feE-Gv6fatf6psq4BqRYb7eQGcfkPKTH';
const USER_TOKEN = 'gho_odnzCB3VfIsENLtRsg6KZVhelvw';

/** The OAuth web flow of `clientId` on a twin that auto-approves: the token exchange's answer. */
async function oauthToken(baseUrl: string, clientId: string, clientSecret: string) {
  const verifier = randomBytes(32).toString('base64url');
  const authorize = new URL('/login/oauth/authorize', baseUrl);
  authorize.search = new URLSearchParams({
    client_id: clientId,
    redirect_uri: 'http://127.0.0.1/callback',
    scope: 'read:user',
    state: 's',
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
  }).toString();
  const redirect = await fetch(authorize, { redirect: 'manual' });
  const code = new URL(redirect.headers.get('location') ?? 'http://x/').searchParams.get('code');
  const exchange = await fetch(new URL('/login/oauth/access_token', baseUrl), {
    method: 'POST',
    headers: { accept: 'application/json', 'content-type': 'application/json' },
    body: JSON.stringify({ client_id: clientId, client_secret: clientSecret, code, code_verifier: verifier }),
  });
  return { redirect: redirect.status, token: (await exchange.json()) as Record<string, unknown> };
}

t.test('github: a state file of d4a1e50 restores, and so does the next save', async (t) => {
  const { entries, again } = await restored(t, 'github-d4a1e50');
  const check = async (gh: TwinEntry, when: string) => {
    t.equal(gh.env_vars.GITHUB_TOKEN, GITHUB_TOKEN, `${when}: GITHUB_TOKEN is the saved one`);
    t.equal(gh.env_vars.GITHUB_WEBHOOK_SECRET, 'whsec_icN9QAfIJNjhpVB1vGxFf54TftRAUtxz', when);
    const octokit = githubClient({ auth: GITHUB_TOKEN, baseUrl: gh.base_url });
    const issues = await octokit.issues.listForRepo({ owner: 'octocat', repo: 'shop' });
    t.same(
      issues.data.map((i) => i.title),
      ['Saved before the move'],
      `${when}: the issue made after the seed`,
    );
    const file = await octokit.repos.getContent({ owner: 'octocat', repo: 'shop', path: 'index.js' });
    t.equal(
      Buffer.from((file.data as { content: string }).content, 'base64').toString(),
      'console.log("hi")\n',
    );
    const user = githubClient({ auth: USER_TOKEN, baseUrl: gh.base_url });
    t.equal((await user.users.getAuthenticated()).data.login, 'octocat', `${when}: the issued user token`);
    const bogus = githubClient({ auth: 'ghp_not-a-token-the-twin-issued', baseUrl: gh.base_url });
    t.equal(
      await bogus.users.getAuthenticated().then(
        () => 200,
        (e: { status: number }) => e.status,
      ),
      401,
    );
    // Auto-approve (set through the admin API, not the seed) and the expiring client (added by POST /seed).
    const plain = await oauthToken(gh.base_url, 'Iv1.twinbox', 'oauth-client-secret-123');
    t.equal(plain.redirect, 302, `${when}: auto-approve is kept`);
    t.match(plain.token, { access_token: /^gho_/ });
    t.notOk('refresh_token' in plain.token, 'an OAuth app token does not expire');
    const expiring = await oauthToken(gh.base_url, 'Iv1.expiring', 'expiring-secret-456');
    t.match(expiring.token, { access_token: String, refresh_token: String, expires_in: Number });
    const hooks = await new TwinAdminClient(gh.admin_url, 'admin').webhooks();
    t.same(hooks.target, { url: 'http://127.0.0.1:9/hooks', events: ['issues'] }, `${when}: the target`);
  };
  await check(entries.github!, 'restored');
  await check((await again()).github!, 'saved again and restored');
});

t.test('slack: a state file of d4a1e50 restores, and so does the next save', async (t) => {
  const { entries, again } = await restored(t, 'slack-d4a1e50');
  const check = async (sl: TwinEntry, when: string) => {
    t.equal(
      sl.env_vars.SLACK_BOT_TOKEN,
      'xoxb-HEl3BnUtsLy0WVuA-rS1ns2uszUATUM4',
      `${when}: the saved bot token`,
    );
    t.equal(sl.env_vars.SLACK_SIGNING_SECRET, '91gbzkBoiKwJ51sqbhy2Cg', when);
    const client = slackClient(sl.env_vars.SLACK_BOT_TOKEN, { slackApiUrl: sl.env_vars.SLACK_API_URL });
    t.equal((await client.auth.test()).user, 'twinbox-bot');
    const channels = (await client.conversations.list()).channels ?? [];
    const deploys = channels.find((c) => c.name === 'deploys');
    const general = channels.find((c) => c.name === 'general');
    t.ok(deploys && general, `${when}: the channel made after the seed`);
    const history = async (channel: string | undefined) =>
      ((await client.conversations.history({ channel: channel! })).messages ?? []).map((m) => m.text);
    t.same(await history(deploys?.id), ['Saved before the move']);
    t.same(await history(general?.id), ['seeded hello']);
    const bogus = slackClient('xoxb-1234-not-a-token', { slackApiUrl: sl.env_vars.SLACK_API_URL });
    t.equal(
      await bogus.auth.test().then(
        () => 'ok',
        (e: { data?: { error?: string } }) => e.data?.error,
      ),
      'invalid_auth',
    );
    const hooks = await new TwinAdminClient(sl.admin_url, 'admin').webhooks();
    t.same(
      hooks.target,
      { url: 'http://127.0.0.1:9/slack/events', events: ['message'] },
      `${when}: the target`,
    );
  };
  await check(entries.slack!, 'restored');
  await check((await again()).slack!, 'saved again and restored');
});

t.test('slack: a bot token revoked before d4a1e50 saved stays revoked until a reset', async (t) => {
  const { entries, again } = await restored(t, 'slack-revoked-d4a1e50');
  const errorOf = (sl: TwinEntry) =>
    slackClient(sl.env_vars.SLACK_BOT_TOKEN, { slackApiUrl: sl.env_vars.SLACK_API_URL })
      .auth.test()
      .then(
        () => 'ok',
        (e: { data?: { error?: string } }) => e.data?.error,
      );
  t.equal(entries.slack!.env_vars.SLACK_BOT_TOKEN, 'xoxb-DVqV_BjU-vKSY0OjEk8tC3YIF6_XjHBR');
  t.equal(await errorOf(entries.slack!), 'token_revoked', 'restored: the revocation is kept');
  const next = (await again()).slack!;
  t.equal(await errorOf(next), 'token_revoked', 'saved again and restored: still revoked');
  await new TwinAdminClient(next.admin_url, 'admin').reset();
  t.equal(await errorOf(next), 'ok', 'a reset is a fresh install: the bot token works again');
});
