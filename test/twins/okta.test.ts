import t, { type Test } from 'tap';
import * as okta from '@okta/okta-sdk-nodejs';
import { TwinAdminClient } from '../../server/twins/kit/admin-client.ts';
import { oktaTwin } from '../../server/twins/vendors/okta/twin.ts';
import { tempHost, type Teardown } from './helpers.ts';
import { checked, vendorFetch } from './vendor-schema.ts';

// Every response of the twin is checked against Okta's own API description (../shared/vendor-schemas/okta):
// a missing required field or a wrong type rejects the call and fails the test.
const fetch = vendorFetch('okta');

type OktaModule = typeof okta;

/** The executor of the okta-sdk-nodejs major in use, with each response checked before the SDK reads it. */
function schemaCheckedExecutor(sdk: OktaModule): okta.RequestExecutor {
  class SchemaCheckedExecutor extends sdk.RequestExecutor {
    override fetch(request: { url: string } & Record<string, unknown>) {
      const send = (() => super.fetch(request)) as unknown as typeof globalThis.fetch;
      return vendorFetch('okta', send)(request.url, request as RequestInit);
    }
  }
  return new SchemaCheckedExecutor();
}

const seed = {
  users: [
    { login: 'ada@acme.example.com', first_name: 'Ada', last_name: 'Lovelace' },
    { login: 'grace@acme.example.com', first_name: 'Grace', last_name: 'Hopper' },
  ],
  groups: [{ name: 'Engineering', description: 'Builders', members: ['ada@acme.example.com'] }],
};

/**
 * okta-sdk-nodejs as an app builds it: `new okta.Client()` reads OKTA_CLIENT_ORGURL and OKTA_CLIENT_TOKEN
 * from the environment. No response cache (a reset must show at once) and no retries (a fault reaches the
 * test as it is); a token override for the refusal tests.
 */
function oktaClient(
  t: Teardown,
  env: Record<string, string>,
  token?: string,
  sdk: OktaModule = okta,
): okta.Client {
  const before = [process.env.OKTA_CLIENT_ORGURL, process.env.OKTA_CLIENT_TOKEN];
  process.env.OKTA_CLIENT_ORGURL = env.OKTA_CLIENT_ORGURL;
  process.env.OKTA_CLIENT_TOKEN = env.OKTA_CLIENT_TOKEN;
  try {
    return new sdk.Client({
      ...(token ? { token } : {}),
      requestExecutor: schemaCheckedExecutor(sdk),
      cacheMiddleware: null,
    } as ConstructorParameters<typeof okta.Client>[0]);
  } finally {
    for (const [k, v] of [
      ['OKTA_CLIENT_ORGURL', before[0]],
      ['OKTA_CLIENT_TOKEN', before[1]],
    ] as const) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    t.teardown(() => {});
  }
}

async function all<T>(collection: { each(fn: (item: T) => void): Promise<unknown> }): Promise<T[]> {
  const items: T[] = [];
  await collection.each((item) => void items.push(item));
  return items;
}

const errorOf = (call: Promise<unknown>) =>
  call.then(
    () => undefined,
    (e: { status?: number; errorCode?: string }) => ({ status: e.status, errorCode: e.errorCode }),
  );

/**
 * An app's directory flow, whichever okta-sdk-nodejs major built `client` (8 and 7 share the object-parameter
 * `userApi`/`groupApi`): the seeded users and groups, a user created active, found by login, deactivated; a
 * group created with a member; Okta's E0000007 for a user that does not exist.
 */
