import t from 'tap';
import { createUser } from '../helpers/twinbox.ts';
import {
  deploySandbox,
  deployingTwinbox,
  exampleFiles,
  githubToDeployFrom,
  settle,
  until,
} from '../helpers/deploy.ts';

// Twins run out of Twinbox's process, one pod per sandbox: killing it (kill -9) harms that sandbox's twins
// only for a moment; Twinbox starts the pod again and its twins come back with their state.
t.test('after kill -9 of a twin process, the sandbox twin answers again with its state', async (t) => {
  const gh = await githubToDeployFrom(t);
  await gh.createRepo({ owner: 'octocat', name: 'shop', files: await exampleFiles('zero-dep') });
  const tb = await deployingTwinbox(t, gh);
  const user = await createUser(tb);
  const sandbox = await deploySandbox(tb, user, { repo: 'octocat/shop', branch: 'main', twins: ['stripe'] });
  t.equal(sandbox.status, 'ready', sandbox.error ?? '');
  const stripe = sandbox.twins.stripe;
  const auth = { authorization: `Bearer ${stripe.env_vars.STRIPE_SECRET_KEY}` };
  const made = await fetch(`${stripe.base_url}/v1/customers`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/x-www-form-urlencoded' },
    body: 'email=kept%40example.com',
  });
  t.equal(made.status, 200);
  // State is saved a few milliseconds after a change; give it that.
  await new Promise((resolve) => setTimeout(resolve, 300));

  const pod = tb.engine!.deployer.podOf(sandbox.sandbox_id)!;
  const before = pod.process!.pid;
  process.kill(-before, 'SIGKILL');
  await until(() => pod.process!.pid !== before, 'a new pod process', 30_000);
  let customers: { data: Array<{ email: string }> } | undefined;
  await until(
    async () => {
      const res = await fetch(`${stripe.base_url}/v1/customers`, { headers: auth }).catch(() => undefined);
      if (res?.status !== 200) return false;
      customers = (await res.json()) as typeof customers;
      return true;
    },
    'the twin to answer again',
    30_000,
  );
  t.same(
    customers!.data.map((c) => c.email),
    ['kept@example.com'],
    'the customer made before the kill is still there',
  );
  let page = '';
  await until(
    async () => {
      const res = await fetch(sandbox.app_url).catch(() => undefined);
      page = res?.status === 200 ? await res.text() : '';
      return res?.status === 200;
    },
    'the app to be reachable again through the new pod',
    30_000,
  );
  t.match(page, 'kept@example.com', 'the app reads the restored twin');
});
