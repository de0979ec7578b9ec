import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { ValidatorCache } from './vendor-schema-cache.ts';
import { checkResponse, forgetVendorSchemas, type CheckInput } from './vendor-schema.ts';

// Answers that pass and answers that fail, of three dialects: OpenAPI 3 with `nullable` (Stripe, GitHub)
// and Swagger 2 with Slack's unions, and formats (GitHub's `uri`, `date-time`).
const INPUTS: [string, CheckInput][] = [
  [
    'stripe',
    {
      method: 'GET',
      path: '/v1/customers/cus_1',
      status: 404,
      body: { error: { type: 'invalid_request_error', message: 'No such customer' } },
    },
  ],
  [
    'stripe',
    { method: 'GET', path: '/v1/customers/cus_1', status: 404, body: { error: { type: 5, message: null } } },
  ],
  [
    'stripe',
    {
      method: 'GET',
      path: '/v1/customers/cus_1',
      status: 200,
      body: { id: 'cus_1', object: 'customer', created: 'yesterday', livemode: 'no' },
    },
  ],
  [
    'github',
    {
      method: 'GET',
      path: '/repos/octo/shop',
      status: 404,
      body: { message: 'Not Found', documentation_url: 'https://docs.github.com/rest' },
    },
  ],
  [
    'github',
    {
      method: 'GET',
      path: '/repos/octo/shop',
      status: 200,
      body: { id: 'one', name: 3, html_url: 'not a url', created_at: 'never' },
    },
  ],
  [
    'slack',
    {
      method: 'POST',
      path: '/api/chat.postMessage',
      status: 200,
      body: { ok: false, error: 'channel_not_found' },
    },
  ],
  [
    'slack',
    { method: 'POST', path: '/api/chat.postMessage', status: 200, body: { ok: true, channel: 7, ts: null } },
  ],
];

t.test(
  'a validator loaded from the cache judges as the one compiled, and each is compiled once',
  async (t) => {
    const dir = await mkdtemp(join(tmpdir(), 'twinbox-vendor-schema-cache-'));
    const before = { dir: process.env.VENDOR_SCHEMA_CACHE_DIR, off: process.env.VENDOR_SCHEMA_CACHE };
    process.env.VENDOR_SCHEMA_CACHE_DIR = dir;
    delete process.env.VENDOR_SCHEMA_CACHE;
    t.teardown(async () => {
      for (const [name, value] of [
        ['VENDOR_SCHEMA_CACHE_DIR', before.dir],
        ['VENDOR_SCHEMA_CACHE', before.off],
      ] as const) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
      forgetVendorSchemas();
      await rm(dir, { recursive: true, force: true });
    });

    forgetVendorSchemas();
    const counts = { ...ValidatorCache.counts };
    const compiled = INPUTS.map(([twin, input]) => checkResponse(twin, input));
    t.same(
      compiled.map((r) => r.valid),
      [true, false, false, true, false, true, false],
      'the answers are judged (the failing ones fail)',
    );
    t.ok(compiled[2]!.errors.length >= 2, 'a wrong customer has its errors listed');
    t.equal(ValidatorCache.counts.loaded, counts.loaded, 'nothing to load from an empty cache');
    t.equal(ValidatorCache.counts.stored - counts.stored, 3, 'a module of validators stored per twin');
    t.same((await readdir(dir)).sort(), ['github', 'slack', 'stripe'], 'a folder per twin');

    // As the next test process: the same answers, from validators it did not compile.
    forgetVendorSchemas();
    const again = { ...ValidatorCache.counts };
    const loaded = INPUTS.map(([twin, input]) => checkResponse(twin, input));
    t.same(loaded, compiled, 'the same verdicts and the same errors');
    t.equal(ValidatorCache.counts.loaded - again.loaded, 3, 'the validators came from the cache');
    t.equal(ValidatorCache.counts.stored, again.stored, 'and none was compiled again');

    // Switched off: compiled, and the same.
    process.env.VENDOR_SCHEMA_CACHE = 'off';
    forgetVendorSchemas();
    const off = { ...ValidatorCache.counts };
    t.same(
      INPUTS.map(([twin, input]) => checkResponse(twin, input)),
      compiled,
    );
    t.same(ValidatorCache.counts, off, 'VENDOR_SCHEMA_CACHE=off neither loads nor stores');
  },
);

t.test('another description, or other code compiling it, is another folder', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'twinbox-vendor-schema-cache-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  const a = new ValidatorCache('stripe', ['{"a":1}', '{}'], {}, dir);
  const b = new ValidatorCache('stripe', ['{"a":2}', '{}'], {}, dir);
  const c = new ValidatorCache('stripe', ['{"a":1}', '{}'], {}, dir);
  t.not(a.dir, b.dir, 'a changed description');
  t.equal(a.dir, c.dir, 'the same description');
  t.match(new ValidatorCache('stripe@2022-11-15', ['x'], {}, dir).dir, /stripe@2022-11-15/);
});
