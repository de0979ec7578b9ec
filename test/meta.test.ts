import t from 'tap';
import { createCatalog } from '../server/twins/catalog.ts';
import { call, createUser, startTestTwinbox } from './helpers/twinbox.ts';
import { readVendorSchemaJson, SHARED_VENDOR_SCHEMA_TWINS } from './twins/vendor-schema-dir.ts';

t.test('GET /twins lists the catalog, and needs a token', async (t) => {
  const catalog = createCatalog([{ name: 'stripe', description: 'Stripe', env_vars: ['STRIPE_SECRET_KEY'] }]);
  const tb = await startTestTwinbox(t, {}, { catalog });
  const user = await createUser(tb);
  const res = await call(tb, { url: '/twins', token: user.key });
  t.equal(res.status, 200);
  t.same(res.body, {
    twins: [
      {
        name: 'stripe',
        description: 'Stripe',
        env_vars: ['STRIPE_SECRET_KEY'],
        hosts: [],
        operations: [],
        schema_source: null,
      },
    ],
  });
  t.equal((await call(tb, { url: '/twins' })).status, 401);
});

t.test('GET /twins says what each twin supports, from its vendored API description', async (t) => {
  const tb = await startTestTwinbox(t);
  const user = await createUser(tb);
  const res = await call(tb, { url: '/twins', token: user.key });
  t.equal(res.status, 200);
  const byName = new Map(
    (res.body.twins as Array<{ name: string; operations: string[]; schema_source: unknown }>).map((e) => [
      e.name,
      e,
    ]),
  );
  t.ok(byName.size >= 14, `the catalog lists ${byName.size} twins (issue 13: at least 14)`);
  // Each twin names the vendor hosts that reach it inside a sandbox (docs/twins.md).
  for (const entry of byName.values())
    t.ok((entry as { hosts?: string[] }).hosts?.length, `${entry.name} names its vendor's host names`);
  t.same((byName.get('stripe') as { hosts?: string[] }).hosts, ['api.stripe.com', 'files.stripe.com']);
  // The committed descriptions' source.json, and for those from a fetched repository the copy in
  // ../shared/vendor-schemas (which the shipped catalog.json of the twin must agree with).
  for (const name of ['github', 'stripe', 'vercel', 'apple', ...SHARED_VENDOR_SCHEMA_TWINS]) {
    const entry = byName.get(name);
    const source = readVendorSchemaJson<{ operations: string[]; title: string; url?: string }>(
      name,
      'source.json',
    );
    t.same(entry?.operations, source.operations, `${name}: the operations of its source.json`);
    t.match(
      entry?.schema_source,
      { name: source.title, url: source.url ?? null },
      `${name}: its schema source`,
    );
  }
  t.ok(byName.get('resend')?.operations.includes('POST /emails'), 'Resend says it sends email');
  t.ok(byName.get('clerk')?.operations.includes('POST /users'), 'Clerk says it creates users');
  t.match(byName.get('twilio')?.schema_source, { version: 'd50069b44ea8cd23141385bdb6db48f16ff75bb5' });
  for (const entry of byName.values()) {
    if (!entry.operations.length)
      t.equal(entry.schema_source, null, `${entry.name}: no description, no source`);
  }
});

t.test('GET /openapi.json is an OpenAPI 3 document generated from the routes', async (t) => {
  const tb = await startTestTwinbox(t);
  const res = await call(tb, { url: '/openapi.json' });
  t.equal(res.status, 200);
  t.equal(res.body.openapi, '3.0.3');
  const paths = Object.keys(res.body.paths);
  for (const path of [
    '/sandboxes',
    '/sandboxes/{sandbox_id}',
    '/twins',
    '/me',
    '/api-keys',
    '/auth/email/signup',
  ]) {
    t.ok(paths.includes(path), path);
  }
  t.notOk(
    paths.some((path) => path.startsWith('/admin') || path === '/healthz'),
    'operator and untagged routes are left out',
  );
  const create = res.body.paths['/sandboxes'].post;
  t.same(create.requestBody.content['application/json'].schema.required, ['repo']);
  t.ok(create.requestBody.content['application/json'].schema.properties.ttl_minutes);
  t.same(Object.keys(create.responses).sort(), ['201', '400', '401', '403', '413', '415']);
  t.ok(create.responses['403'].content['application/json'].schema.properties.detail);
  t.same(res.body.paths['/sandboxes/{sandbox_id}'].get.parameters[0].in, 'path');
  t.same(res.body.security, [{ bearer: [] }]);
});

t.test('operator routes appear in the document only when enabled', async (t) => {
  const tb = await startTestTwinbox(t, { TWINBOX_ADMIN_TOKEN: 'a'.repeat(40) });
  const res = await call(tb, { url: '/openapi.json' });
  t.ok(res.body.paths['/admin/accounts'].post);
});

t.test('unknown routes are a 404 with detail', async (t) => {
  const tb = await startTestTwinbox(t);
  const user = await createUser(tb);
  const res = await call(tb, { url: '/nope', token: user.key });
  t.equal(res.status, 404);
  t.ok(res.body.detail);
  t.equal((await call(tb, { url: '/healthz' })).status, 200);
});
