import t from 'tap';
import { call, createSandbox, createUser, startTestTwinbox } from '../helpers/twinbox.ts';

const stripeSeed = { stripe: { customers: [{ name: 'Ada', email: 'ada@example.com' }] } };

t.test('saved scenarios: create, read, list, use, delete; invisible to other accounts', async (t) => {
  const tb = await startTestTwinbox(t);
  const alice = await createUser(tb);
  const bob = await createUser(tb);
  const created = await call(tb, {
    method: 'POST',
    url: '/scenarios',
    token: alice.key,
    payload: { name: 'one customer', seed: stripeSeed },
  });
  t.equal(created.status, 201);
  t.equal(created.headers.location, `/scenarios/${created.body.id}`);
  t.match(created.body, {
    kind: 'saved',
    name: 'one customer',
    twins: ['stripe'],
    seed: stripeSeed,
    notes: [],
  });

  t.same((await call(tb, { url: `/scenarios/${created.body.id}`, token: alice.key })).body, created.body);
  const aliceList = (await call(tb, { url: '/scenarios', token: alice.key })).body.scenarios;
  t.ok(aliceList.some((s: { id: string }) => s.id === created.body.id));

  // Bob sees none of it, cannot use it and cannot delete it.
  t.equal((await call(tb, { url: `/scenarios/${created.body.id}`, token: bob.key })).status, 404);
  const bobList = (await call(tb, { url: '/scenarios', token: bob.key })).body.scenarios;
  t.notOk(bobList.some((s: { id: string }) => s.id === created.body.id));
  const bobUse = await createSandbox(tb, bob.key, { repo: 'a/b', branch: 'm', scenario_id: created.body.id });
  t.equal(bobUse.status, 400);
  t.equal(bobUse.body.code, 'unknown_scenario');
  t.equal(
    (await call(tb, { method: 'DELETE', url: `/scenarios/${created.body.id}`, token: bob.key })).status,
    404,
  );

  // Alice's sandbox takes its twins and seed from the scenario.
  const sandbox = await createSandbox(tb, alice.key, {
    repo: 'a/b',
    branch: 'm',
    scenario_id: created.body.id,
  });
  t.equal(sandbox.status, 201);
  t.same(sandbox.body.seed, stripeSeed);
  t.same((await tb.store.sandboxes.get(sandbox.body.sandbox_id))?.twin_names, ['stripe']);

  t.equal(
    (await call(tb, { method: 'DELETE', url: `/scenarios/${created.body.id}`, token: alice.key })).status,
    204,
  );
  t.equal((await call(tb, { url: `/scenarios/${created.body.id}`, token: alice.key })).status, 404);
});

t.test('a bad seed is a 400 whose detail points at the field', async (t) => {
  const tb = await startTestTwinbox(t);
  const user = await createUser(tb);
  const cases: [unknown, RegExp][] = [
    [
      { name: 'x', seed: { stripe: { customers: [{ email: 'not-an-email' }] } } },
      /stripe seed: "customers\[0\]\.email" must be a valid email/,
    ],
    [
      { name: 'x', seed: { github: { repos: [{ owner: 'octocat' }] } } },
      /github seed: "repos\[0\]\.name" is required/,
    ],
    [{ name: 'x', seed: { jira: {} } }, /Unknown twin names: jira/],
    [
      { name: 'x', twins: ['github'], seed: stripeSeed },
      /"stripe" is seeded but not among the twins \(github\)/,
    ],
    [{ name: 'x', twins: ['nope'], seed: {} }, /Unknown twin names: nope/],
    [{ name: 'x' }, /either "seed" .* or "prompt"/],
    [{ name: 'x', seed: stripeSeed, prompt: '3 customers' }, /either "seed" .* or "prompt"/],
    [{ seed: stripeSeed }, /"name" is required/],
    [{ name: 'x', prompt: 'purple elephants dancing' }, /Nothing in the prompt could be interpreted/],
  ];
  for (const [payload, detail] of cases) {
    const res = await call(tb, { method: 'POST', url: '/scenarios', token: user.key, payload });
    t.equal(res.status, 400, JSON.stringify(payload));
    t.match(res.body.detail, detail, JSON.stringify(payload));
  }
  t.same(
    (await call(tb, { url: '/scenarios', token: user.key })).body.scenarios.filter(
      (s: any) => s.kind === 'saved',
    ),
    [],
  );
});

