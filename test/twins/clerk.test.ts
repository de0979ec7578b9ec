import t, { type Test } from 'tap';
import { createRequire } from 'node:module';
import { createClerkClient, verifyToken, type ClerkClient } from '@clerk/backend';
import { isClerkAPIResponseError } from '@clerk/backend/errors';
import { TwinAdminClient } from '../../server/twins/kit/admin-client.ts';
import { TwinHost } from '../../server/twins/runtime/host.ts';
import type { TwinEntry } from '../../server/twins/runtime/instance.ts';
import { PRESETS } from '../../server/scenarios/presets.ts';
import { clerkTwin } from '../../server/twins/vendors/clerk/twin.ts';
import { tempDir, tempHost, type Teardown } from './helpers.ts';
import { vendorFetch, checked } from './vendor-schema.ts';
import { countsFor } from '../scenarios/sdk-counts.ts';
import { twinFactories } from '../../server/twins/registry.ts';

const seed = {
  users: [
    {
      email: 'ada@acme.dev',
      first_name: 'Ada',
      last_name: 'Lovelace',
      password: 'analytical-engine',
      public_metadata: { plan: 'pro' },
    },
  ],
  organizations: [{ name: 'Acme', slug: 'acme', members: [{ email: 'ada@acme.dev', role: 'org:admin' }] }],
};

/**
 * @clerk/backend takes no `fetch` option: it calls the global fetch, read at call time when NODE_ENV is
 * `test`. Calls to Clerk twins go through `vendorFetch`, so every Backend API answer is checked against
 * Clerk's own description (../shared/vendor-schemas/clerk); other calls (the admin API) pass as they are.
 */
const original = globalThis.fetch;
/**
 * Tried once more when a kept-alive connection was closed by the twin while the test compiled schemas on a
 * loaded machine (the request never reached the twin, so it cannot apply twice), as stripe-schema.ts does.
 */
const retried: typeof fetch = async (input, init) => {
  try {
    return await original(input, init);
  } catch (error) {
    const code = (error as { cause?: { code?: string } }).cause?.code;
    if (code !== 'ECONNRESET' && code !== 'UND_ERR_SOCKET') throw error;
    return original(input, init);
  }
};
const checkedFetch = vendorFetch('clerk', retried);
const twinUrls = new Set<string>();
process.env.NODE_ENV = 'test';
globalThis.fetch = ((input: Parameters<typeof fetch>[0], init?: RequestInit) => {
  const url = input instanceof Request ? input.url : String(input);
  return [...twinUrls].some((base) => url.startsWith(`${base}/v1/`))
    ? checkedFetch(input, init)
    : original(input, init);
}) as typeof fetch;
t.teardown(() => {
  globalThis.fetch = original;
});

/** The SDK as an app builds it from the twin's variables. */
function clerkClient(env: Record<string, string>, secretKey = env.CLERK_SECRET_KEY): ClerkClient {
  twinUrls.add(env.CLERK_API_URL!);
  return createClerkClient({
    secretKey,
    publishableKey: env.CLERK_PUBLISHABLE_KEY,
    apiUrl: env.CLERK_API_URL,
  });
}

async function start(t: Teardown, s: unknown = seed): Promise<TwinEntry> {
  const { host } = await tempHost(t);
  return (await host.start('sb', ['clerk'], { adminToken: 'admin', seeds: { clerk: s } })).clerk!;
}

/** What a flow needs of a @clerk/backend major: its client and the helpers an app imports beside it. */
interface ClerkSdk {
  clerk: ClerkClient;
  verifyToken: typeof verifyToken;
  isClerkAPIResponseError: typeof isClerkAPIResponseError;
}

/**
 * An app's flow with @clerk/backend, whichever major: users (create, list and count by email, metadata
 * merged, password checks), organizations and memberships, an invitation, a session whose token
 * `authenticateRequest` and `verifyToken` accept, a revoked session, a deleted user.
 */
