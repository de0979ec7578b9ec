import t, { type Test } from 'tap';
import { createHash, randomBytes } from 'node:crypto';
import { gmail as gmailApi, type gmail_v1 } from '@googleapis/gmail';
import { OAuth2Client } from 'google-auth-library';
import { TwinAdminClient } from '../../server/twins/kit/admin-client.ts';
import { TwinHost } from '../../server/twins/runtime/host.ts';
import { PRESETS } from '../../server/scenarios/presets.ts';
import { countsFor } from '../scenarios/sdk-counts.ts';
import { tempDir, tempHost } from './helpers.ts';
import { checked as checkedAnswers, vendorFetch } from './vendor-schema.ts';
import { twinFactories } from '../../server/twins/registry.ts';

// Every response of the twin is checked against Google's descriptions (../shared/vendor-schemas/google): a
// missing required field or a wrong type rejects the call and fails the test. googleapis sends its calls
// through the OAuth2Client's gaxios, which takes the checked fetch as its fetchImplementation.
const fetch = vendorFetch('google');
const checked = { fetchImplementation: fetch };

const seed = {
  users: [
    { email: 'ada@acme.dev', name: 'Ada Lovelace', hd: 'acme.dev' },
    { email: 'grace@acme.dev', name: 'Grace Hopper', hd: 'acme.dev' },
  ],
  labels: [{ name: 'Customers' }],
  messages: [
    {
      from: 'billing@vendor.example',
      to: 'ada@acme.dev',
      subject: 'Your invoice',
      body_text: 'Invoice 42 is attached.',
    },
  ],
  redirect_uris: ['http://127.0.0.1:3000/auth/google/callback'],
};

/** The packages an app installs for Gmail: @googleapis/gmail and the google-auth-library it signs in with. */
interface GoogleSdk {
  gmailApi: typeof gmailApi;
  OAuth2Client: typeof OAuth2Client;
}
const currentSdk: GoogleSdk = { gmailApi, OAuth2Client };

/**
 * An OAuth2Client and a Gmail client as an app builds them from the twin's variables: googleapis takes
 * its host as `rootUrl`, google-auth-library its endpoints as `endpoints` (neither reads an env var).
 */
function clients(env: Record<string, string>, redirectUri?: string, sdk: GoogleSdk = currentSdk) {
  const auth = new sdk.OAuth2Client({
    transporterOptions: checked,
    clientId: env.GOOGLE_CLIENT_ID,
    clientSecret: env.GOOGLE_CLIENT_SECRET,
    ...(redirectUri ? { redirectUri } : {}),
    endpoints: {
      oauth2TokenUrl: env.GOOGLE_OAUTH2_TOKEN_URL,
      oauth2AuthBaseUrl: env.GOOGLE_OAUTH2_AUTH_URL,
      oauth2RevokeUrl: env.GOOGLE_OAUTH2_REVOKE_URL,
    },
  });
  const gmail = sdk.gmailApi({ version: 'v1', auth, rootUrl: env.GOOGLE_API_ROOT_URL });
  return { auth, gmail };
}

/** A MIME message as Gmail's `messages.send` takes it (base64url of RFC 822). */
const raw = (lines: string[]) => Buffer.from(lines.join('\r\n')).toString('base64url');

/** The error a call rejects with (gaxios' GaxiosError: status, response), or the test fails. */
async function failure(call: Promise<unknown>): Promise<unknown> {
  try {
    await call;
  } catch (error) {
    return error;
  }
  throw new Error('the call succeeded');
}

const header = (m: gmail_v1.Schema$Message, name: string) =>
  m.payload?.headers?.find((h) => h.name?.toLowerCase() === name.toLowerCase())?.value;

/**
 * A server app's Gmail flow, whichever @googleapis/gmail major built `gmail` (signed in with the refresh
 * token): the profile, the inbox by label, a message read and marked read, the labels, a message sent and
 * found by search.
 */
