/**
 * MongoDB publishes no Node client for the Atlas Administration API or the Data API, so these tests use
 * the flows Atlas documents with a standard HTTP client (fetch): a service account's client-credentials
 * token, then versioned Admin API v2 calls with it; Data API actions with the `api-key` header.
 */
import t from 'tap';
import { TwinAdminClient } from '../../server/twins/kit/admin-client.ts';
import { TwinHost } from '../../server/twins/runtime/host.ts';
import { PRESETS } from '../../server/scenarios/presets.ts';
import { mongoatlasTwin } from '../../server/twins/vendors/mongoatlas/twin.ts';
import { tempDir, tempHost } from './helpers.ts';
import { vendorFetch } from './vendor-schema.ts';
import { countsFor } from '../scenarios/sdk-counts.ts';
import { twinFactories } from '../../server/twins/registry.ts';

const seed = {
  projects: [{ name: 'Acme' }],
  clusters: [{ name: 'AcmeCluster', project: 'Acme', region: 'EU_WEST_1' }],
  database_users: [{ username: 'app', project: 'Acme' }],
  databases: [{ cluster: 'AcmeCluster', name: 'shop', collections: ['orders'] }],
  documents: [
    { cluster: 'AcmeCluster', database: 'shop', collection: 'orders', document: { sku: 'A1', qty: 2 } },
  ],
};

const ACCEPT = 'application/vnd.atlas.2023-01-01+json';

/** The service account's access token, as Atlas documents getting one (client credentials, HTTP Basic). */
async function accessToken(env: Record<string, string>, secret = env.MONGODB_ATLAS_CLIENT_SECRET!) {
  const res = await fetch(`${env.MONGODB_ATLAS_BASE_URL}/api/oauth/token`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`${env.MONGODB_ATLAS_CLIENT_ID}:${secret}`).toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
      accept: 'application/json',
    },
    body: 'grant_type=client_credentials',
  });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** Admin API answers are checked against Atlas's vendored description before the test reads them. */
const atlasFetch = vendorFetch('mongoatlas');

/** An Admin API v2 client on the twin's variables. */
async function atlas(env: Record<string, string>) {
  const { body } = await accessToken(env);
  const token = String(body.access_token);
  const call = async (method: string, path: string, payload?: unknown) => {
    const res = await atlasFetch(`${env.MONGODB_ATLAS_BASE_URL}/api/atlas/v2${path}`, {
      method,
      headers: {
        authorization: `Bearer ${token}`,
        accept: ACCEPT,
        ...(payload !== undefined ? { 'content-type': ACCEPT } : {}),
      },
      body: payload !== undefined ? JSON.stringify(payload) : undefined,
    });
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : undefined) as any };
  };
  return { token, call };
}