async function clerkFlow(t: Test, sdk: ClerkSdk, env: Record<string, string>) {
  const { clerk } = sdk;
  const seeded = await clerk.users.getUserList();
  t.same(
    seeded.data.map((u) => u.primaryEmailAddress?.emailAddress),
    ['ada@acme.dev'],
    'only the seeded user: the engine default user is gone',
  );
  t.equal(seeded.totalCount, 1);
  const ada = seeded.data[0]!;
  t.equal(ada.firstName, 'Ada');
  t.same(ada.publicMetadata, { plan: 'pro' });
  t.ok(ada.passwordEnabled);
  t.ok(ada.createdAt > 1e12, 'timestamps are milliseconds, as Clerk gives them');

  const grace = await clerk.users.createUser({
    emailAddress: ['grace@acme.dev'],
    firstName: 'Grace',
    lastName: 'Hopper',
    password: 'cobol-compiler-1959',
    externalId: 'emp-42',
  });
  t.match(grace.id, /^user_/);
  t.equal(grace.primaryEmailAddress?.emailAddress, 'grace@acme.dev');
  t.equal(grace.emailAddresses[0]?.verification?.status, 'verified');
  t.equal((await clerk.users.getUser(grace.id)).externalId, 'emp-42');
  t.equal(await clerk.users.getCount(), 2);
  t.equal(
    await clerk.users.getCount({ emailAddress: ['grace@acme.dev'] }),
    1,
    'the count follows the filter',
  );
  const byEmail = await clerk.users.getUserList({ emailAddress: ['grace@acme.dev'] });
  t.same(
    byEmail.data.map((u) => u.id),
    [grace.id],
  );

  const updated = await clerk.users.updateUserMetadata(grace.id, {
    publicMetadata: { role: 'editor' },
    privateMetadata: { stripeCustomerId: 'cus_123' },
  });
  t.same(updated.publicMetadata, { role: 'editor' });
  const merged = await clerk.users.updateUserMetadata(grace.id, { publicMetadata: { onboarded: true } });
  t.same(
    merged.publicMetadata,
    { role: 'editor', onboarded: true },
    'metadata is merged, as Clerk merges it',
  );
  t.same((await clerk.users.getUser(grace.id)).privateMetadata, { stripeCustomerId: 'cus_123' });
  const renamed = await clerk.users.updateUser(grace.id, { firstName: 'Amazing Grace' });
  t.equal(renamed.firstName, 'Amazing Grace');

  t.same(await clerk.users.verifyPassword({ userId: grace.id, password: 'cobol-compiler-1959' }), {
    verified: true,
  });
  const wrong = await clerk.users.verifyPassword({ userId: grace.id, password: 'nope' }).catch((e) => e);
  t.ok(sdk.isClerkAPIResponseError(wrong), 'a wrong password is an API error');
  t.equal(wrong.status, 422);
  t.equal(wrong.errors[0].code, 'incorrect_password');

  // Organizations and memberships.
  const orgs = await clerk.organizations.getOrganizationList();
  t.same(
    orgs.data.map((o) => o.slug),
    ['acme'],
  );
  const labs = await clerk.organizations.createOrganization({ name: 'Acme Labs', createdBy: grace.id });
  t.match(labs.id, /^org_/);
  t.equal(labs.slug, 'acme-labs');
  t.equal(labs.membersCount, 1, 'the creator is its first member');
  const membership = await clerk.organizations.createOrganizationMembership({
    organizationId: labs.id,
    userId: ada.id,
    role: 'org:member',
  });
  t.equal(membership.role, 'org:member');
  t.equal(membership.publicUserData?.userId, ada.id);
  const members = await clerk.organizations.getOrganizationMembershipList({ organizationId: labs.id });
  t.same(
    members.data.map((m) => [m.publicUserData?.userId, m.role]).sort(),
    [
      [ada.id, 'org:member'],
      [grace.id, 'org:admin'],
    ].sort(),
  );
  const promoted = await clerk.organizations.updateOrganizationMembership({
    organizationId: labs.id,
    userId: ada.id,
    role: 'org:admin',
  });
  t.equal(promoted.role, 'org:admin');
  const adas = await clerk.users.getOrganizationMembershipList({ userId: ada.id });
  t.same(adas.data.map((m) => m.organization.slug).sort(), ['acme', 'acme-labs']);
  const invitation = await clerk.organizations.createOrganizationInvitation({
    organizationId: labs.id,
    emailAddress: 'linus@acme.dev',
    role: 'org:member',
  });
  t.equal(invitation.status, 'pending');
  const revoked = await clerk.organizations.revokeOrganizationInvitation({
    organizationId: labs.id,
    invitationId: invitation.id,
  });
  t.equal(revoked.status, 'revoked');
  await clerk.organizations.deleteOrganizationMembership({ organizationId: labs.id, userId: ada.id });
  t.equal((await clerk.organizations.getOrganization({ organizationId: labs.id })).membersCount, 1);

  // A signed-in user's session token, verified the ways an app verifies it.
  const session = await clerk.sessions.createSession({ userId: ada.id });
  t.equal(session.status, 'active');
  const { jwt } = await clerk.sessions.getToken(session.id);
  const request = new Request('http://app.test/dashboard', { headers: { authorization: `Bearer ${jwt}` } });
  const state = await clerk.authenticateRequest(request);
  t.ok(state.isAuthenticated, 'authenticateRequest accepts the token (JWKS fetched from the twin)');
  const auth = state.toAuth();
  t.equal(auth?.userId, ada.id);
  t.equal(auth?.sessionId, session.id);
  t.equal(auth?.orgSlug, 'acme', "the organization claims of the user's first membership");
  t.equal(auth?.orgRole, 'org:admin');
  const claims = await sdk.verifyToken(jwt, { jwtKey: env.CLERK_JWT_KEY });
  const long = await clerk.sessions.getToken(session.id, undefined, 3600);
  const longClaims = await sdk.verifyToken(long.jwt, { jwtKey: env.CLERK_JWT_KEY });
  t.equal(longClaims.exp - longClaims.iat, 3600, 'expires_in_seconds sets the lifetime');
  t.equal(claims.exp - claims.iat, 60, "Clerk's default lifetime");
  t.equal(claims.sub, ada.id, 'verifyToken with CLERK_JWT_KEY, no network');
  t.same((claims as { metadata?: unknown }).metadata, { plan: 'pro' });

  await clerk.sessions.revokeSession(session.id);
  t.equal((await clerk.sessions.getSession(session.id)).status, 'revoked');
  const noToken = await clerk.sessions.getToken(session.id).catch((e) => e);
  t.equal(noToken.status, 404, 'no token for a revoked session');
  const sessions = await clerk.sessions.getSessionList({ userId: ada.id });
  t.same(
    sessions.data.map((s) => s.id),
    [session.id],
  );

  const gone = await clerk.users.deleteUser(grace.id);
  // Clerk answers with a DeletedObject (the SDK's type says User).
  t.equal((gone as unknown as { deleted: boolean }).deleted, true);
  const missing = await clerk.users.getUser(grace.id).catch((e) => e);
  t.equal(missing.status, 404);
  const after = await clerk.users.getUserList();
  t.equal(after.totalCount, after.data.length, 'the count a list carries leaves the deleted user out');
  t.equal(after.totalCount, 1);
  t.equal(missing.errors[0].code, 'resource_not_found');
  return { ada, grace, labs, session, jwt };
}