async function gmailFlow(t: Test, gmail: gmail_v1.Gmail): Promise<void> {
  const profile = await gmail.users.getProfile({ userId: 'me' });
  t.equal(profile.data.emailAddress, 'ada@acme.dev', 'the refresh token is the first account');

  const inbox = await gmail.users.messages.list({ userId: 'me', labelIds: ['INBOX'] });
  t.equal(inbox.data.messages?.length, 1, 'only the seeded message, not the engine demo mail');
  const invoice = await gmail.users.messages.get({ userId: 'me', id: inbox.data.messages![0]!.id! });
  t.equal(header(invoice.data, 'Subject'), 'Your invoice');
  t.ok(invoice.data.labelIds?.includes('UNREAD'));

  await gmail.users.messages.modify({
    userId: 'me',
    id: invoice.data.id!,
    requestBody: { removeLabelIds: ['UNREAD'] },
  });
  const read = await gmail.users.messages.get({ userId: 'me', id: invoice.data.id!, format: 'minimal' });
  t.notOk(read.data.labelIds?.includes('UNREAD'), 'marked as read');

  const labels = await gmail.users.labels.list({ userId: 'me' });
  t.ok(
    labels.data.labels?.some((l) => l.name === 'Customers' && l.type === 'user'),
    'the seeded label',
  );

  const sent = await gmail.users.messages.send({
    userId: 'me',
    requestBody: {
      raw: raw([
        'From: ada@acme.dev',
        'To: grace@acme.dev',
        'Subject: Sandbox ready',
        'Content-Type: text/plain; charset=utf-8',
        '',
        'Open it.',
      ]),
    },
  });
  t.ok(sent.data.id);
  t.ok(sent.data.labelIds?.includes('SENT'));
  const outbox = await gmail.users.messages.list({
    userId: 'me',
    q: 'in:sent subject:sandbox to:grace@acme.dev',
  });
  t.equal(outbox.data.messages?.[0]?.id, sent.data.id, 'search finds the sent message');
}

t.test('google twin: a server app reads and sends Gmail with its refresh token (googleapis)', async (t) => {
  const { host } = await tempHost(t);
  const entry = (await host.start('sb', ['google'], { adminToken: 'admin', seeds: { google: seed } }))
    .google!;
  const env = entry.env_vars;
  t.match(env.GOOGLE_CLIENT_ID, /^\d+-[0-9a-f]{32}\.apps\.googleusercontent\.com$/);
  t.match(env.GOOGLE_CLIENT_SECRET, /^GOCSPX-/);
  t.equal(env.GOOGLE_API_ROOT_URL, `${entry.base_url}/`);
  const { auth, gmail } = clients(env);
  auth.setCredentials({ refresh_token: env.GOOGLE_REFRESH_TOKEN });

  await gmailFlow(t, gmail);

  // The request log keeps the calls and masks the secrets, including the tokens the twin issued.
  const admin = new TwinAdminClient(entry.admin_url, 'admin');
  const log = JSON.stringify(await admin.requests());
  t.match(log, /\/gmail\/v1\/users\/me\/messages\/send/);
  const accessToken = (await auth.getAccessToken()).token!;
  for (const secret of [env.GOOGLE_CLIENT_SECRET!, env.GOOGLE_REFRESH_TOKEN!, accessToken])
    t.notOk(log.includes(secret), 'a secret is masked');

  // googleapis retries a 429 by itself; with retries off the app sees Google's quota error.
  await admin.addFault({ rate_limit: true, count: 1 });
  t.match(await failure(gmail.users.labels.list({ userId: 'me' }, { retry: false })), {
    status: 429,
    response: {
      data: { error: { status: 'RESOURCE_EXHAUSTED', errors: [{ reason: 'rateLimitExceeded' }] } },
    },
  });
});

