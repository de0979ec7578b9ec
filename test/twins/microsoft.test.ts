import t, { type Test } from 'tap';
import { createHash, randomBytes } from 'node:crypto';
import * as graphClient from '@microsoft/microsoft-graph-client';
import type { Client, GraphError, Middleware } from '@microsoft/microsoft-graph-client';
import { TwinAdminClient } from '../../server/twins/kit/admin-client.ts';
import { TwinHost } from '../../server/twins/runtime/host.ts';
import { PRESETS } from '../../server/scenarios/presets.ts';
import { tempDir, tempHost } from './helpers.ts';
import { checked, vendorFetch } from './vendor-schema.ts';
import { twinFactories } from '../../server/twins/registry.ts';

// Every response of the twin is checked against Microsoft's descriptions (../shared/vendor-schemas/microsoft):
// a missing required field or a wrong type rejects the call and fails the test.
const fetch = vendorFetch('microsoft');

/** The Graph client's last middleware, sending each request through the checked fetch. */
const schemaChecked: Middleware = {
  async execute(context) {
    context.response = await fetch(context.request, context.options);
  },
};

const seed = {
  users: [
    { email: 'adele@contoso.example', name: 'Adele Vance' },
    { email: 'megan@contoso.example', name: 'Megan Bowen' },
  ],
  redirect_uris: ['http://127.0.0.1:3000/auth/microsoft/callback'],
};

interface GraphUser {
  id: string;
  displayName: string;
  mail: string;
  userPrincipalName: string;
}

/** The client-credentials grant on the v2.0 token endpoint, as Microsoft documents it (an app-only token). */
async function appToken(env: Record<string, string>, secret = env.AZURE_CLIENT_SECRET!) {
  const res = await fetch(env.AZURE_OAUTH2_TOKEN_URL!, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: env.AZURE_CLIENT_ID!,
      client_secret: secret,
      scope: 'https://graph.microsoft.com/.default',
    }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, string> };
}

/**
 * The Graph client as an app builds it: its `baseUrl` from the twin, tokens from the app's own flow. The
 * client's auth middleware attaches tokens to https hosts only, so over the twin's plain http the token
 * goes in `fetchOptions` (docs/twins.md, "Microsoft").
 */
/** The parts of @microsoft/microsoft-graph-client an app uses here, from whichever major it installed. */
type GraphSdk = Pick<
  typeof graphClient,
  'Client' | 'AuthenticationHandler' | 'CustomAuthenticationProvider' | 'GraphError'
>;

function graph(env: Record<string, string>, token: string, sdk: GraphSdk = graphClient): Client {
  const { AuthenticationHandler, CustomAuthenticationProvider } = sdk;
  return sdk.Client.initWithMiddleware({
    baseUrl: env.MICROSOFT_GRAPH_BASE_URL,
    middleware: [
      new AuthenticationHandler(new CustomAuthenticationProvider((done) => done(null, token))),
      schemaChecked,
    ],
    // Version 3's AuthenticationHandler attaches the token to https hosts only; version 2's attaches it to
    // every request, where a second copy from fetchOptions would make the header "Bearer t, Bearer t".
    ...(sdk === graphClient ? { fetchOptions: { headers: { authorization: `Bearer ${token}` } } } : {}),
  });
}

/** The GraphError a call rejects with, or the test fails. */
async function graphFailure(call: Promise<unknown>, sdk: GraphSdk = graphClient): Promise<GraphError> {
  try {
    await call;
  } catch (error) {
    if (error instanceof sdk.GraphError) return error;
    throw error;
  }
  throw new Error('the call succeeded');
}

/**
 * What an app does with an app-only token, whichever Graph client major built `client`: the tenant's users,
 * one by id and by userPrincipalName, `$top`, and Graph's errors as the SDK's GraphError (404
 * `Request_ResourceNotFound`; `/me` is 400 without a signed-in user).
 */