t.test(
  'clerk twin: users, metadata, organizations, memberships and session tokens through @clerk/backend',
  async (t) => {
    const entry = await start(t);
    const env = entry.env_vars;
    t.equal(env.CLERK_API_URL, entry.base_url);
    t.match(env.CLERK_SECRET_KEY, /^sk_test_[\w-]{30,}$/);
    t.match(env.CLERK_PUBLISHABLE_KEY, /^pk_test_/);
    t.match(env.CLERK_JWT_KEY, /^-----BEGIN PUBLIC KEY-----/);
    const clerk = clerkClient(env);
    const before = checked.length;

    const { ada, grace, labs, session, jwt } = await clerkFlow(
      t,
      { clerk, verifyToken, isClerkAPIResponseError },
      env,
    );

    const results = checked.slice(before);
    t.ok(results.length >= 30, `${results.length} responses checked against Clerk's description`);
    t.same(
      results.filter((r) => !r.valid),
      [],
      "every response matches Clerk's description",
    );

    // The request log keeps the calls and hides the secret key, passwords and issued session tokens.
    const admin = new TwinAdminClient(entry.admin_url, 'admin');
    const entries = await admin.requests();
    const log = JSON.stringify(entries);
    t.match(log, /grace@acme\.dev/);
    t.notOk(log.includes(env.CLERK_SECRET_KEY!), 'the secret key is redacted');
    t.notOk(log.includes('cobol-compiler-1959'), 'passwords are redacted');
    t.notOk(log.includes(jwt), 'session tokens are redacted');
    t.notOk(
      JSON.stringify((await admin.state()).state).includes('cobol-compiler-1959'),
      'passwords are hashed at rest',
    );

    const changes = entries.map((e) => clerkTwin.describeChange!(e)).filter(Boolean);
    t.ok(changes.includes(`user ${grace.id} created (grace@acme.dev)`));
    t.ok(changes.includes(`metadata of user ${grace.id} updated`));
    t.ok(changes.includes(`organization Acme Labs created (${labs.id})`));
    t.ok(changes.includes(`user ${ada.id} added to organization ${labs.id} as org:member`));
    t.ok(changes.includes(`session ${session.id} revoked`));

    const summary = clerkTwin.summarize!((await admin.state()).state);
    const table = (title: string) => summary.tables.find((x) => x.title === title)!;
    t.same(
      table('Users').rows.map((r) => r[1]),
      ['ada@acme.dev'],
    );
    t.same(
      table('Organizations')
        .rows.map((r) => r[2])
        .sort(),
      ['acme', 'acme-labs'],
    );

    await admin.addFault({ rate_limit: true, count: 1 });
    const limited = await clerk.users.getUser(ada.id).catch((e) => e);
    t.equal(limited.status, 429);
    t.equal(limited.retryAfter, 10);
  },
);

