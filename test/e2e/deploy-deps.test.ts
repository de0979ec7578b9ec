import t from 'tap';
import { call, createUser } from '../helpers/twinbox.ts';
import { deployingTwinbox, exampleFiles, githubToDeployFrom, settle } from '../helpers/deploy.ts';

// Needs the npm registry (the sandbox runs `npm ci` once; the second deploy reuses the cached install).
t.test('the stripe SDK example: twin inferred from dependencies, install cached per lockfile', async (t) => {
  const gh = await githubToDeployFrom(t);
  await gh.createRepo({ owner: 'octocat', name: 'billing', files: await exampleFiles('stripe-sdk') });
  const tb = await deployingTwinbox(t, gh, { TWINBOX_DEPLOY_CONCURRENCY: '1' });
  const user = await createUser(tb);
  const deploy = async () => {
    const { body } = await call(tb, {
      method: 'POST',
      url: '/sandboxes',
      token: user.key,
      payload: { repo: 'octocat/billing', branch: 'main' },
    });
    return settle(tb, user, body.sandbox_id, 120_000);
  };
  const first = await deploy();
  if (first.status !== 'ready')
    t.comment((await call(tb, { url: `/sandboxes/${first.sandbox_id}/logs`, token: user.key })).body);
  t.equal(first.status, 'ready', first.error ?? '');
  t.same(Object.keys(first.twins), ['stripe'], 'the stripe dependency brought a Stripe twin');
  // The twin's env_vars are the app's (inside its namespace); from outside it is reached at base_url.
  const { STRIPE_SECRET_KEY } = first.env_vars;
  await fetch(`${first.twins.stripe.base_url}/v1/customers`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${STRIPE_SECRET_KEY}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: 'email=grace%40example.com',
  });
  t.match(await (await fetch(first.app_url)).text(), 'grace@example.com', 'listed through the stripe SDK');

  const second = await deploy();
  t.equal(second.status, 'ready', second.error ?? '');
  const timings = tb.engine!.deployer.timings;
  t.ok(timings.get(second.sandbox_id)!.install! < 1000, 'the second install is a cache hit');
  t.comment(
    `install: cold ${timings.get(first.sandbox_id)!.install} ms, warm ${timings.get(second.sandbox_id)!.install} ms`,
  );
});