/** A Data API action with the twin's key. */
async function dataApi(
  env: Record<string, string>,
  action: string,
  payload: unknown,
  key = env.MONGODB_DATA_API_KEY!,
) {
  const res = await fetch(`${env.MONGODB_DATA_API_URL}/action/${action}`, {
    method: 'POST',
    headers: { 'api-key': key, 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify(payload),
  });
  return { status: res.status, body: (await res.json()) as any };
}

t.test('mongoatlas twin: service-account token, Admin API v2 and the Data API', async (t) => {
  const { host } = await tempHost(t);
  const entry = (await host.start('sb', ['mongoatlas'], { adminToken: 'admin', seeds: { mongoatlas: seed } }))
    .mongoatlas!;
  const env = entry.env_vars;
  t.equal(env.MONGODB_ATLAS_BASE_URL, entry.base_url);
  t.equal(env.MONGODB_DATA_API_URL, `${entry.base_url}/app/data-api/v1`);
  t.match(env.MONGODB_ATLAS_CLIENT_ID, /^mdb_sa_id_/);

  const token = await accessToken(env);
  t.equal(token.status, 200);
  t.match(token.body, { token_type: 'Bearer', expires_in: 3600, access_token: /^eyJ/ });
  const { call, token: bearer } = await atlas(env);

  const groups = await call('GET', '/groups');
  t.equal(groups.status, 200);
  t.same(groups.body.results.map((g: { name: string }) => g.name).sort(), ['Acme', 'Project0']);
  const acme = groups.body.results.find((g: { name: string }) => g.name === 'Acme');
  const clusters = await call('GET', `/groups/${acme.id}/clusters`);
  t.same(
    clusters.body.results.map((c: { name: string; providerSettings: { regionName: string } }) => [
      c.name,
      c.providerSettings.regionName,
    ]),
    [['AcmeCluster', 'EU_WEST_1']],
  );
  const created = await call('POST', `/groups/${acme.id}/clusters`, {
    name: 'Analytics',
    clusterType: 'REPLICASET',
    providerSettings: { providerName: 'AWS', instanceSizeName: 'M10', regionName: 'US_EAST_1' },
  });
  t.equal(created.status, 201);
  t.equal(created.body.name, 'Analytics');
  t.equal((await call('GET', `/groups/${acme.id}/clusters/Analytics`)).body.groupId, acme.id);
  const user = await call('POST', `/groups/${acme.id}/databaseUsers`, {
    username: 'reporter',
    password: 'hunter2-hunter2',
    databaseName: 'admin',
    roles: [{ databaseName: 'shop', roleName: 'read' }],
  });
  t.equal(user.status, 201);
  t.same(
    (await call('GET', `/groups/${acme.id}/databaseUsers`)).body.results
      .map((u: { username: string }) => u.username)
      .sort(),
    ['app', 'reporter'],
  );
  // Create One Project is 200 on Atlas (its description lists no 201; atlasFetch checks the answer).
  const project = await call('POST', '/groups', { name: 'Reports', orgId: acme.orgId });
  t.equal(project.status, 200, 'a project is created with 200, as on Atlas');
  t.equal(project.body.name, 'Reports');
  t.ok(
    (await call('GET', '/groups')).body.results.some((g: { id: string }) => g.id === project.body.id),
    'and listed',
  );
  const missing = await call('GET', `/groups/${acme.id}/clusters/Nope`);
  t.equal(missing.status, 404);
  t.match(missing.body, { error: 404, errorCode: 'CLUSTER_NOT_FOUND' });

  const found = await dataApi(env, 'find', {
    dataSource: 'AcmeCluster',
    database: 'shop',
    collection: 'orders',
  });
  t.equal(found.status, 200);
  t.match(found.body.documents, [{ sku: 'A1', qty: 2 }], 'the seeded document');
  const inserted = await dataApi(env, 'insertOne', {
    dataSource: 'AcmeCluster',
    database: 'shop',
    collection: 'orders',
    document: { sku: 'B2', qty: 1 },
  });
  t.equal(inserted.status, 201);
  t.ok(inserted.body.insertedId);
  const updated = await dataApi(env, 'updateOne', {
    dataSource: 'AcmeCluster',
    database: 'shop',
    collection: 'orders',
    filter: { sku: 'B2' },
    update: { $set: { qty: 5 } },
  });
  t.match(updated.body, { matchedCount: 1, modifiedCount: 1 });
  const one = await dataApi(env, 'findOne', {
    dataSource: 'AcmeCluster',
    database: 'shop',
    collection: 'orders',
    filter: { sku: 'B2' },
  });
  t.equal(one.body.document.qty, 5);

  // The log keeps the calls and hides the credentials and the issued token.
  const admin = new TwinAdminClient(entry.admin_url, 'admin');
  const log = JSON.stringify(await admin.requests());
  t.match(log, /Analytics/);
  t.match(log, /B2/);
  for (const secret of [
    env.MONGODB_ATLAS_CLIENT_SECRET!,
    env.MONGODB_DATA_API_KEY!,
    bearer,
    'hunter2-hunter2',
  ])
    t.notOk(log.includes(secret), 'a secret is not in the log');

  // The timeline's lines for the calls that changed something.
  const changes = (await admin.requests()).map((e) => mongoatlasTwin.describeChange!(e)).filter(Boolean);
  t.ok(changes.includes('cluster Analytics created'));
  t.ok(changes.includes('database user reporter created'));
  t.ok(changes.includes('1 document inserted into shop.orders'));
  t.ok(changes.includes('1 document updated in shop.orders'));

  // The dashboard's summary.
  const summary = mongoatlasTwin.summarize!((await admin.state()).state);
  const table = (title: string) => summary.tables.find((x) => x.title === title)!;
  t.ok(table('Clusters').rows.some((r) => r[0] === 'Analytics' && r[1] === 'Acme'));
  t.ok(table('Database users').rows.some((r) => r[0] === 'reporter' && r[1] === 'Acme'));
  t.ok(
    table('Collections').rows.some((r) => r.join('/') === 'AcmeCluster/shop/orders/2'),
    'two orders in shop.orders',
  );
  t.notOk(JSON.stringify(summary).includes('hunter2'));

  await admin.addFault({ rate_limit: true, count: 1 });
  const limited = await call('GET', '/groups');
  t.equal(limited.status, 429);
  t.match(limited.body, { error: 429, errorCode: 'RATE_LIMITED' });
});

t.test('mongoatlas twin: wrong, missing and revoked credentials fail as Atlas fails them', async (t) => {
  const { host } = await tempHost(t);
  const entry = (await host.start('sb', ['mongoatlas'], { adminToken: 'admin', seeds: { mongoatlas: seed } }))
    .mongoatlas!;
  const env = entry.env_vars;
  const wrong = await accessToken(env, 'mdb_sa_sk_wrong');
  t.equal(wrong.status, 401);
  t.match(wrong.body, { error: 'invalid_client' });

  const anonymous = await fetch(`${env.MONGODB_ATLAS_BASE_URL}/api/atlas/v2/groups`, {
    headers: { accept: ACCEPT },
  });
  t.equal(anonymous.status, 401);
  t.match(await anonymous.json(), { error: 401, errorCode: 'USER_UNAUTHORIZED' });
  const bogus = await fetch(`${env.MONGODB_ATLAS_BASE_URL}/api/atlas/v2/groups`, {
    headers: { accept: ACCEPT, authorization: 'Bearer eyJnotatoken' },
  });
  t.equal(bogus.status, 401);

  const { token, call } = await atlas(env);
  t.equal((await call('GET', '/groups')).status, 200);
  const revoke = await fetch(`${env.MONGODB_ATLAS_BASE_URL}/api/oauth/revoke`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`${env.MONGODB_ATLAS_CLIENT_ID}:${env.MONGODB_ATLAS_CLIENT_SECRET}`).toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: new URLSearchParams({ token }).toString(),
  });
  t.equal(revoke.status, 200);
  t.equal((await call('GET', '/groups')).status, 401, 'a revoked token fails');

  const badKey = await dataApi(
    env,
    'find',
    { dataSource: 'AcmeCluster', database: 'shop', collection: 'orders' },
    'nope',
  );
  t.equal(badKey.status, 401);
  t.match(badKey.body, { error_code: 'InvalidSession' });
  // Ill-typed bodies are Atlas's 400, not the engine's 500.
  for (const body of [
    null,
    [],
    { dataSource: 'AcmeCluster', database: 'shop', collection: 'orders', pipeline: 'x' },
    { dataSource: 'AcmeCluster', database: 'shop', collection: 'orders', documents: ['x'] },
    { dataSource: 'AcmeCluster', database: 'shop', collection: 'orders', filter: 'x' },
    { dataSource: 'AcmeCluster', database: 'shop', collection: 'orders', limit: -1 },
  ]) {
    const action =
      body && 'pipeline' in body ? 'aggregate' : body && 'documents' in body ? 'insertMany' : 'find';
    const bad = await dataApi(env, action, body);
    t.equal(bad.status, 400, `${action} ${JSON.stringify(body)}`);
    t.match(bad.body, { error: 400, errorCode: 'INVALID_PARAMETER', detail: /./ });
  }
  const nullProject = await (await atlas(env)).call('POST', '/groups', null);
  t.equal(nullProject.status, 400);
  t.equal(
    (await dataApi(env, 'find', { dataSource: 'AcmeCluster', database: 'shop', collection: 'orders' })).body
      .documents.length,
    1,
    'nothing was inserted',
  );
  const unknownRoute = await fetch(`${entry.base_url}/nope`);
  t.equal(unknownRoute.status, 401, 'credentials are checked before the route');
  const fresh = await atlas(env);
  const notFound = await fetch(`${entry.base_url}/api/atlas/v2/nope/deeper/still`, {
    headers: { authorization: `Bearer ${fresh.token}`, accept: ACCEPT },
  });
  t.equal(notFound.status, 404);
  t.match(await notFound.json(), { error: 404 });
});

