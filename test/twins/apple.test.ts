import t from 'tap';
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import { createRemoteJWKSet, customFetch, importPKCS8, jwtVerify, SignJWT } from 'jose';
import { TwinAdminClient } from '../../server/twins/kit/admin-client.ts';
import { TwinHost } from '../../server/twins/runtime/host.ts';
import { PRESETS } from '../../server/scenarios/presets.ts';
import { countsFor } from '../scenarios/sdk-counts.ts';
import { tempDir, tempHost } from './helpers.ts';
import { vendorFetch } from './vendor-schema.ts';
import { twinFactories } from '../../server/twins/registry.ts';

// Every response of the twin is checked against Apple's documented shapes (server/twins/vendors/apple/vendor-schema):
// a missing required field or a wrong type rejects the call and fails the test.
const fetch = vendorFetch('apple');

// Apple ships no Node client for Sign in with Apple: these are the HTTP flows Apple documents
// ("Generate and validate tokens"), with `jose` for the client secret JWT and the ID token.

const seed = {
  users: [
    { email: 'tim@icloud.example', name: 'Tim Apple' },
    { email: 'jane@icloud.example', name: 'Jane Appleseed', is_private_email: true },
  ],
  redirect_uris: ['http://127.0.0.1:3000/auth/apple/callback'],
};

/** The client secret as Apple documents it: an ES256 JWT signed with the app's private key. */
async function clientSecret(
  env: Record<string, string>,
  opts: { key?: Parameters<SignJWT['sign']>[0] | KeyObject; expiresIn?: string; kid?: string } = {},
): Promise<string> {
  const key = opts.key ?? (await importPKCS8(env.APPLE_PRIVATE_KEY!, 'ES256'));
  return new SignJWT({})
    .setProtectedHeader({ alg: 'ES256', kid: opts.kid ?? env.APPLE_KEY_ID! })
    .setIssuer(env.APPLE_TEAM_ID!)
    .setSubject(env.APPLE_CLIENT_ID!)
    .setAudience('https://appleid.apple.com')
    .setIssuedAt()
    .setExpirationTime(opts.expiresIn ?? '1h')
    .sign(key);
}