t.test('a scenario can be saved from a prompt; the planner notes what it did not understand', async (t) => {
  const tb = await startTestTwinbox(t);
  const user = await createUser(tb);
  const res = await call(tb, {
    method: 'POST',
    url: '/scenarios',
    token: user.key,
    payload: { name: 'billing', prompt: '3 customers, one whose card declines, and a unicorn' },
  });
  t.equal(res.status, 201);
  t.same(res.body.twins, ['stripe']);
  t.equal(res.body.seed.stripe.customers.length, 3);
  t.same(res.body.notes, ['Not interpreted: "a unicorn".']);
});

t.test('a sandbox with a prompt shows the seed it applies and what was not understood', async (t) => {
  const tb = await startTestTwinbox(t);
  const user = await createUser(tb);
  const res = await createSandbox(tb, user.key, {
    repo: 'a/b',
    branch: 'm',
    scenario_prompt: '3 customers, one whose card declines, and a repo with 2 open PRs',
  });
  t.equal(res.status, 201);
  t.same(Object.keys(res.body.seed).sort(), ['github', 'stripe']);
  t.same(res.body.seed_notes, []);
  t.same(
    (await tb.store.sandboxes.get(res.body.sandbox_id))?.twin_names,
    ['github', 'stripe'],
    "the prompt's twins",
  );

  const narrowed = await createSandbox(tb, user.key, {
    repo: 'a/b',
    branch: 'm',
    twins: ['github'],
    scenario_prompt: '3 customers and a repo with 2 open PRs',
  });
  t.same(Object.keys(narrowed.body.seed), ['github']);
  t.match(narrowed.body.seed_notes.join(' '), /stripe is not among this sandbox's twins/);

  const nonsense = await createSandbox(tb, user.key, {
    repo: 'a/b',
    branch: 'm',
    scenario_prompt: 'purple elephants dancing',
  });
  t.equal(nonsense.status, 201, 'a prompt that makes no sense does not fail the sandbox');
  t.equal(nonsense.body.seed, null);
  t.match(nonsense.body.seed_notes[0], /Nothing in the prompt could be interpreted/);
});

t.test('presets are listed for everyone, usable by id, and read-only', async (t) => {
  const tb = await startTestTwinbox(t);
  const user = await createUser(tb);
  const list = (await call(tb, { url: '/scenarios', token: user.key })).body.scenarios;
  const presets = list.filter((s: { kind: string }) => s.kind === 'preset');
  t.ok(presets.length >= 6);
  const billing = presets.find((s: { id: string }) => s.id === 'preset_saas_billing');
  t.same(billing.twins, ['stripe']);
  t.ok(billing.promises.stripe.customers > 0);
  t.same((await call(tb, { url: '/scenarios/preset_saas_billing', token: user.key })).body, billing);

  const sandbox = await createSandbox(tb, user.key, {
    repo: 'a/b',
    branch: 'm',
    scenario_id: 'preset_saas_billing',
  });
  t.equal(sandbox.status, 201);
  t.same(sandbox.body.seed, billing.seed);
  t.same((await tb.store.sandboxes.get(sandbox.body.sandbox_id))?.twin_names, ['stripe']);

  const removal = await call(tb, {
    method: 'DELETE',
    url: '/scenarios/preset_saas_billing',
    token: user.key,
  });
  t.equal(removal.status, 400);
  t.equal(removal.body.code, 'preset_read_only');
});