t.test('clerk twin: a bad secret key is a 401 in Clerk’s error shape', async (t) => {
  const entry = await start(t);
  const bad = clerkClient(entry.env_vars, 'sk_test_notTheInstanceKey000000000000000');
  const error = await bad.users.getUserList().catch((e) => e);
  t.ok(isClerkAPIResponseError(error));
  t.equal(error.status, 401);
  t.equal(error.errors[0].code, 'clerk_key_invalid');
  t.match(error.errors[0].longMessage, /Secret Key is invalid/);
  const anonymous = await fetch(`${entry.base_url}/v1/users`);
  t.equal(anonymous.status, 401);
  t.match(await anonymous.json(), { errors: [{ code: 'authorization_header_format_invalid' }] });
  // Not an operation of the description: asked without the schema check.
  const unknown = await original(`${entry.base_url}/v1/nope`, {
    headers: { authorization: `Bearer ${entry.env_vars.CLERK_SECRET_KEY}` },
  });
  t.equal(unknown.status, 404);
  t.match(await unknown.json(), { errors: [{ code: 'resource_not_found' }] });
  const inspector = await fetch(`${entry.base_url}/`, {
    headers: { authorization: `Bearer ${entry.env_vars.CLERK_SECRET_KEY}` },
  });
  t.equal(inspector.status, 404, "the engine's HTML inspector is not served");
  await inspector.arrayBuffer();
  // A token signed by another instance does not verify here.
  const other = await start(t);
  const otherClerk = clerkClient(other.env_vars);
  const [user] = (await otherClerk.users.getUserList()).data;
  const session = await otherClerk.sessions.createSession({ userId: user!.id });
  const { jwt } = await otherClerk.sessions.getToken(session.id);
  await t.rejects(
    verifyToken(jwt, { jwtKey: entry.env_vars.CLERK_JWT_KEY }),
    'another sandbox’s token is refused',
  );
  await t.rejects(
    fetch(`${entry.base_url}/v1/users`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${entry.env_vars.CLERK_SECRET_KEY}`,
        'content-type': 'application/json',
      },
      body: '{',
    }).then(async (r) => {
      if (r.status !== 400) return;
      throw new Error(JSON.stringify(await r.json()));
    }),
    /request_body_invalid/,
    'a body that is not JSON is Clerk’s 400',
  );
});

t.test(
  'clerk twin: state and signing key survive a restart; reset returns to the seed; POST /seed adds',
  async (t) => {
    const dataDir = await tempDir(t);
    const first = new TwinHost({ factories: twinFactories, dataDir, publicHost: '127.0.0.1' });
    const before = (await first.start('sb', ['clerk'], { adminToken: 'admin', seeds: { clerk: seed } }))
      .clerk!;
    const kept = await clerkClient(before.env_vars).users.createUser({ emailAddress: ['kept@acme.dev'] });
    const [ada] = (await clerkClient(before.env_vars).users.getUserList({ emailAddress: ['ada@acme.dev'] }))
      .data;
    const session = await clerkClient(before.env_vars).sessions.createSession({ userId: ada!.id });
    const { jwt } = await clerkClient(before.env_vars).sessions.getToken(session.id);
    await first.close();

    const second = new TwinHost({ factories: twinFactories, dataDir, publicHost: '127.0.0.1' });
    t.teardown(() => second.close());
    await second.restore(['sb']);
    const after = second.get('sb')!.clerk!;
    t.equal(after.env_vars.CLERK_SECRET_KEY, before.env_vars.CLERK_SECRET_KEY, 'the secret key survives');
    t.equal(after.env_vars.CLERK_JWT_KEY, before.env_vars.CLERK_JWT_KEY, 'the signing key survives');
    const clerk = clerkClient(after.env_vars);
    t.equal((await clerk.users.getUser(kept.id)).primaryEmailAddress?.emailAddress, 'kept@acme.dev');
    const state = await clerk.authenticateRequest(
      new Request('http://app.test/', { headers: { authorization: `Bearer ${jwt}` } }),
    );
    t.ok(state.isAuthenticated, 'a token issued before the restart still verifies');
    t.same(await clerk.users.verifyPassword({ userId: ada!.id, password: 'analytical-engine' }), {
      verified: true,
    });

    const admin = new TwinAdminClient(after.admin_url, 'admin');
    await admin.seed({
      users: [{ email: 'linus@acme.dev' }],
      organizations: [{ name: 'Kernel', members: [{ email: 'linus@acme.dev' }] }],
    });
    const linus = (await clerk.users.getUserList({ emailAddress: ['linus@acme.dev'] })).data[0]!;
    t.equal(linus.firstName, null, 'no invented names');
    const noPassword = await clerk.users
      .verifyPassword({ userId: linus.id, password: 'anything-at-all' })
      .catch((e) => e);
    t.equal(noPassword.status, 400, 'a user without a password: 400, as Clerk documents');
    t.same(
      (await clerk.users.getOrganizationMembershipList({ userId: linus.id })).data.map((m) => [
        m.organization.slug,
        m.role,
      ]),
      [['kernel', 'org:member']],
    );
    await admin.reset();
    t.same(
      (await clerk.users.getUserList()).data.map((u) => u.primaryEmailAddress?.emailAddress),
      ['ada@acme.dev'],
      'reset: only the start seed',
    );
    t.same(
      (await clerk.organizations.getOrganizationList()).data.map((o) => o.slug),
      ['acme'],
    );
    await t.rejects(admin.seed({ users: [{ email: 'not-an-email' }] }), /clerk seed: "users\[0\]\.email"/);
    await t.rejects(
      admin.seed({ organizations: [{ slug: 'x' }] }),
      /clerk seed: "organizations\[0\]\.name" is required/,
    );
  },
);

t.test('clerk twin: its presets seed what they promise', async (t) => {
  const presets = PRESETS.filter((p) => p.twins.includes('clerk'));
  t.ok(presets.length >= 1, 'at least one preset uses clerk');
  for (const preset of presets) {
    const entry = await start(t, preset.seed.clerk);
    t.same(await countsFor('clerk', entry, preset.seed.clerk), preset.promises.clerk, preset.id);
  }
});

t.test('clerk twin: the same flow with @clerk/backend 2', async (t) => {
  const entry = await start(t);
  const env = entry.env_vars;
  twinUrls.add(env.CLERK_API_URL!);
  const v2 = await import('clerk-backend-v2');
  // Version 2's errors module has no isClerkAPIResponseError: apps import it from @clerk/shared (3.x for it).
  const { isClerkAPIResponseError: isV2Error } = createRequire(import.meta.resolve('clerk-backend-v2'))(
    '@clerk/shared/error',
  ) as { isClerkAPIResponseError: (e: unknown) => boolean };
  const before = checked.length;
  // Version 2 has these calls too; its declarations are a copy of their own, which TypeScript keeps apart.
  const sdk = {
    clerk: v2.createClerkClient({
      secretKey: env.CLERK_SECRET_KEY,
      publishableKey: env.CLERK_PUBLISHABLE_KEY,
      apiUrl: env.CLERK_API_URL,
    }),
    verifyToken: v2.verifyToken,
    isClerkAPIResponseError: isV2Error,
  } as unknown as ClerkSdk;
  const { ada } = await clerkFlow(t, sdk, env);
  t.match(ada.id, /^user_/);
  const results = checked.slice(before);
  t.ok(
    results.length >= 30,
    `${results.length} responses to @clerk/backend 2 checked against Clerk's description`,
  );
  t.same(
    results.filter((r) => !r.valid),
    [],
  );
});
