import t from 'tap';
import { createHash, randomBytes } from 'node:crypto';
import { importPKCS8, SignJWT } from 'jose';
import { TwinAdminClient } from '../../server/twins/kit/admin-client.ts';
import type { TwinFactory } from '../../server/twins/contract.ts';
import { twinFactories } from '../../server/twins/registry.ts';
import type { RequestLogEntry } from '../../server/twins/runtime/request-log.ts';
import { tempHost } from '../twins/helpers.ts';

// The sign-in twins' timeline lines (Apple, Microsoft), from the flows their vendors document, over real
// HTTP: a code issued when a person picks an account, tokens issued and refreshed, a token revoked.

/** The state changes of every logged request, in order, as the timeline shows them. */
function changes(factory: TwinFactory, log: RequestLogEntry[]): string[] {
  return log.map((entry) => factory.describeChange?.(entry)).filter((c): c is string => c !== undefined);
}

const form = (fields: Record<string, string>) => ({ method: 'POST', body: new URLSearchParams(fields) });

t.test(
  'apple: code issued for the account picked, tokens issued and refreshed, a refresh token revoked',
  async (t) => {
    const { host } = await tempHost(t);
    const redirectUri = 'http://127.0.0.1:3000/auth/apple/callback';
    const entry = (
      await host.start('sb', ['apple'], {
        adminToken: 'admin',
        seeds: { apple: { users: [{ email: 'tim@icloud.example' }], redirect_uris: [redirectUri] } },
      })
    ).apple!;
    const env = entry.env_vars;
    const client = env.APPLE_CLIENT_ID!;
    const secret = async () =>
      new SignJWT({})
        .setProtectedHeader({ alg: 'ES256', kid: env.APPLE_KEY_ID! })
        .setIssuer(env.APPLE_TEAM_ID!)
        .setSubject(client)
        .setAudience('https://appleid.apple.com')
        .setIssuedAt()
        .setExpirationTime('1h')
        .sign(await importPKCS8(env.APPLE_PRIVATE_KEY!, 'ES256'));

    const authorize = new URLSearchParams({
      client_id: client,
      redirect_uri: redirectUri,
      response_type: 'code',
    });
    t.equal(
      (await fetch(`${env.APPLE_ISSUER}/auth/authorize?${authorize}`)).status,
      200,
      'the picker is a read',
    );
    const picked = await fetch(`${env.APPLE_ISSUER}/auth/authorize/callback`, {
      ...form({ email: 'tim@icloud.example', redirect_uri: redirectUri, client_id: client, state: 's' }),
      redirect: 'manual',
    });
    t.equal(picked.status, 302);
    const code = new URL(picked.headers.get('location')!).searchParams.get('code')!;
    const token = async (fields: Record<string, string>) =>
      (
        await fetch(`${env.APPLE_ISSUER}/auth/token`, form({ client_id: client, ...fields }))
      ).json() as Promise<Record<string, string>>;
    const tokens = await token({ grant_type: 'authorization_code', code, client_secret: await secret() });
    t.ok(tokens.refresh_token, 'the code was exchanged');
    t.ok(
      (
        await token({
          grant_type: 'refresh_token',
          refresh_token: tokens.refresh_token!,
          client_secret: await secret(),
        })
      ).access_token,
    );
    const refused = await fetch(
      `${env.APPLE_ISSUER}/auth/token`,
      form({ client_id: client, grant_type: 'authorization_code', code, client_secret: 'not-a-jwt' }),
    );
    t.equal(refused.status, 400, 'a refused client changes nothing');
    const revoked = await fetch(
      `${env.APPLE_ISSUER}/auth/revoke`,
      form({
        client_id: client,
        client_secret: await secret(),
        token: tokens.refresh_token!,
        token_type_hint: 'refresh_token',
      }),
    );
    t.equal(revoked.status, 200);

    const lines = changes(
      twinFactories.get('apple')!,
      await new TwinAdminClient(entry.admin_url, 'admin').requests(),
    );
    t.same(lines, [
      `authorization code issued to ${client} for tim@icloud.example`,
      `tokens issued to ${client} for an authorization code`,
      `tokens refreshed to ${client}`,
      `refresh token revoked for ${client}`,
    ]);
    for (const line of lines) t.notOk(line.includes(tokens.refresh_token!), 'no line shows a token');
  },
);

