import t from 'tap';
import { freePort } from '../../server/deploy/ports.ts';
import { call, createUser, type TestTwinbox, type TestUser } from '../helpers/twinbox.ts';
import { deployingTwinbox, githubToDeployFrom, until } from '../helpers/deploy.ts';
import { requireHost } from '../security/isolation-fixtures.ts';
import { dataDirFor } from '../deploy/restart-helpers.ts';
import { stripeClient } from '../twins/helpers.ts';
import { githubClient } from '../twins/vendor-schema.ts';

/**
 * Twins without an app (POST /twin-sets, issue 22 part 4), deployed for real with full isolation: the
 * twins answer at their public URLs through the router to the vendors' own SDKs, configured only with
 * the set's `env_vars` as a developer would paste them; the set survives a restart, ends on DELETE and
 * at its TTL, and is its owner's alone.
 */

async function settleSet(tb: TestTwinbox, user: TestUser, id: string, timeoutMs = 120_000): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const { body } = await call(tb, { url: `/twin-sets/${id}`, token: user.key });
    if (body.status !== 'queued' && body.status !== 'building') return body;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`twin set ${id} did not settle in ${timeoutMs} ms`);
}

async function createSet(tb: TestTwinbox, user: TestUser, payload: Record<string, unknown>): Promise<any> {
  const res = await call(tb, { method: 'POST', url: '/twin-sets', token: user.key, payload });
  if (res.status !== 201) throw new Error(`POST /twin-sets refused: ${JSON.stringify(res.body)}`);
  return settleSet(tb, user, res.body.id);
}

// The two tests are independent (a GitHub twin, a Twinbox and a data dir each) and mostly wait on the
// twins' start: they run at once.
t.jobs = 2;