t.test('google twin: sign-in with Google (authorization code + PKCE) and the ID token', async (t) => {
  const { host } = await tempHost(t);
  const entry = (await host.start('sb', ['google'], { adminToken: 'admin', seeds: { google: seed } }))
    .google!;
  const env = entry.env_vars;
  const redirectUri = seed.redirect_uris[0]!;
  const { auth, gmail } = clients(env, redirectUri);
  const verifier = randomBytes(32).toString('base64url');
  const url = auth.generateAuthUrl({
    scope: ['openid', 'email', 'profile', 'https://www.googleapis.com/auth/gmail.readonly'],
    state: 'st8',
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256' as never,
  });
  t.ok(url.startsWith(env.GOOGLE_OAUTH2_AUTH_URL!), 'the consent URL is the twin');
  const page = await fetch(url);
  t.equal(page.status, 200);
  t.match(await page.text(), /grace@acme\.dev/, 'the account chooser lists the seeded accounts');

  // The account chooser posts the chosen account; the twin redirects back with a code.
  const params = new URL(url).searchParams;
  const chosen = await fetch(`${entry.base_url}/o/oauth2/v2/auth/callback`, {
    method: 'POST',
    redirect: 'manual',
    body: new URLSearchParams({
      email: 'grace@acme.dev',
      redirect_uri: redirectUri,
      scope: params.get('scope')!,
      state: params.get('state')!,
      client_id: env.GOOGLE_CLIENT_ID!,
      code_challenge: params.get('code_challenge')!,
      code_challenge_method: 'S256',
    }),
  });
  t.equal(chosen.status, 302);
  const back = new URL(chosen.headers.get('location')!);
  t.equal(`${back.origin}${back.pathname}`, redirectUri);
  t.equal(back.searchParams.get('state'), 'st8');

  const { tokens } = await auth.getToken({ code: back.searchParams.get('code')!, codeVerifier: verifier });
  t.ok(tokens.access_token && tokens.refresh_token && tokens.id_token);
  auth.setCredentials(tokens);
  const claims = JSON.parse(Buffer.from(tokens.id_token!.split('.')[1]!, 'base64url').toString()) as Record<
    string,
    unknown
  >;
  t.match(claims, { email: 'grace@acme.dev', aud: env.GOOGLE_CLIENT_ID, iss: env.GOOGLE_ISSUER });
  const discovery = (await (await fetch(`${env.GOOGLE_ISSUER}/.well-known/openid-configuration`)).json()) as {
    jwks_uri: string;
  };
  const jwks = (await (await fetch(discovery.jwks_uri)).json()) as { keys: Array<{ kid: string }> };
  const kid = (
    JSON.parse(Buffer.from(tokens.id_token!.split('.')[0]!, 'base64url').toString()) as { kid: string }
  ).kid;
  t.ok(
    jwks.keys.some((k) => k.kid === kid),
    'the ID token is signed by a published key',
  );
  t.equal((await gmail.users.getProfile({ userId: 'me' })).data.emailAddress, 'grace@acme.dev');

  // A code is single-use, and a wrong client secret is Google's invalid_client.
  t.match(await failure(auth.getToken({ code: back.searchParams.get('code')!, codeVerifier: verifier })), {
    response: { data: { error: 'invalid_grant' } },
  });
  const wrong = new OAuth2Client({
    transporterOptions: checked,
    clientId: env.GOOGLE_CLIENT_ID,
    clientSecret: 'GOCSPX-wrong',
    endpoints: { oauth2TokenUrl: env.GOOGLE_OAUTH2_TOKEN_URL },
  });
  wrong.setCredentials({ refresh_token: env.GOOGLE_REFRESH_TOKEN });
  t.match(await failure(wrong.getAccessToken()), {
    response: { status: 401, data: { error: 'invalid_client' } },
  });

  // Revoking the access token makes it fail as Google's unknown tokens do.
  await auth.revokeToken(tokens.access_token!);
  const revoked = await fetch(`${entry.base_url}/gmail/v1/users/me/profile`, {
    headers: { authorization: `Bearer ${tokens.access_token}` },
  });
  t.equal(revoked.status, 401);
  const log = JSON.stringify(await new TwinAdminClient(entry.admin_url, 'admin').requests());
  t.notOk(log.includes(tokens.access_token!), 'the revoked token stays masked in the log');
  t.notOk(log.includes(tokens.refresh_token!), 'the issued refresh token is masked');
  t.notOk(log.includes(tokens.id_token!.split('.')[2]!), 'the ID token is masked');
});

t.test('google twin: unknown and missing tokens fail as Google fails them', async (t) => {
  const { host } = await tempHost(t);
  const entry = (await host.start('sb', ['google'], { adminToken: 'admin' })).google!;
  const gmail = gmailApi({
    version: 'v1',
    auth: 'not-an-api-key',
    rootUrl: entry.env_vars.GOOGLE_API_ROOT_URL,
  });
  const bogus = await fetch(`${entry.base_url}/gmail/v1/users/me/messages`, {
    headers: { authorization: 'Bearer ya29.bogus' },
  });
  t.equal(bogus.status, 401);
  t.match(await bogus.json(), {
    error: { code: 401, status: 'UNAUTHENTICATED', errors: [{ reason: 'authError' }] },
  });
  t.match(await failure(gmail.users.messages.list({ userId: 'me' })), { status: 401 });
  const userinfo = await fetch(`${entry.base_url}/oauth2/v2/userinfo`);
  t.equal(userinfo.status, 401);
  t.match(await userinfo.json(), { error: 'invalid_request' });
  const auth = new OAuth2Client({
    transporterOptions: checked,
    clientId: entry.env_vars.GOOGLE_CLIENT_ID,
    clientSecret: entry.env_vars.GOOGLE_CLIENT_SECRET,
    endpoints: { oauth2TokenUrl: entry.env_vars.GOOGLE_OAUTH2_TOKEN_URL },
  });
  auth.setCredentials({ refresh_token: '1//not-a-token' });
  t.match(await failure(auth.getAccessToken()), {
    response: { status: 400, data: { error: 'invalid_grant' } },
  });
  const demo = new OAuth2Client({
    transporterOptions: checked,
    clientId: 'example-client-id.apps.googleusercontent.com',
    clientSecret: 'GOCSPX-example_secret',
    endpoints: { oauth2TokenUrl: entry.env_vars.GOOGLE_OAUTH2_TOKEN_URL },
  });
  demo.setCredentials({ refresh_token: entry.env_vars.GOOGLE_REFRESH_TOKEN });
  t.match(
    await failure(demo.getAccessToken()),
    { response: { status: 401 } },
    "the engine's published demo client is not registered",
  );
});

