import t from 'tap';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { REPO_ROOT } from '../helpers/process.ts';
import { call, createUser } from '../helpers/twinbox.ts';
import { deployingTwinbox, githubToDeployFrom } from '../helpers/deploy.ts';
import { requireHost } from '../security/isolation-fixtures.ts';
import { stripeClient } from '../twins/helpers.ts';
import { cliHome, runCli } from './run-cli.ts';

// The paste story as a developer runs it, with twins deployed for real: one shell evaluates
// `twinbox twins create --export` and runs a stripe-node script that reads only those variables; then
// the set is deleted with the id the lines exported.

const run = promisify(execFile);

/** A script as a developer writes it: stripe-node given the key, and the twin's host, port and protocol. */
const SCRIPT = `
import Stripe from 'stripe';
const stripe = new Stripe(process.env.STRIPE_SECRET_KEY, {
  host: process.env.STRIPE_API_HOST,
  port: Number(process.env.STRIPE_API_PORT),
  protocol: process.env.STRIPE_API_PROTOCOL,
});
const customer = await stripe.customers.create({ email: 'laptop@example.com' });
console.log(JSON.stringify({ customer: customer.id, set: process.env.TWINBOX_TWIN_SET_ID }));
`;

t.test('eval "$(twinbox twins create --export)", a stripe-node script, twinbox twins delete', async (t) => {
  if (!requireHost(t, { bwrap: true, root: true })) return;
  const gh = await githubToDeployFrom(t);
  const tb = await deployingTwinbox(t, gh);
  const user = await createUser(tb);
  const home = await cliHome(t, { TWINBOX_API_URL: tb.server.info.uri, TWINBOX_API_KEY: user.key });
  // `*.localhost` resolves to loopback in browsers and curl; Node needs test/helpers/sandbox-hosts.ts.
  const shell = [
    'set -e',
    'eval "$(node dist/cli.js twins create --twins stripe --export)"',
    'node --import tsx --import ./test/helpers/sandbox-hosts.ts --input-type=module -e "$SCRIPT"',
  ].join('\n');
  const { stdout } = await run('/bin/sh', ['-c', shell], {
    cwd: REPO_ROOT,
    env: { ...home.env, SCRIPT },
    timeout: 240_000,
  });
  const made = JSON.parse(stdout.trim()) as { customer: string; set: string };
  t.match(made.customer, /^cus_/, 'the script made a customer on the twin');
  const set = (await call(tb, { url: `/twin-sets/${made.set}`, token: user.key })).body;
  t.equal(set.status, 'ready');
  t.same(set.twin_names, ['stripe']);
  // Read back with the checked client: every answer against Stripe's published description.
  const customer = await stripeClient(set.env_vars).customers.retrieve(made.customer);
  t.equal((customer as { email?: string }).email, 'laptop@example.com');

  const deleted = await runCli(home, ['twins', 'delete', made.set]);
  t.equal(deleted.code, 0, deleted.stderr);
  t.equal(deleted.stdout.trim(), `Deleted twin set ${made.set} (status: deleted).`);
  t.equal(tb.engine!.deployer.podOf(made.set), undefined, 'its pod is gone');
});