t.test('mongoatlas twin: state survives a restart; reset returns to the seed; POST /seed adds', async (t) => {
  const dataDir = await tempDir(t);
  const first = new TwinHost({ factories: twinFactories, dataDir, publicHost: '127.0.0.1' });
  const before = (
    await first.start('sb', ['mongoatlas'], { adminToken: 'admin', seeds: { mongoatlas: seed } })
  ).mongoatlas!;
  const { token } = await atlas(before.env_vars);
  await dataApi(before.env_vars, 'insertOne', {
    dataSource: 'AcmeCluster',
    database: 'shop',
    collection: 'orders',
    document: { sku: 'kept' },
  });
  await first.close();

  const second = new TwinHost({ factories: twinFactories, dataDir, publicHost: '127.0.0.1' });
  t.teardown(() => second.close());
  await second.restore(['sb']);
  const after = second.get('sb')!.mongoatlas!;
  const env = after.env_vars;
  t.equal(
    env.MONGODB_ATLAS_CLIENT_SECRET,
    before.env_vars.MONGODB_ATLAS_CLIENT_SECRET,
    'credentials survive',
  );
  const stillValid = await fetch(`${env.MONGODB_ATLAS_BASE_URL}/api/atlas/v2/groups`, {
    headers: { authorization: `Bearer ${token}`, accept: ACCEPT },
  });
  t.equal(stillValid.status, 200, 'an issued token survives');
  const q = { dataSource: 'AcmeCluster', database: 'shop', collection: 'orders' };
  t.same((await dataApi(env, 'find', q)).body.documents.map((d: { sku: string }) => d.sku).sort(), [
    'A1',
    'kept',
  ]);

  const admin = new TwinAdminClient(after.admin_url, 'admin');
  await admin.seed({ projects: [{ name: 'Later' }] });
  const { call } = await atlas(env);
  t.ok((await call('GET', '/groups')).body.results.some((g: { name: string }) => g.name === 'Later'));
  await admin.reset();
  t.same(
    (await dataApi(env, 'find', q)).body.documents.map((d: { sku: string }) => d.sku),
    ['A1'],
    'reset: only the start seed',
  );
  t.same((await call('GET', '/groups')).body.results.map((g: { name: string }) => g.name).sort(), [
    'Acme',
    'Project0',
  ]);
  await t.rejects(
    admin.seed({ clusters: [{ name: 'bad name!', project: 'Acme' }] }),
    /mongoatlas seed: "clusters\[0\]\.name"/,
  );
  await t.rejects(
    admin.seed({ documents: [{ cluster: 'Ghost', database: 'x', collection: 'y', document: {} }] }),
    /names no cluster/,
  );
});