async function token(env: Record<string, string>, fields: Record<string, string>) {
  const res = await fetch(`${env.APPLE_ISSUER}/auth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ client_id: env.APPLE_CLIENT_ID!, ...fields }),
  });
  return { status: res.status, body: (await res.json()) as Record<string, string> };
}

/** The account picker's choice, as the browser posts it; returns the code sent back to the app. */
async function signIn(baseUrl: string, env: Record<string, string>, email: string): Promise<string> {
  const redirectUri = seed.redirect_uris[0]!;
  const page = await fetch(
    `${baseUrl}/auth/authorize?${new URLSearchParams({
      client_id: env.APPLE_CLIENT_ID!,
      redirect_uri: redirectUri,
      response_type: 'code',
      scope: 'name email',
      state: 'st8',
    })}`,
  );
  if (page.status !== 200) throw new Error(`authorize page: ${page.status}`);
  const picked = await fetch(`${baseUrl}/auth/authorize/callback`, {
    method: 'POST',
    redirect: 'manual',
    body: new URLSearchParams({
      email,
      redirect_uri: redirectUri,
      scope: 'name email',
      state: 'st8',
      client_id: env.APPLE_CLIENT_ID!,
    }),
  });
  const back = new URL(picked.headers.get('location')!);
  return back.searchParams.get('code')!;
}

t.test(
  'apple twin: Sign in with Apple with a signed client secret; ID token verified with the JWKS',
  async (t) => {
    const { host } = await tempHost(t);
    const entry = (await host.start('sb', ['apple'], { adminToken: 'admin', seeds: { apple: seed } })).apple!;
    const env = entry.env_vars;
    t.match(env.APPLE_TEAM_ID, /^[A-Z0-9]{10}$/);
    t.match(env.APPLE_PRIVATE_KEY, /^-----BEGIN PRIVATE KEY-----/);

    const code = await signIn(entry.base_url, env, 'tim@icloud.example');
    const tokens = await token(env, {
      grant_type: 'authorization_code',
      code,
      client_secret: await clientSecret(env),
      redirect_uri: seed.redirect_uris[0]!,
    });
    t.equal(tokens.status, 200);
    t.ok(tokens.body.refresh_token);
    const discovery = (await (
      await fetch(`${env.APPLE_ISSUER}/.well-known/openid-configuration`)
    ).json()) as {
      jwks_uri: string;
    };
    const { payload } = await jwtVerify(
      tokens.body.id_token!,
      createRemoteJWKSet(new URL(discovery.jwks_uri), { [customFetch]: fetch }),
      {
        issuer: env.APPLE_ISSUER,
        audience: env.APPLE_CLIENT_ID,
      },
    );
    t.equal(payload.email, 'tim@icloud.example');

    const refreshed = await token(env, {
      grant_type: 'refresh_token',
      refresh_token: tokens.body.refresh_token!,
      client_secret: await clientSecret(env),
    });
    t.equal(refreshed.status, 200);
    t.ok(refreshed.body.id_token);

    const revoke = await fetch(`${env.APPLE_ISSUER}/auth/revoke`, {
      method: 'POST',
      body: new URLSearchParams({
        client_id: env.APPLE_CLIENT_ID!,
        client_secret: await clientSecret(env),
        token: tokens.body.refresh_token!,
        token_type_hint: 'refresh_token',
      }),
    });
    t.equal(revoke.status, 200);
    const after = await token(env, {
      grant_type: 'refresh_token',
      refresh_token: tokens.body.refresh_token!,
      client_secret: await clientSecret(env),
    });
    t.equal(after.status, 400);
    t.equal(after.body.error, 'invalid_grant', 'a revoked refresh token is refused');

    const log = JSON.stringify(await new TwinAdminClient(entry.admin_url, 'admin').requests());
    t.match(log, /\/auth\/token/);
    for (const secret of [
      tokens.body.access_token!,
      tokens.body.refresh_token!,
      refreshed.body.access_token!,
    ])
      t.notOk(log.includes(secret), 'issued and revoked tokens are masked');
  },
);

t.test('apple twin: client secrets Apple refuses are invalid_client', async (t) => {
  const { host } = await tempHost(t);
  const entry = (await host.start('sb', ['apple'], { adminToken: 'admin', seeds: { apple: seed } })).apple!;
  const env = entry.env_vars;
  const other = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
  const cases: Array<[string, string]> = [
    ['signed with another key', await clientSecret(env, { key: other })],
    ['with another key id', await clientSecret(env, { kid: 'ABCDEFGHIJ' })],
    ['longer than six months', await clientSecret(env, { expiresIn: '200d' })],
    ['not a JWT', 'secret'],
  ];
  for (const [why, secret] of cases) {
    const code = await signIn(entry.base_url, env, 'tim@icloud.example');
    const res = await token(env, { grant_type: 'authorization_code', code, client_secret: secret });
    t.equal(res.status, 400, why);
    t.same(res.body, { error: 'invalid_client' }, why);
  }
  const unknownClient = await token(
    { ...env, APPLE_CLIENT_ID: 'com.example.other' },
    { grant_type: 'authorization_code', code: 'x', client_secret: await clientSecret(env) },
  );
  t.same(unknownClient.body, { error: 'invalid_client' });
  const noSecret = await token(env, { grant_type: 'authorization_code', code: 'x' });
  t.same(noSecret.body, { error: 'invalid_client' });
});

t.test('apple twin: state survives a restart; reset returns to the seed; POST /seed adds', async (t) => {
  const dataDir = await tempDir(t);
  const first = new TwinHost({ factories: twinFactories, dataDir, publicHost: '127.0.0.1' });
  const before = (await first.start('sb', ['apple'], { adminToken: 'admin', seeds: { apple: seed } })).apple!;
  const code = await signIn(before.base_url, before.env_vars, 'jane@icloud.example');
  const tokens = await token(before.env_vars, {
    grant_type: 'authorization_code',
    code,
    client_secret: await clientSecret(before.env_vars),
  });
  await first.close();

  const second = new TwinHost({ factories: twinFactories, dataDir, publicHost: '127.0.0.1' });
  t.teardown(() => second.close());
  await second.restore(['sb']);
  const after = second.get('sb')!.apple!;
  t.same(after.env_vars, { ...before.env_vars }, 'credentials (and the private key) survive');
  const refreshed = await token(after.env_vars, {
    grant_type: 'refresh_token',
    refresh_token: tokens.body.refresh_token!,
    client_secret: await clientSecret(after.env_vars),
  });
  t.equal(refreshed.status, 200, 'a refresh token survives');

  const admin = new TwinAdminClient(after.admin_url, 'admin');
  await admin.seed({ users: [{ email: 'new@icloud.example' }] });
  const page = async () =>
    (await fetch(`${after.base_url}/auth/authorize?client_id=${after.env_vars.APPLE_CLIENT_ID}`)).text();
  t.match(await page(), /new@icloud\.example/);
  await admin.reset();
  const html = await page();
  t.notMatch(html, /new@icloud\.example/, 'reset: only the start seed');
  t.match(html, /tim@icloud\.example/);
  t.notMatch(html, /testuser@icloud\.com/, 'no engine demo account');
  await t.rejects(admin.seed({ users: [{ email: 'nope' }] }), /apple seed: "users\[0\]\.email"/);
});

t.test('apple twin: its presets seed what they promise', async (t) => {
  const presets = PRESETS.filter((p) => p.twins.includes('apple'));
  t.ok(presets.length >= 1, 'at least one preset uses apple');
  for (const preset of presets) {
    const { host } = await tempHost(t);
    const entry = (
      await host.start(preset.id, ['apple'], { adminToken: 'admin', seeds: { apple: preset.seed.apple } })
    ).apple!;
    t.same(await countsFor('apple', entry, preset.seed.apple), preset.promises.apple, preset.id);
  }
});
