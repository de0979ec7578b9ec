import t from 'tap';
import { call, createUser } from '../helpers/twinbox.ts';
import { deployingTwinbox, githubToDeployFrom } from '../helpers/deploy.ts';
import { startLiveTwinbox } from '../client/helpers.ts';
import { requireHost } from '../security/isolation-fixtures.ts';
import { stripeClient } from '../twins/helpers.ts';
import { githubClient } from '../twins/vendor-schema.ts';
import { masked, runAction, runPostStep } from './run-action.ts';

// `mode: twins` of the committed dist/index.js: twins alone, their variables exported to the job's later
// steps (GITHUB_ENV), secrets masked, and the post step deleting them.

// The tests below are independent (a Twinbox and a run of the bundle each) and mostly wait on child
// processes and on the sandbox's start: two run at once.
t.jobs = 2;

t.test(
  'mode twins, deployed for real: later steps reach the twins with the exported variables',
  async (t) => {
    if (!requireHost(t, { bwrap: true, root: true })) return;
    const gh = await githubToDeployFrom(t);
    const tb = await deployingTwinbox(t, gh);
    const user = await createUser(tb);
    const inputs = {
      mode: 'twins',
      'api-key': user.key,
      'api-url': tb.server.info.uri,
      twins: 'stripe,\ngithub',
      env: 'CI_MARKER=marker-value-for-ci',
      'timeout-minutes': '3',
    };
    const run = await runAction(t, inputs);
    if (run.code !== 0) t.comment(run.stdout + run.stderr);
    t.equal(run.code, 0, 'the step succeeds');
    const id = run.outputs['twin-set-id']!;
    t.equal(run.exported.TWINBOX_TWIN_SET_ID, id, 'the set id is exported too');
    t.equal(run.outputs.status, 'ready');
    const set = (await call(tb, { url: `/twin-sets/${id}`, token: user.key })).body;
    t.equal(set.status, 'ready');
    t.same(JSON.parse(run.outputs['env-vars']!), set.env_vars);
    for (const [name, value] of Object.entries<string>(set.env_vars))
      t.equal(run.exported[name], value, `${name} is exported to later steps`);
    t.equal(run.exported.CI_MARKER, 'marker-value-for-ci');

    const masks = masked(run);
    t.equal(masks[0], user.key, 'the API key is masked before anything else');
    for (const secret of [
      set.twin_admin_token,
      set.env_vars.STRIPE_SECRET_KEY,
      set.env_vars.STRIPE_WEBHOOK_SECRET,
      set.env_vars.GITHUB_TOKEN,
      'marker-value-for-ci',
    ])
      t.ok(masks.includes(secret), `masked: ${secret.slice(0, 6)}...`);
    for (const address of [
      set.env_vars.STRIPE_API_PORT,
      set.env_vars.STRIPE_API_PROTOCOL,
      set.env_vars.GITHUB_API_URL,
    ])
      t.notOk(masks.includes(address), `an address is not masked: ${address}`);
    const printed = run.stdout.replace(/^::add-mask::.*$/gm, '');
    t.notMatch(printed, set.env_vars.STRIPE_SECRET_KEY, 'no secret printed');
    t.match(run.summary, /Twinbox twins ready/);
    t.notMatch(run.summary, set.env_vars.GITHUB_TOKEN, 'no secret in the summary');

    // A later step: the official SDKs, configured from what it was handed (answers checked against the
    // vendors' descriptions).
    const customer = await stripeClient(run.exported).customers.create({ email: 'ci@example.com' });
    t.match(customer.id, /^cus_/);
    const octokit = githubClient({ baseUrl: run.exported.GITHUB_API_URL, auth: run.exported.GITHUB_TOKEN });
    t.equal((await octokit.rest.users.getAuthenticated()).status, 200);

    // The post step deletes the set.
    const post = await runPostStep(t, inputs, run);
    t.equal(post.code, 0);
    t.match(post.stdout, `Deleted twin set ${id} (status: deleted)`);
    t.equal((await call(tb, { url: `/twin-sets/${id}`, token: user.key })).body.status, 'deleted');
    t.equal(tb.engine!.deployer.podOf(id), undefined, 'its pod is gone');
  },
);