t.test('mongoatlas twin: its presets seed what they promise', async (t) => {
  const presets = PRESETS.filter((p) => p.twins.includes('mongoatlas'));
  t.ok(presets.length >= 1, 'at least one preset uses mongoatlas');
  for (const preset of presets) {
    const { host } = await tempHost(t);
    const entry = (
      await host.start(preset.id, ['mongoatlas'], {
        adminToken: 'admin',
        seeds: { mongoatlas: preset.seed.mongoatlas },
      })
    ).mongoatlas!;
    t.same(
      await countsFor('mongoatlas', entry, preset.seed.mongoatlas),
      preset.promises.mongoatlas,
      preset.id,
    );
  }
});

// The twin keeps a GET's finished answer while the engine's store is unchanged (engine/kept-answers.ts):
// each kind of write in turn must be seen by the very next read of the same request.
t.test('mongoatlas twin: a read after any write sees the write', async (t) => {
  const { host } = await tempHost(t);
  const entry = (await host.start('sb', ['mongoatlas'], { adminToken: 'admin', seeds: { mongoatlas: seed } }))
    .mongoatlas!;
  const env = entry.env_vars;
  const { call } = await atlas(env);
  const names = async (path = '/groups') =>
    (await call('GET', path)).body.results.map((g: { name: string }) => g.name).sort();
  t.same(await names(), ['Acme', 'Project0']);
  t.same(await names(), ['Acme', 'Project0'], 'the same read again');
  const acme = (await call('GET', '/groups')).body.results.find((g: { name: string }) => g.name === 'Acme');

  const clusters = `/groups/${acme.id}/clusters`;
  t.same(await names(clusters), ['AcmeCluster']);
  const cluster = await call('POST', clusters, {
    name: 'Analytics',
    clusterType: 'REPLICASET',
    providerSettings: { providerName: 'AWS', instanceSizeName: 'M10', regionName: 'US_EAST_1' },
  });
  t.equal(cluster.status, 201);
  t.same(await names(clusters), ['AcmeCluster', 'Analytics'], 'a new cluster is listed at once');
  const users = `/groups/${acme.id}/databaseUsers`;
  const usernames = async () =>
    (await call('GET', users)).body.results.map((u: { username: string }) => u.username).sort();
  t.same(await usernames(), ['app']);
  const user = await call('POST', users, {
    username: 'reporter',
    password: 'hunter2-hunter2',
    databaseName: 'admin',
    roles: [{ databaseName: 'shop', roleName: 'read' }],
  });
  t.equal(user.status, 201);
  t.same(await usernames(), ['app', 'reporter'], 'a new database user is listed at once');

  const admin = new TwinAdminClient(entry.admin_url, 'admin');
  await admin.seed({ projects: [{ name: 'Seeded' }] });
  t.same(await names(), ['Acme', 'Project0', 'Seeded'], 'a seed through the admin API is seen');
  await admin.reset();
  t.same(await names(), ['Acme', 'Project0'], 'and a reset');
  const acmeNow = (await call('GET', '/groups')).body.results.find(
    (g: { name: string }) => g.name === 'Acme',
  );
  t.same(await names(`/groups/${acmeNow.id}/clusters`), ['AcmeCluster'], 'the reset dropped the new cluster');
});