async function directoryFlow(t: Test, client: okta.Client): Promise<{ grace: okta.User }> {
  const users = await all<okta.User>(await client.userApi.listUsers());
  t.same(users.map((u) => u.profile?.login).sort(), ['ada@acme.example.com', 'grace@acme.example.com']);
  t.ok(
    users.every((u) => u.status === 'ACTIVE'),
    'seeded users are active',
  );

  const created = await client.userApi.createUser({
    body: {
      profile: {
        firstName: 'Linus',
        lastName: 'T',
        email: 'linus@acme.example.com',
        login: 'linus@acme.example.com',
      },
    },
    activate: true,
  });
  t.match(created.id, /^00u/);
  t.equal(created.status, 'ACTIVE');
  const fetched = await client.userApi.getUser({ userId: 'linus@acme.example.com' });
  t.equal(fetched.id, created.id, 'a user is found by login too, as in Okta');
  t.equal(fetched.profile?.firstName, 'Linus');

  await client.userApi.deactivateUser({ userId: created.id! });
  t.equal((await client.userApi.getUser({ userId: created.id! })).status, 'DEPROVISIONED');

  const groups = await all<okta.Group>(await client.groupApi.listGroups());
  const engineering = groups.find((g) => g.profile?.name === 'Engineering')!;
  t.ok(engineering, 'the seeded group is listed');
  t.ok(
    groups.some((g) => g.profile?.name === 'Everyone'),
    'with Okta’s built-in Everyone',
  );
  const members = await all<okta.User>(await client.groupApi.listGroupUsers({ groupId: engineering.id! }));
  t.same(
    members.map((u) => u.profile?.login),
    ['ada@acme.example.com'],
    'seeded members',
  );

  const ops = await client.groupApi.createGroup({
    group: { profile: { name: 'Ops', description: 'On call' } },
  });
  const grace = users.find((u) => u.profile?.login === 'grace@acme.example.com')!;
  await client.groupApi.assignUserToGroup({ groupId: ops.id!, userId: grace.id! });
  const opsMembers = await all<okta.User>(await client.groupApi.listGroupUsers({ groupId: ops.id! }));
  t.same(
    opsMembers.map((u) => u.id),
    [grace.id],
  );

  const missing = await errorOf(client.userApi.getUser({ userId: 'nobody@acme.example.com' }));
  t.same(missing, { status: 404, errorCode: 'E0000007' });

  return { grace };
}

t.test('okta twin: users, lifecycle and groups through okta-sdk-nodejs', async (t) => {
  const { host } = await tempHost(t);
  const entry = (await host.start('sb', ['okta'], { adminToken: 'admin', seeds: { okta: seed } })).okta!;
  const client = oktaClient(t, entry.env_vars);
  const { grace } = await directoryFlow(t, client);

  const admin = new TwinAdminClient(entry.admin_url, 'admin');
  await admin.addFault({ rate_limit: true, count: 1 });
  t.same(await errorOf(client.userApi.getUser({ userId: grace.id! })), {
    status: 429,
    errorCode: 'E0000047',
  });

  const log = JSON.stringify(await admin.requests());
  t.notOk(log.includes(entry.env_vars.OKTA_CLIENT_TOKEN!), 'the API token never reaches the log');
  t.match(log, /\/api\/v1\/users/);

  await admin.reset();
  const after = await all<okta.User>(await client.userApi.listUsers());
  t.same(
    after.map((u) => u.profile?.login).sort(),
    ['ada@acme.example.com', 'grace@acme.example.com'],
    'reset drops created users',
  );
  const afterGroups = await all<okta.Group>(await client.groupApi.listGroups());
  t.notOk(
    afterGroups.some((g) => g.profile?.name === 'Ops'),
    'and created groups',
  );

  await admin.seed({ users: [{ login: 'margaret@acme.example.com' }] });
  t.equal(
    (await client.userApi.getUser({ userId: 'margaret@acme.example.com' })).status,
    'ACTIVE',
    'POST /seed adds',
  );
});