async function appOnlyFlow(t: Test, client: Client, sdk: GraphSdk): Promise<void> {
  const users = (await client.api('/users').get()) as { value: GraphUser[] };
  t.same(
    users.value.map((u) => u.mail).sort(),
    ['adele@contoso.example', 'megan@contoso.example'],
    "the seeded users, not the engine's demo account",
  );
  const adele = users.value.find((u) => u.mail === 'adele@contoso.example')!;
  const byId = (await client.api(`/users/${adele.id}`).get()) as GraphUser;
  t.equal(byId.displayName, 'Adele Vance');
  const byUpn = (await client.api('/users/adele@contoso.example').get()) as GraphUser;
  t.equal(byUpn.id, adele.id, 'a user by userPrincipalName');
  const top = (await client.api('/users').top(1).get()) as { value: GraphUser[] };
  t.equal(top.value.length, 1);

  const missing = await graphFailure(client.api('/users/00000000-0000-0000-0000-000000000000').get(), sdk);
  t.equal(missing.statusCode, 404);
  t.equal(missing.code, 'Request_ResourceNotFound');
  const me = await graphFailure(client.api('/me').get(), sdk);
  t.equal(me.statusCode, 400, '/me needs a delegated token');
}

t.test('microsoft twin: an app-only token reads the tenant through the Graph client', async (t) => {
  const { host } = await tempHost(t);
  const entry = (await host.start('sb', ['microsoft'], { adminToken: 'admin', seeds: { microsoft: seed } }))
    .microsoft!;
  const env = entry.env_vars;
  t.match(env.AZURE_CLIENT_ID, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  t.equal(env.AZURE_AUTHORITY_HOST, entry.base_url);
  const token = await appToken(env);
  t.equal(token.status, 200);
  t.equal(token.body.token_type, 'Bearer');
  const client = graph(env, token.body.access_token!);

  await appOnlyFlow(t, client, graphClient);

  const admin = new TwinAdminClient(entry.admin_url, 'admin');
  const log = JSON.stringify(await admin.requests());
  t.match(log, /\/v1\.0\/users/);
  t.notOk(log.includes(env.AZURE_CLIENT_SECRET!), 'the client secret is masked');
  t.notOk(log.includes(token.body.access_token!), 'the issued token is masked');
});

t.test('microsoft twin: sign-in (authorization code + PKCE), /me, refresh and revoke', async (t) => {
  const { host } = await tempHost(t);
  const entry = (await host.start('sb', ['microsoft'], { adminToken: 'admin', seeds: { microsoft: seed } }))
    .microsoft!;
  const env = entry.env_vars;
  const redirectUri = seed.redirect_uris[0]!;
  const verifier = randomBytes(32).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  const authorize = new URL(env.AZURE_OAUTH2_AUTHORIZE_URL!);
  authorize.search = new URLSearchParams({
    client_id: env.AZURE_CLIENT_ID!,
    response_type: 'code',
    redirect_uri: redirectUri,
    scope: 'openid profile email offline_access User.Read',
    state: 'st8',
    code_challenge: challenge,
    code_challenge_method: 'S256',
  }).toString();
  const page = await fetch(authorize);
  t.equal(page.status, 200);
  t.match(await page.text(), /megan@contoso\.example/, 'the account picker lists the tenant');

  const picked = await fetch(`${entry.base_url}/oauth2/v2.0/authorize/callback`, {
    method: 'POST',
    redirect: 'manual',
    body: new URLSearchParams({
      email: 'megan@contoso.example',
      redirect_uri: redirectUri,
      scope: authorize.searchParams.get('scope')!,
      state: 'st8',
      client_id: env.AZURE_CLIENT_ID!,
      code_challenge: challenge,
      code_challenge_method: 'S256',
    }),
  });
  t.equal(picked.status, 302);
  const back = new URL(picked.headers.get('location')!);
  t.equal(back.searchParams.get('state'), 'st8');
  const exchange = (extra: Record<string, string>) =>
    fetch(env.AZURE_OAUTH2_TOKEN_URL!, {
      method: 'POST',
      body: new URLSearchParams({
        client_id: env.AZURE_CLIENT_ID!,
        client_secret: env.AZURE_CLIENT_SECRET!,
        redirect_uri: redirectUri,
        ...extra,
      }),
    });
  const tokens = (await (
    await exchange({
      grant_type: 'authorization_code',
      code: back.searchParams.get('code')!,
      code_verifier: verifier,
    })
  ).json()) as Record<string, string>;
  t.ok(tokens.access_token && tokens.refresh_token && tokens.id_token);
  const claims = JSON.parse(Buffer.from(tokens.id_token!.split('.')[1]!, 'base64url').toString()) as Record<
    string,
    unknown
  >;
  t.match(claims, { aud: env.AZURE_CLIENT_ID, iss: env.AZURE_ISSUER, tid: env.AZURE_TENANT_ID });
  const discovery = (await (await fetch(`${env.AZURE_ISSUER}/.well-known/openid-configuration`)).json()) as {
    issuer: string;
    token_endpoint: string;
  };
  t.equal(discovery.issuer, env.AZURE_ISSUER);
  t.equal(discovery.token_endpoint, env.AZURE_OAUTH2_TOKEN_URL);

  const me = (await graph(env, tokens.access_token!).api('/me').get()) as GraphUser;
  t.equal(me.userPrincipalName, 'megan@contoso.example');
  t.equal(me.displayName, 'Megan Bowen');

  const refreshed = (await (
    await exchange({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token! })
  ).json()) as Record<string, string>;
  t.ok(refreshed.access_token);
  t.equal(
    ((await graph(env, refreshed.access_token!).api('/me').get()) as GraphUser).mail,
    'megan@contoso.example',
  );

  const revoke = await fetch(`${entry.base_url}/oauth2/v2.0/revoke`, {
    method: 'POST',
    body: new URLSearchParams({ token: refreshed.access_token! }),
  });
  t.equal(revoke.status, 200);
  const revoked = await graphFailure(graph(env, refreshed.access_token!).api('/me').get());
  t.equal(revoked.statusCode, 401);
  t.equal(revoked.code, 'InvalidAuthenticationToken');
  const log = JSON.stringify(await new TwinAdminClient(entry.admin_url, 'admin').requests());
  for (const secret of [tokens.access_token!, tokens.refresh_token!, refreshed.access_token!])
    t.notOk(log.includes(secret), 'an issued or revoked token is masked');
});

t.test(
  'microsoft twin: unknown tokens and client secrets fail as Entra ID and Graph fail them',
  async (t) => {
    const { host } = await tempHost(t);
    const entry = (await host.start('sb', ['microsoft'], { adminToken: 'admin' })).microsoft!;
    const env = entry.env_vars;
    const bogus = await graphFailure(graph(env, 'eyJ0eXAiOi.not.atoken').api('/users').get());
    t.equal(bogus.statusCode, 401);
    t.equal(bogus.code, 'InvalidAuthenticationToken');
    const none = await fetch(`${entry.base_url}/v1.0/me`);
    t.equal(none.status, 401);
    t.match(await none.json(), {
      error: { code: 'InvalidAuthenticationToken', message: 'Access token is empty.' },
    });
    const wrongSecret = await appToken(env, 'abc8Q~wrong');
    t.equal(wrongSecret.status, 401);
    t.equal(wrongSecret.body.error, 'invalid_client');
    const demo = await appToken({ ...env, AZURE_CLIENT_ID: 'example-client-id' }, 'example-client-secret');
    t.equal(demo.status, 401, "the engine's published demo client is not registered");
    const ok = await appToken(env);
    const users = (await graph(env, ok.body.access_token!).api('/users').get()) as { value: GraphUser[] };
    t.same(
      users.value.map((u) => u.mail),
      ['user@contoso.example'],
      'default: one user, no demo account',
    );
    await new TwinAdminClient(entry.admin_url, 'admin').addFault({ status: 503, count: 1 });
    const faulted = await fetch(`${entry.base_url}/v1.0/users`, {
      headers: { authorization: `Bearer ${ok.body.access_token}` },
    });
    t.equal(faulted.status, 503);
    t.match(await faulted.json(), { error: { code: 'serviceNotAvailable' } });
  },
);

t.test('microsoft twin: state survives a restart; reset returns to the seed; POST /seed adds', async (t) => {
  const dataDir = await tempDir(t);
  const first = new TwinHost({ factories: twinFactories, dataDir, publicHost: '127.0.0.1' });
  const before = (await first.start('sb', ['microsoft'], { adminToken: 'admin', seeds: { microsoft: seed } }))
    .microsoft!;
  const token = (await appToken(before.env_vars)).body.access_token!;
  const ids = ((await graph(before.env_vars, token).api('/users').get()) as { value: GraphUser[] }).value.map(
    (u) => u.id,
  );
  await first.close();

  const second = new TwinHost({ factories: twinFactories, dataDir, publicHost: '127.0.0.1' });
  t.teardown(() => second.close());
  await second.restore(['sb']);
  const after = second.get('sb')!.microsoft!;
  t.same(after.env_vars, { ...before.env_vars }, 'credentials survive');
  const client = graph(after.env_vars, token);
  const list = async () => ((await client.api('/users').get()) as { value: GraphUser[] }).value;
  t.same(
    (await list()).map((u) => u.id),
    ids,
    'users and the issued token survive',
  );
  const admin = new TwinAdminClient(after.admin_url, 'admin');
  await admin.seed({ users: [{ email: 'lee@contoso.example', name: 'Lee Gu' }] });
  t.equal((await list()).length, 3);
  await admin.reset();
  const fresh = graph(after.env_vars, (await appToken(after.env_vars)).body.access_token!);
  t.same(
    ((await fresh.api('/users').get()) as { value: GraphUser[] }).value.map((u) => u.mail).sort(),
    ['adele@contoso.example', 'megan@contoso.example'],
    'reset: only the start seed',
  );
  await t.rejects(admin.seed({ users: [{ email: 'nope' }] }), /microsoft seed: "users\[0\]\.email"/);
});

t.test('microsoft twin: its presets seed what they promise', async (t) => {
  const presets = PRESETS.filter((p) => p.twins.includes('microsoft'));
  t.ok(presets.length >= 1, 'at least one preset uses microsoft');
  for (const preset of presets) {
    const { host } = await tempHost(t);
    const entry = (
      await host.start(preset.id, ['microsoft'], {
        adminToken: 'admin',
        seeds: { microsoft: preset.seed.microsoft },
      })
    ).microsoft!;
    const token = (await appToken(entry.env_vars)).body.access_token!;
    const users = (await graph(entry.env_vars, token).api('/users').get()) as { value: GraphUser[] };
    t.equal(users.value.length, preset.promises.microsoft!.users, preset.id);
  }
});

t.test('microsoft twin: the same app-only flow with @microsoft/microsoft-graph-client 2', async (t) => {
  const { host } = await tempHost(t);
  const env = (await host.start('sb', ['microsoft'], { adminToken: 'admin', seeds: { microsoft: seed } }))
    .microsoft!.env_vars;
  const token = await appToken(env);
  t.equal(token.status, 200);
  // Version 2 has these classes too; its declarations are a copy of their own, which TypeScript keeps apart.
  const v2 = (await import('graph-client-v2')) as unknown as GraphSdk;
  const before = checked.length;
  await appOnlyFlow(t, graph(env, token.body.access_token!, v2), v2);
  const results = checked.slice(before).filter((r) => r.twin === 'microsoft');
  t.ok(
    results.length >= 6,
    `${results.length} answers to Graph client 2 checked against Microsoft's description`,
  );
  const bogus = await graphFailure(graph(env, 'eyJ0eXAiOi.not.atoken', v2).api('/users').get(), v2);
  t.equal(bogus.statusCode, 401);
  t.equal(bogus.code, 'InvalidAuthenticationToken');
});