t.test('google twin: state survives a restart; reset returns to the seed; POST /seed adds', async (t) => {
  const dataDir = await tempDir(t);
  const first = new TwinHost({ factories: twinFactories, dataDir, publicHost: '127.0.0.1' });
  const before = (await first.start('sb', ['google'], { adminToken: 'admin', seeds: { google: seed } }))
    .google!;
  const sent = await clients(before.env_vars);
  sent.auth.setCredentials({ refresh_token: before.env_vars.GOOGLE_REFRESH_TOKEN });
  const kept = await sent.gmail.users.messages.send({
    userId: 'me',
    requestBody: { raw: raw(['To: grace@acme.dev', 'Subject: kept', '', 'k']) },
  });
  await first.close();

  const second = new TwinHost({ factories: twinFactories, dataDir, publicHost: '127.0.0.1' });
  t.teardown(() => second.close());
  await second.restore(['sb']);
  const after = second.get('sb')!.google!;
  t.same(after.env_vars, { ...before.env_vars }, 'credentials survive');
  const { auth, gmail } = clients(after.env_vars);
  auth.setCredentials({ refresh_token: after.env_vars.GOOGLE_REFRESH_TOKEN });
  const got = await gmail.users.messages.get({ userId: 'me', id: kept.data.id! });
  t.equal(header(got.data, 'Subject'), 'kept', 'the sent message survives');

  const admin = new TwinAdminClient(after.admin_url, 'admin');
  await admin.seed({
    messages: [{ from: 'news@example.com', to: 'ada@acme.dev', subject: 'seeded later' }],
  });
  t.equal((await gmail.users.messages.list({ userId: 'me', labelIds: ['INBOX'] })).data.messages?.length, 2);
  await admin.reset();
  const auth2 = clients(after.env_vars);
  auth2.auth.setCredentials({ refresh_token: after.env_vars.GOOGLE_REFRESH_TOKEN });
  const all = await auth2.gmail.users.messages.list({ userId: 'me' });
  t.equal(all.data.messages?.length, 1, 'reset: only the start seed');
  t.equal(
    header(
      (await auth2.gmail.users.messages.get({ userId: 'me', id: all.data.messages![0]!.id! })).data,
      'Subject',
    ),
    'Your invoice',
  );
  await t.rejects(admin.seed({ users: [{ email: 'not an email' }] }), /google seed: "users\[0\]\.email"/);
});

t.test('google twin: its presets seed what they promise', async (t) => {
  const presets = PRESETS.filter((p) => p.twins.includes('google'));
  t.ok(presets.length >= 1, 'at least one preset uses google');
  for (const preset of presets) {
    const { host } = await tempHost(t);
    const entry = (
      await host.start(preset.id, ['google'], { adminToken: 'admin', seeds: { google: preset.seed.google } })
    ).google!;
    t.same(await countsFor('google', entry, preset.seed.google), preset.promises.google, preset.id);
  }
});

t.test('google twin: the same Gmail flow with @googleapis/gmail 18 and google-auth-library 10', async (t) => {
  const { host } = await tempHost(t);
  const env = (await host.start('sb', ['google'], { adminToken: 'admin', seeds: { google: seed } })).google!
    .env_vars;
  // The older majors have these calls too; their declarations are copies of their own, which TypeScript keeps apart.
  const older = {
    gmailApi: (await import('gmail-v18')).gmail,
    OAuth2Client: (await import('google-auth-library-v10')).OAuth2Client,
  } as unknown as GoogleSdk;
  const { auth, gmail } = clients(env, undefined, older);
  auth.setCredentials({ refresh_token: env.GOOGLE_REFRESH_TOKEN });
  const before = checkedAnswers.length;
  await gmailFlow(t, gmail);
  const results = checkedAnswers.slice(before).filter((r) => r.twin === 'google');
  t.ok(
    results.length >= 8,
    `${results.length} answers to the older pair checked against Google's description`,
  );
  auth.setCredentials({ access_token: 'ya29.not-a-token' });
  t.match(await failure(gmail.users.labels.list({ userId: 'me' })), {
    status: 401,
    response: { data: { error: { status: 'UNAUTHENTICATED' } } },
  });
});