t.test(
  'okta twin: a wrong, missing or old API token fails as Okta fails it; OIDC client credentials',
  async (t) => {
    const { host } = await tempHost(t);
    const entry = (await host.start('sb', ['okta'], { adminToken: 'admin', seeds: { okta: seed } })).okta!;
    const env = entry.env_vars;
    const bogus = oktaClient(t, env, '00bogus-token-000000000000000000');
    t.same(await errorOf(bogus.userApi.listUsers().then((c) => all(c))), {
      status: 401,
      errorCode: 'E0000011',
    });
    const anonymous = await fetch(`${env.OKTA_CLIENT_ORGURL}/api/v1/users`);
    t.equal(anonymous.status, 401);
    t.equal(((await anonymous.json()) as { errorCode: string }).errorCode, 'E0000005');

    // The engine's demo client and its published secret are not in a Twinbox org.
    const demo = await fetch(`${env.OKTA_OAUTH2_ISSUER}/v1/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=client_credentials&client_id=okta-test-client&client_secret=okta-test-secret&scope=api',
    });
    t.equal(demo.status, 401, 'the engine demo client is gone');

    // The twin's own OIDC app: discovery, then client credentials with HTTP Basic, as OAuth clients send them.
    const discovery = (await (
      await fetch(`${env.OKTA_OAUTH2_ISSUER}/.well-known/openid-configuration`)
    ).json()) as {
      issuer: string;
      token_endpoint: string;
    };
    t.equal(discovery.issuer, env.OKTA_OAUTH2_ISSUER);
    const basic = Buffer.from(`${env.OKTA_OAUTH2_CLIENT_ID}:${env.OKTA_OAUTH2_CLIENT_SECRET}`).toString(
      'base64',
    );
    const token = await fetch(discovery.token_endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${basic}` },
      body: 'grant_type=client_credentials&scope=api',
    });
    t.equal(token.status, 200);
    const issued = (await token.json()) as { access_token?: string; token_type?: string };
    t.equal(issued.token_type, 'Bearer');
    t.ok(issued.access_token);
    const wrong = Buffer.from(`${env.OKTA_OAUTH2_CLIENT_ID}:not-the-secret`).toString('base64');
    const refused = await fetch(discovery.token_endpoint, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${wrong}` },
      body: 'grant_type=client_credentials&scope=api',
    });
    t.equal(refused.status, 401);
    t.equal(((await refused.json()) as { error?: string }).error, 'invalid_client');

    const admin = new TwinAdminClient(entry.admin_url, 'admin');
    const log = JSON.stringify(await admin.requests());
    t.notOk(log.includes(env.OKTA_OAUTH2_CLIENT_SECRET!), 'the client secret never reaches the log');
    t.notOk(log.includes(issued.access_token!), 'nor the access token');
  },
);

t.test('okta twin: state and credentials survive a restart; seeds are checked', async (t) => {
  const { host } = await tempHost(t);
  const entry = (await host.start('sb', ['okta'], { adminToken: 'admin', seeds: { okta: seed } })).okta!;
  const client = oktaClient(t, entry.env_vars);
  const created = await client.userApi.createUser({
    body: {
      profile: {
        firstName: 'Kept',
        lastName: 'User',
        email: 'kept@acme.example.com',
        login: 'kept@acme.example.com',
      },
    },
  });
  await host.stop('sb');
  await host.restore(['sb']);
  const restored = host.get('sb')?.okta;
  t.ok(restored, 'the instance comes back from its state file');
  t.equal(restored!.env_vars.OKTA_CLIENT_TOKEN, entry.env_vars.OKTA_CLIENT_TOKEN, 'same API token');
  const again = oktaClient(t, restored!.env_vars);
  t.equal((await again.userApi.getUser({ userId: 'kept@acme.example.com' })).id, created.id);

  t.throws(() => oktaTwin.validateSeed({ users: [{ login: 'not-an-email' }] }), /okta seed/);
  t.throws(
    () => oktaTwin.validateSeed({ groups: [{ name: 'G', members: ['ghost@acme.example.com'] }] }),
    /not a seeded user/,
  );
});

t.test('okta twin: the same directory flow with okta-sdk-nodejs 7', async (t) => {
  const { host } = await tempHost(t);
  const entry = (await host.start('sb', ['okta'], { adminToken: 'admin', seeds: { okta: seed } })).okta!;
  // okta-sdk-nodejs 7 is CommonJS that Node's ESM loader gives only as a default export.
  const { default: oktaV7 } = await import('okta-sdk-v7');
  // Version 7 has the same calls; its type declarations are a copy of their own, which TypeScript keeps apart.
  const client = oktaClient(t, entry.env_vars, undefined, oktaV7 as unknown as OktaModule);
  const before = checked.length;
  await directoryFlow(t, client);
  const results = checked.slice(before).filter((r) => r.twin === 'okta');
  t.ok(
    results.length >= 10,
    `${results.length} answers to okta-sdk-nodejs 7 checked against Okta's description`,
  );
  t.same(
    await errorOf(
      oktaClient(t, entry.env_vars, 'not-a-token', oktaV7 as unknown as OktaModule)
        .userApi.listUsers()
        .then((c) => all(c)),
    ),
    { status: 401, errorCode: 'E0000011' },
    'a wrong API token is E0000011 in version 7 too',
  );
});