t.test('microsoft: app-only token, sign-in code, tokens issued and refreshed, a token revoked', async (t) => {
  const { host } = await tempHost(t);
  const redirectUri = 'http://127.0.0.1:3000/auth/microsoft/callback';
  const entry = (
    await host.start('sb', ['microsoft'], {
      adminToken: 'admin',
      seeds: { microsoft: { users: [{ email: 'megan@contoso.example' }], redirect_uris: [redirectUri] } },
    })
  ).microsoft!;
  const env = entry.env_vars;
  const client = env.AZURE_CLIENT_ID!;
  const token = async (fields: Record<string, string>) =>
    (
      await fetch(
        env.AZURE_OAUTH2_TOKEN_URL!,
        form({ client_id: client, client_secret: env.AZURE_CLIENT_SECRET!, ...fields }),
      )
    ).json() as Promise<Record<string, string>>;

  t.ok(
    (await token({ grant_type: 'client_credentials', scope: 'https://graph.microsoft.com/.default' }))
      .access_token,
  );
  const wrong = await fetch(
    env.AZURE_OAUTH2_TOKEN_URL!,
    form({ grant_type: 'client_credentials', client_id: client, client_secret: 'wrong' }),
  );
  t.equal(wrong.status, 401, 'a wrong secret changes nothing');
  const verifier = randomBytes(32).toString('base64url');
  const challenge = createHash('sha256').update(verifier).digest('base64url');
  const picked = await fetch(`${entry.base_url}/oauth2/v2.0/authorize/callback`, {
    ...form({
      email: 'megan@contoso.example',
      redirect_uri: redirectUri,
      scope: 'openid offline_access',
      client_id: client,
      code_challenge: challenge,
      code_challenge_method: 'S256',
    }),
    redirect: 'manual',
  });
  t.equal(picked.status, 302);
  const code = new URL(picked.headers.get('location')!).searchParams.get('code')!;
  const tokens = await token({
    grant_type: 'authorization_code',
    code,
    code_verifier: verifier,
    redirect_uri: redirectUri,
  });
  const refreshed = await token({ grant_type: 'refresh_token', refresh_token: tokens.refresh_token! });
  t.ok(refreshed.access_token);
  t.equal(
    (
      await fetch(`${entry.base_url}/v1.0/users`, {
        headers: { authorization: `Bearer ${refreshed.access_token}` },
      })
    ).status,
    200,
  );
  const revoked = await fetch(
    `${entry.base_url}/oauth2/v2.0/revoke`,
    form({ token: refreshed.access_token! }),
  );
  t.equal(revoked.status, 200);

  const lines = changes(
    twinFactories.get('microsoft')!,
    await new TwinAdminClient(entry.admin_url, 'admin').requests(),
  );
  t.same(lines, [
    `app-only access token issued to ${client}`,
    `authorization code issued to ${client} for megan@contoso.example`,
    `tokens issued to ${client} for an authorization code`,
    `tokens refreshed to ${client}`,
    'token revoked',
  ]);
});

t.test('a sign-in line is never read from a refused, faulted or read-only entry', async (t) => {
  const base: RequestLogEntry = {
    id: 1,
    at: new Date().toISOString(),
    method: 'POST',
    path: '/auth/authorize/callback',
    status: 302,
    duration_ms: 1,
    request_body: 'email=tim@icloud.example&client_id=dev.twinbox.app',
    response_body: null,
  };
  const apple = twinFactories.get('apple')!;
  t.equal(apple.describeChange!(base), 'authorization code issued to dev.twinbox.app for tim@icloud.example');
  t.equal(
    apple.describeChange!({ ...base, status: 200 }),
    'authorization code issued to dev.twinbox.app for tim@icloud.example',
    'the form_post page issues a code too',
  );
  t.equal(apple.describeChange!({ ...base, status: 400 }), undefined);
  t.equal(apple.describeChange!({ ...base, fault: 'status#1' }), undefined);
  t.equal(apple.describeChange!({ ...base, method: 'GET' }), undefined);
  const token = { ...base, path: '/auth/token', status: 200, request_body: 'grant_type=password' };
  t.equal(apple.describeChange!(token), undefined, 'a grant the twin does not issue is no change');
  t.equal(
    apple.describeChange!({ ...token, status: 302, request_body: 'grant_type=refresh_token' }),
    undefined,
  );
  t.equal(
    apple.describeChange!({
      ...base,
      path: '/auth/revoke',
      status: 200,
      request_body: { token: '[REDACTED]' },
    }),
    'token revoked',
    'a JSON body without a client or hint',
  );
  const microsoft = twinFactories.get('microsoft')!;
  t.equal(
    microsoft.describeChange!({
      ...base,
      path: '/9188040d-6c67-4c5b-b112-36a304b66dad/oauth2/token',
      status: 200,
      request_body: 'grant_type=client_credentials&client_id=c1',
    }),
    'app-only access token issued to c1',
    "the v1 endpoint, which the engine forwards to v2.0's",
  );
  t.equal(microsoft.describeChange!({ ...base, path: '/v1.0/users', status: 200 }), undefined);
});