t.test(
  'a twin set: public URLs, env_vars for the SDKs, admin API, owner only, restart, DELETE',
  async (t) => {
    if (!requireHost(t, { bwrap: true, root: true })) return;
    const gh = await githubToDeployFrom(t);
    const dataDir = await dataDirFor(t);
    // Same port both times: the twins' public URLs name Twinbox's port.
    const port = String(await freePort());
    const first = await deployingTwinbox(t, gh, { PORT: port }, dataDir);
    const user = await createUser(first);
    const set = await createSet(first, user, {
      twins: ['stripe', 'github'],
      scenario_prompt: '2 customers',
      env: { MY_FLAG: 'on' },
    });
    if (set.status !== 'ready')
      t.comment((await call(first, { url: `/twin-sets/${set.id}/logs`, token: user.key })).body);
    t.equal(set.status, 'ready', set.error ?? '');
    t.same(Object.keys(set.twins).sort(), ['github', 'stripe']);
    const stripeBase = `http://${set.id}--stripe.localhost:${port}`;
    t.equal(set.twins.stripe.base_url, stripeBase, "the twin's public URL, through the router");
    t.equal(set.twins.stripe.admin_url, `${stripeBase}/_twinbox`);
    t.equal(set.env_vars.MY_FLAG, 'on', "the request's env is laid over the twins' variables");
    for (const [name, twin] of Object.entries<any>(set.twins))
      t.match(set.env_vars, twin.env_vars, `env_vars holds every variable of ${name}`);
    t.equal(set.env_vars.STRIPE_API_BASE, stripeBase, 'the variables name the public URL, to paste anywhere');
    t.equal(set.env_vars.STRIPE_API_HOST, `${set.id}--stripe.localhost`);
    t.equal(set.env_vars.GITHUB_API_URL, set.twins.github.base_url);

    // stripe-node, configured from env_vars alone (host/port/protocol), every answer checked against Stripe's
    // published description: the seeded customers are there and a new one is made.
    const stripe = stripeClient(set.env_vars);
    const made = await stripe.customers.create({ email: 'ada@example.com' });
    t.match(made.id, /^cus_/);
    const customers = await stripe.customers.list({ limit: 10 });
    t.equal(customers.data.length, 3, 'two seeded by the prompt, one made now');
    t.ok(customers.data.some((c) => c.email === 'ada@example.com'));

    // @octokit/rest with baseUrl and token from env_vars, answers checked against GitHub's description.
    const octokit = githubClient({ baseUrl: set.env_vars.GITHUB_API_URL, auth: set.env_vars.GITHUB_TOKEN });
    const repo = await octokit.rest.repos.createForAuthenticatedUser({ name: 'from-ci' });
    t.equal(repo.status, 201);
    const issue = await octokit.rest.issues.create({
      owner: repo.data.owner.login,
      repo: 'from-ci',
      title: 'made outside any sandbox',
    });
    t.equal(issue.data.number, 1);
    const fetched = await octokit.request(`GET ${new URL(issue.data.url).pathname}`);
    t.equal(fetched.data.title, 'made outside any sandbox', "the issue's own url leads back to it");

    // The admin API at the public admin_url, with the set's admin token only.
    const state = await fetch(`${set.twins.stripe.admin_url}/state`, {
      headers: { authorization: `Bearer ${set.twin_admin_token}` },
    });
    t.equal(state.status, 200);
    t.match(await state.text(), 'ada@example.com');
    const noToken = await fetch(`${set.twins.stripe.admin_url}/state`);
    t.equal(noToken.status, 401, 'the admin API needs the token');

    // Another account sees nothing of it.
    const other = await createUser(first);
    t.equal((await call(first, { url: `/twin-sets/${set.id}`, token: other.key })).status, 404);
    t.equal(
      (await call(first, { method: 'DELETE', url: `/twin-sets/${set.id}`, token: other.key })).status,
      404,
    );
    t.equal(
      (await call(first, { url: `/twin-sets/${set.id}`, token: user.key })).body.status,
      'ready',
      'untouched',
    );
    // Its timeline holds the twins' calls made from outside, through the router.
    const timeline = await call(first, { url: `/twin-sets/${set.id}/timeline?limit=500`, token: user.key });
    t.equal(timeline.status, 200);
    const calls = timeline.body.entries.filter((e: { kind: string }) => e.kind === 'twin_call');
    t.ok(
      calls.some(
        (e: { source: string; method?: string; path?: string }) =>
          e.source === 'twin:stripe' && e.method === 'POST' && e.path === '/v1/customers',
      ),
      'the Stripe customer create',
    );
    t.ok(
      calls.some((e: { source: string }) => e.source === 'twin:github'),
      'the GitHub calls',
    );
    t.equal(
      (await call(first, { url: `/twin-sets/${set.id}/timeline`, token: other.key })).status,
      404,
      "another account's timeline",
    );
    t.equal(
      (await call(first, { url: `/sandboxes/${set.id}/timeline`, token: user.key })).status,
      404,
      'not a sandbox timeline',
    );

    // The set has no app: its own host says so, and sends to the twins.
    const noApp = await fetch(`http://${set.id}.localhost:${port}/`, {
      headers: { accept: 'application/json' },
    });
    t.equal(noApp.status, 404);
    const noAppBody = (await noApp.json()) as { code: string; detail: string };
    t.equal(noAppBody.code, 'twin_set_has_no_app');
    t.match(noAppBody.detail, /Its twins answer at their own URLs \((stripe, github|github, stripe)\)/);
    const logs = await call(first, { url: `/twin-sets/${set.id}/logs`, token: user.key });
    t.match(logs.body, /starting twins alone/);

    // A restart on the same data dir brings the twins back with their state, URLs and variables.
    await first.stop();
    const second = await deployingTwinbox(t, gh, { PORT: port }, dataDir);
    await second.lifecycle.idle();
    const after = (await call(second, { url: `/twin-sets/${set.id}`, token: user.key })).body;
    t.equal(after.status, 'ready', after.error ?? '');
    t.same(after.twins, set.twins, 'same twin URLs and variables');
    t.same(after.env_vars, set.env_vars, 'same env_vars');
    const again = await stripeClient(after.env_vars).customers.list({ limit: 10 });
    t.equal(again.data.length, 3, 'restored, not reseeded');
    t.ok(
      again.data.some((c) => c.email === 'ada@example.com'),
      'the customer made before the restart',
    );
    const issueAgain = await githubClient({
      baseUrl: after.env_vars.GITHUB_API_URL,
      auth: after.env_vars.GITHUB_TOKEN,
    }).rest.issues.get({ owner: repo.data.owner.login, repo: 'from-ci', issue_number: 1 });
    t.equal(issueAgain.data.title, 'made outside any sandbox');

    // DELETE: the twins stop and their URL says so.
    const deleted = await call(second, { method: 'DELETE', url: `/twin-sets/${set.id}`, token: user.key });
    t.equal(deleted.status, 200);
    t.equal(deleted.body.status, 'deleted');
    t.equal(second.engine!.deployer.podOf(set.id), undefined, 'its pod is gone');
    const gone = await fetch(`${stripeBase}/v1/customers`, {
      headers: { authorization: `Bearer ${set.env_vars.STRIPE_SECRET_KEY}`, accept: 'application/json' },
    });
    t.equal(gone.status, 410, 'the twin answers no more');
    t.match(((await gone.json()) as { detail: string }).detail, `Twin set ${set.id} was deleted at`);
  },
);

t.test('a twin set expires at its TTL: the reaper ends it and its twins stop', async (t) => {
  if (!requireHost(t, { bwrap: true, root: true })) return;
  const gh = await githubToDeployFrom(t);
  const tb = await deployingTwinbox(t, gh);
  const user = await createUser(tb);
  const set = await createSet(tb, user, { twins: ['slack'], ttl_minutes: 1 });
  t.equal(set.status, 'ready', set.error ?? '');
  const auth = await fetch(`${set.twins.slack.base_url}/api/auth.test`, {
    method: 'POST',
    headers: { authorization: `Bearer ${set.env_vars.SLACK_BOT_TOKEN}` },
  });
  t.equal(auth.status, 200);
  t.equal(((await auth.json()) as { ok: boolean }).ok, true, 'the Slack twin answers at its public URL');
  t.ok(tb.engine!.deployer.podOf(set.id), 'its pod runs');
  t.equal(await tb.reaper.sweep(new Date(Date.parse(set.expires_at))), 1);
  const after = (await call(tb, { url: `/twin-sets/${set.id}`, token: user.key })).body;
  t.equal(after.status, 'expired');
  await until(() => tb.engine!.deployer.podOf(set.id) === undefined, 'its pod to go', 30_000);
  const gone = await fetch(`${set.twins.slack.base_url}/api/auth.test`, {
    method: 'POST',
    headers: { accept: 'application/json' },
  });
  t.equal(gone.status, 410, 'its URL answers no more');
  t.match(((await gone.json()) as { detail: string }).detail, `Twin set ${set.id} expired at`);
});
