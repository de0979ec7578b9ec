import t from 'tap';
import { ACTIVE_STATUSES } from '../../server/sandboxes/states.ts';
import { COLLECTIONS } from '../../server/store/collections.ts';
import { createCatalog } from '../../server/twins/catalog.ts';
import { call, createSandbox, createUser, startTestTwinbox } from '../helpers/twinbox.ts';

// A catalog for the rules that depend on it; the shipped catalog is tested with the twins.
const catalog = createCatalog([
  { name: 'github', description: 'GitHub', env_vars: ['GITHUB_TOKEN'] },
  { name: 'stripe', description: 'Stripe', env_vars: ['STRIPE_SECRET_KEY'] },
]);

t.test('a valid request: 201, Location, the spec queued body plus our fields', async (t) => {
  const tb = await startTestTwinbox(t, {}, { catalog });
  const user = await createUser(tb);
  const before = Date.now();
  const res = await createSandbox(tb, user.key, {
    repo: 'octo-org/my.app_1',
    branch: 'feature/login',
    twins: ['github', 'stripe'],
    scenario_prompt: '3 customers',
    ttl_minutes: 45,
    env: { FEATURE_X: 'on', EMPTY: '' },
  });
  t.equal(res.status, 201);
  t.equal(res.headers.location, `/sandboxes/${res.body.sandbox_id}`);
  t.match(res.body.sandbox_id, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  t.equal(res.body.status, 'queued');
  t.equal(res.body.app_url, null);
  t.same(res.body.twins, {});
  t.same(res.body.env_vars, {});
  t.equal(res.body.repo, 'octo-org/my.app_1');
  t.equal(res.body.branch, 'feature/login');
  t.equal(res.body.pr_url, null);
  t.equal(res.body.ttl_minutes, 45);
  t.match(res.body.twin_admin_token, /^twinadm_[A-Za-z0-9_-]{32}$/);
  const created = Date.parse(res.body.created_at);
  t.ok(created >= before - 1 && created <= Date.now());
  t.equal(Date.parse(res.body.expires_at) - created, 45 * 60_000);
  t.match(res.body.created_at, /Z$/);
});

t.test('ttl_minutes defaults to 60', async (t) => {
  const tb = await startTestTwinbox(t);
  const user = await createUser(tb);
  const res = await createSandbox(tb, user.key, { repo: 'a/b', branch: 'main' });
  t.equal(res.status, 201);
  t.equal(res.body.ttl_minutes, 60);
});

t.test('a pull request URL of the same repo is accepted instead of a branch', async (t) => {
  const tb = await startTestTwinbox(t);
  const user = await createUser(tb);
  const res = await createSandbox(tb, user.key, {
    repo: 'Octo/App',
    pr_url: 'https://github.com/octo/app/pull/42',
  });
  t.equal(res.status, 201);
  t.equal(res.body.pr_url, 'https://github.com/octo/app/pull/42');
  t.equal(res.body.branch, null);
});

t.test('pull request URLs of a configured GitHub (Enterprise or the twin) are accepted', async (t) => {
  const tb = await startTestTwinbox(t, { GITHUB_OAUTH_URL: 'http://127.0.0.1:4567' });
  const user = await createUser(tb);
  const res = await createSandbox(tb, user.key, { repo: 'o/r', pr_url: 'http://127.0.0.1:4567/o/r/pull/7' });
  t.equal(res.status, 201);
});

t.test('every invalid request is a 400 whose detail says what is wrong', async (t) => {
  const tb = await startTestTwinbox(t, {}, { catalog });
  const user = await createUser(tb);
  const cases: [string, unknown, RegExp][] = [
    ['neither branch nor pr_url', { repo: 'a/b' }, /"branch" or "pr_url"/],
    ['no repo', { branch: 'main' }, /"repo" is required/],
    ['repo without owner', { repo: 'just-a-name', branch: 'main' }, /owner\/repo/],
    ['repo with three parts', { repo: 'a/b/c', branch: 'main' }, /owner\/repo/],
    ['owner starting with a hyphen', { repo: '-a/b', branch: 'main' }, /owner\/repo/],
    ['owner with a double hyphen', { repo: 'a--b/c', branch: 'main' }, /owner\/repo/],
    ['owner of 40 characters', { repo: `${'a'.repeat(40)}/b`, branch: 'main' }, /owner\/repo/],
    ['repo named ..', { repo: 'a/..', branch: 'main' }, /owner\/repo/],
    ['repo with a space', { repo: 'a/b c', branch: 'main' }, /owner\/repo/],
    ['repo as a number', { repo: 42, branch: 'main' }, /"repo" must be a string/],
    ['branch with a space', { repo: 'a/b', branch: 'my branch' }, /valid git branch/],
    ['branch with ..', { repo: 'a/b', branch: 'a..b' }, /valid git branch/],
    ['branch ending in .lock', { repo: 'a/b', branch: 'x.lock' }, /valid git branch/],
    ['branch starting with -', { repo: 'a/b', branch: '-x' }, /valid git branch/],
    ['branch with a colon', { repo: 'a/b', branch: 'a:b' }, /valid git branch/],
    ['empty branch', { repo: 'a/b', branch: '' }, /"branch" is not allowed to be empty/],
    ['pr_url of another repo', { repo: 'a/b', pr_url: 'https://github.com/a/c/pull/1' }, /points at a\/c/],
    [
      'pr_url that is an issue',
      { repo: 'a/b', pr_url: 'https://github.com/a/b/issues/1' },
      /pull-request URL/,
    ],
    ['pr_url on another host', { repo: 'a/b', pr_url: 'https://gitlab.com/a/b/pull/1' }, /pull-request URL/],
    ['pr_url not a URL', { repo: 'a/b', pr_url: 'pull 1' }, /"pr_url" must be a valid uri/],
    ['pr_url with number 0', { repo: 'a/b', pr_url: 'https://github.com/a/b/pull/0' }, /pull-request URL/],
    ['twins not an array', { repo: 'a/b', branch: 'm', twins: 'github' }, /"twins" must be an array/],
    ['twins with a duplicate', { repo: 'a/b', branch: 'm', twins: ['github', 'github'] }, /duplicate/],
    ['twins with a number', { repo: 'a/b', branch: 'm', twins: [1] }, /must be a string/],
    ['ttl 0', { repo: 'a/b', branch: 'm', ttl_minutes: 0 }, /greater than or equal to 1/],
    ['ttl 481', { repo: 'a/b', branch: 'm', ttl_minutes: 481 }, /less than or equal to 480/],
    ['ttl 1.5', { repo: 'a/b', branch: 'm', ttl_minutes: 1.5 }, /must be an integer/],
    ['ttl as a string', { repo: 'a/b', branch: 'm', ttl_minutes: '30' }, /must be a number/],
    ['env not an object', { repo: 'a/b', branch: 'm', env: ['A=1'] }, /"env" must be of type object/],
    ['env value a number', { repo: 'a/b', branch: 'm', env: { A: 1 } }, /"env.A" must be a string/],
    ['env name with a dash', { repo: 'a/b', branch: 'm', env: { 'MY-VAR': 'x' } }, /env names must match/],
    [
      'env name starting with a digit',
      { repo: 'a/b', branch: 'm', env: { '1A': 'x' } },
      /env names must match/,
    ],
    [
      'env too many entries',
      {
        repo: 'a/b',
        branch: 'm',
        env: Object.fromEntries(Array.from({ length: 101 }, (_, i) => [`V${i}`, 'x'])),
      },
      /must have less than or equal to 100 keys/,
    ],
    [
      'env too large in all',
      { repo: 'a/b', branch: 'm', env: { A: 'x'.repeat(40_000), B: 'y'.repeat(40_000) } },
      /larger than 65536 bytes/,
    ],
    ['an unknown field', { repo: 'a/b', branch: 'm', color: 'red' }, /"color" is not allowed/],
    ['scenario_prompt empty', { repo: 'a/b', branch: 'm', scenario_prompt: '' }, /not allowed to be empty/],
    ['body is an array', [{ repo: 'a/b', branch: 'm' }], /must be of type object/],
  ];
  for (const [name, payload, detail] of cases) {
    const res = await createSandbox(tb, user.key, payload);
    t.equal(res.status, 400, name);
    t.match(res.body.detail, detail, name);
    t.equal(res.body.error, 'Bad Request', name);
  }
  t.same((await call(tb, { url: '/sandboxes', token: user.key })).body.sandboxes, [], 'nothing was created');
});

t.test('unknown twin names: 400 naming every unknown one and listing the supported ones', async (t) => {
  const tb = await startTestTwinbox(t, {}, { catalog });
  const user = await createUser(tb);
  const res = await createSandbox(tb, user.key, {
    repo: 'a/b',
    branch: 'm',
    twins: ['github', 'jira', 'slack'],
  });
  t.equal(res.status, 400);
  t.equal(res.body.code, 'unknown_twin');
  t.equal(res.body.detail, 'Unknown twin names: jira, slack. Supported twins: github, stripe.');
});

t.test('an unknown or foreign scenario_id is a 400', async (t) => {
  const tb = await startTestTwinbox(t, {}, { catalog });
  const owner = await createUser(tb);
  const other = await createUser(tb);
  await tb.store.scenarios.insert({
    id: 'scn_private',
    owner_id: owner.id,
    name: 'mine',
    twins: ['stripe'],
    seed: {},
    created_at: new Date().toISOString(),
  });
  const missing = await createSandbox(tb, owner.key, { repo: 'a/b', branch: 'm', scenario_id: 'scn_nope' });
  t.equal(missing.status, 400);
  t.equal(missing.body.code, 'unknown_scenario');
  const foreign = await createSandbox(tb, other.key, {
    repo: 'a/b',
    branch: 'm',
    scenario_id: 'scn_private',
  });
  t.equal(foreign.status, 400);
  t.equal(foreign.body.code, 'unknown_scenario');
  const mine = await createSandbox(tb, owner.key, { repo: 'a/b', branch: 'm', scenario_id: 'scn_private' });
  t.equal(mine.status, 201);
  t.same(
    (await tb.store.sandboxes.get(mine.body.sandbox_id))?.twin_names,
    ['stripe'],
    "the scenario's twins are used",
  );
});

t.test('free plan: ttl above the cap is 403 plan_limit_exceeded; pro may go to 480', async (t) => {
  const tb = await startTestTwinbox(t, { TWINBOX_FREE_TTL_CAP_MINUTES: '30' });
  const free = await createUser(tb, 'free');
  const pro = await createUser(tb, 'pro');
  const over = await createSandbox(tb, free.key, { repo: 'a/b', branch: 'm', ttl_minutes: 31 });
  t.equal(over.status, 403);
  t.equal(over.body.code, 'plan_limit_exceeded');
  t.match(over.body.detail, /above the free plan's cap of 30 minutes/);
  const defaulted = await createSandbox(tb, free.key, { repo: 'a/b', branch: 'm' });
  t.equal(defaulted.status, 403, 'the default of 60 is above a cap of 30 too');
  t.equal((await createSandbox(tb, free.key, { repo: 'a/b', branch: 'm', ttl_minutes: 30 })).status, 201);
  t.equal((await createSandbox(tb, pro.key, { repo: 'a/b', branch: 'm', ttl_minutes: 480 })).status, 201);
});

t.test('production: a caller without a connected GitHub identity gets 403 scm_not_connected', async (t) => {
  const tb = await startTestTwinbox(t, {
    NODE_ENV: 'production',
    // Production seals GitHub tokens with a configured key (docs/configuration.md).
    TWINBOX_ENCRYPTION_KEY: Buffer.alloc(32, 7).toString('base64'),
  });
  const user = await createUser(tb, 'pro');
  const res = await createSandbox(tb, user.key, { repo: 'a/b', branch: 'm' });
  t.equal(res.status, 403);
  t.equal(res.body.code, 'scm_not_connected');
  await tb.store.identities.insert({
    id: 'idn_1',
    account_id: user.id,
    provider: 'github',
    provider_key: 'github:1',
    login: 'octo',
    created_at: new Date().toISOString(),
  });
  t.equal((await createSandbox(tb, user.key, { repo: 'a/b', branch: 'm' })).status, 201);
});

t.test(
  'malformed JSON, wrong content type and oversized bodies are 4xx with detail, never 500',
  async (t) => {
    const tb = await startTestTwinbox(t);
    const user = await createUser(tb);
    const json = { 'content-type': 'application/json' };
    const broken = await call(tb, {
      method: 'POST',
      url: '/sandboxes',
      token: user.key,
      payload: '{"repo":',
      headers: json,
    });
    t.equal(broken.status, 400);
    t.match(broken.body.detail, /JSON/);
    const text = await call(tb, {
      method: 'POST',
      url: '/sandboxes',
      token: user.key,
      payload: 'repo=a/b',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    t.equal(text.status, 415);
    t.ok(text.body.detail);
    const huge = await call(tb, {
      method: 'POST',
      url: '/sandboxes',
      token: user.key,
      payload: JSON.stringify({ repo: 'a/b', branch: 'm', scenario_prompt: 'x'.repeat(300 * 1024) }),
      headers: json,
    });
    t.equal(huge.status, 413);
    t.ok(huge.body.detail);
    const empty = await call(tb, { method: 'POST', url: '/sandboxes', token: user.key });
    t.equal(empty.status, 400);
    t.ok(empty.body.detail);
    const nullBody = await call(tb, {
      method: 'POST',
      url: '/sandboxes',
      token: user.key,
      payload: 'null',
      headers: json,
    });
    t.equal(nullBody.status, 400);
  },
);

t.test(
  'the quota stays exact while creates run side by side, in waves, with deletes and a failed insert',
  async (t) => {
    const tb = await startTestTwinbox(t, { TWINBOX_SANDBOX_QUOTA_FREE: '5' });
    const user = await createUser(tb, 'free');
    const wave = (n: number) =>
      Promise.all(
        Array.from({ length: n }, (_, i) => createSandbox(tb, user.key, { repo: 'a/b', branch: `w${i}` })),
      );
    const active = async () =>
      (await tb.store.sandboxes.findBy('owner_id', user.id)).filter((s) => s.status === 'queued');

    const first = await wave(12);
    t.equal(first.filter((r) => r.status === 201).length, 5, 'five of twelve created');
    t.ok(
      first
        .filter((r) => r.status !== 201)
        .every((r) => r.status === 403 && r.body.code === 'plan_limit_exceeded'),
      'the other seven refused by the quota',
    );
    t.equal((await active()).length, 5);

    // Two deleted make room for exactly two of the next wave.
    for (const r of first.filter((r) => r.status === 201).slice(0, 2)) {
      t.equal(
        (await call(tb, { method: 'DELETE', url: `/sandboxes/${r.body.sandbox_id}`, token: user.key }))
          .status,
        200,
      );
    }
    const second = await wave(10);
    t.equal(second.filter((r) => r.status === 201).length, 2, 'two of ten after two deletes');
    t.equal((await active()).length, 5);

    // An insert that fails holds no room: the room is there for the next create.
    const victim = (await active())[0]!;
    t.equal(
      (await call(tb, { method: 'DELETE', url: `/sandboxes/${victim.id}`, token: user.key })).status,
      200,
    );
    const insert = tb.store.sandboxes.insert.bind(tb.store.sandboxes);
    let failed = 0;
    tb.store.sandboxes.insert = (...args) => {
      if (failed++ === 0) return Promise.reject(new Error('disk full'));
      return insert(...args);
    };
    t.teardown(() => {
      tb.store.sandboxes.insert = insert;
    });
    t.equal((await createSandbox(tb, user.key)).status, 500, 'the failed insert');
    t.equal(failed, 1);
    t.equal((await createSandbox(tb, user.key)).status, 201, 'its room was given back');
    t.equal((await createSandbox(tb, user.key)).status, 403, 'and the account is full again');
    t.equal((await active()).length, 5);
  },
);

t.test(
  "the quota's statuses are the ones the store keeps a tally for (else each create scans)",
  async (t) => {
    const tally = COLLECTIONS.sandboxes.tallies?.find(
      (one) => one.by === 'owner_id' && one.where === 'status',
    );
    t.ok(tally, 'collections.ts declares a tally of sandboxes by owner and status');
    t.same([...(tally?.in ?? [])].sort(), [...ACTIVE_STATUSES].sort());
  },
);