t.test('mode twins: inputs that make no sense are refused before anything is created', async (t) => {
  const { baseUrl, user, tb } = await startLiveTwinbox(t);
  const base = { mode: 'twins', 'api-key': user.key, 'api-url': baseUrl };
  const cases: Array<[string, Record<string, string>, RegExp]> = [
    ['a branch', { twins: 'stripe', branch: 'main' }, /Input `branch` names what to deploy; `mode: twins`/],
    [
      'repo and pr-url',
      { twins: 'stripe', repo: 'a/b', 'pr-url': 'https://github.com/a/b/pull/1' },
      /Inputs `repo`, `pr-url`/,
    ],
    ['wait false', { twins: 'stripe', wait: 'false' }, /always waits/],
    ['no twins', {}, /needs twins to start/],
    [
      'an unknown mode',
      { mode: 'both', twins: 'stripe' },
      /Input `mode` must be sandbox or twins, not "both"/,
    ],
    ['a bad cleanup', { twins: 'stripe', cleanup: 'maybe' }, /Input `cleanup` must be true or false/],
    [
      'an unknown twin',
      { twins: 'stripe,paypal' },
      /answered 400: Unknown twin name: paypal.*Fix the `twins` input/,
    ],
  ];
  for (const [what, inputs, message] of cases) {
    const run = await runAction(t, { ...base, ...inputs });
    t.equal(run.code, 1, `${what}: the step fails`);
    t.match(run.stdout, message, what);
  }
  t.same(await tb.store.sandboxes.findBy('owner_id', user.id), [], 'nothing was created');
});

t.test('mode twins: a failed start fails the step, and the post step still deletes the set', async (t) => {
  const { baseUrl, user, tb, deployer } = await startLiveTwinbox(t);
  deployer.failWith = 'the pod could not start';
  const inputs = { mode: 'twins', 'api-key': user.key, 'api-url': baseUrl, twins: 'slack' };
  const run = await runAction(t, inputs);
  t.equal(run.code, 1);
  t.match(run.stdout, /::error::Twin set \S+ failed: the pod could not start\. Read what its twins printed/);
  const id = run.outputs['twin-set-id']!;
  t.ok(id, 'its id is an output even so');
  t.equal(run.outputs.status, 'failed');
  t.same(run.exported, {}, 'nothing exported');
  const post = await runPostStep(t, inputs, run);
  t.equal(post.code, 0);
  t.equal((await tb.store.sandboxes.get(id))!.status, 'deleted');
});

t.test('mode twins with cleanup false: the post step keeps the set', async (t) => {
  const { baseUrl, user, tb } = await startLiveTwinbox(t);
  const inputs = { mode: 'twins', 'api-key': user.key, 'api-url': baseUrl, twins: 'slack', cleanup: 'false' };
  const run = await runAction(t, inputs);
  t.equal(run.code, 0, run.stdout);
  const id = run.outputs['twin-set-id']!;
  t.match(run.stdout, `Delete them with DELETE /twin-sets/${id}`);
  const post = await runPostStep(t, inputs, run);
  t.equal(post.code, 0);
  t.match(post.stdout, `Keeping twin set ${id} (cleanup: false)`);
  t.equal((await tb.store.sandboxes.get(id))!.status, 'ready');
});

t.test('mode sandbox: the post step does nothing', async (t) => {
  const { baseUrl, user, tb } = await startLiveTwinbox(t);
  const inputs = { 'api-key': user.key, 'api-url': baseUrl, twins: 'github' };
  const run = await runAction(t, inputs);
  t.equal(run.code, 0, run.stdout);
  t.equal(run.state.STATE_isPost, 'true', 'the main step marks what follows as the post step');
  const id = run.outputs['sandbox-id']!;
  const post = await runPostStep(t, inputs, run);
  t.equal(post.code, 0);
  t.equal(post.stdout.replace(/^::add-mask::.*$/gm, '').trim(), '', 'no output, no request');
  t.equal((await tb.store.sandboxes.get(id))!.status, 'ready', 'the sandbox stays');
});
