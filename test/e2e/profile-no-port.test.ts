import t from 'tap';
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { call, createUser } from '../helpers/twinbox.ts';
import { deployingTwinbox, deploySandbox, githubToDeployFrom, until } from '../helpers/deploy.ts';
import { requireHost } from '../security/isolation-fixtures.ts';

// A worker with no HTTP port, as a Socket Mode bot or a queue consumer is: it only calls out (here to its
// Stripe twin, through the twin's variables), writes what it did, and stops when asked to.
const worker = `
const fs = require('node:fs');
async function main() {
  const answer = await fetch(process.env.STRIPE_API_BASE + '/v1/customers', {
    method: 'POST',
    headers: {
      authorization: 'Bearer ' + process.env.STRIPE_SECRET_KEY,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: 'name=from+the+worker',
  });
  const customer = await answer.json();
  fs.writeFileSync('worker.json', JSON.stringify({ customer: customer.id, port: process.env.PORT ?? null, appUrl: process.env.APP_URL }));
  console.log('worker: made customer', customer.id);
  setInterval(() => { if (fs.existsSync('stop')) process.exit(0); }, 100);
}
main().catch((error) => { console.error(error); process.exit(1); });
`;

t.test('port: false: a worker deploys, is ready, its URL says it has no HTTP port', async (t) => {
  if (!requireHost(t, { bwrap: true, root: true, cgroups: true })) return;
  const gh = await githubToDeployFrom(t);
  await gh.createRepo({
    owner: 'octocat',
    name: 'worker',
    files: {
      '.github/twinbox.yml': 'port: false\nstart: node worker.js\ntwins: [stripe]\n',
      'worker.js': worker,
    },
  });
  await gh.createRepo({
    owner: 'octocat',
    name: 'crashes',
    files: {
      '.github/twinbox.yml': 'port: false\nstart: node -e "process.exit(3)"\n',
    },
  });
  const tb = await deployingTwinbox(t, gh);
  const user = await createUser(tb);
  const logs = async (id: string) =>
    (await call(tb, { url: `/sandboxes/${id}/logs`, token: user.key })).body as string;

  const sandbox = await deploySandbox(tb, user, { repo: 'octocat/worker', branch: 'main' }, 240_000);
  if (sandbox.status !== 'ready') t.comment(await logs(sandbox.sandbox_id));
  t.equal(sandbox.status, 'ready', sandbox.error ?? '');
  t.equal(sandbox.isolation, 'full', 'in its own network namespace');
  t.notOk('PORT' in sandbox.env_vars);

  // It ran: it reached its twin, and got no PORT.
  const workspace = tb.engine!.deployer.workspaceOf(sandbox.sandbox_id);
  const done = JSON.parse(readFileSync(join(workspace, 'worker.json'), 'utf8'));
  t.match(done, { customer: /^cus_/, port: null, appUrl: sandbox.app_url });
  const log = await logs(sandbox.sandbox_id);
  t.match(log, /no HTTP port: ready once it has stayed up 5 s/);
  t.match(log, /webhooks: none: the app has no HTTP port/);

  // Its URL: a page for browsers, the problem body for API clients; never a 502.
  const page = await fetch(sandbox.app_url, { headers: { accept: 'text/html' } });
  t.equal(page.status, 404);
  t.match(page.headers.get('content-type'), /text\/html/);
  const html = await page.text();
  t.match(html, '<h1>This app has no HTTP port</h1>');
  t.match(html, 'Its twins answer at their own URLs (stripe)');
  const json = await fetch(`${sandbox.app_url}/anything`, { headers: { accept: 'application/json' } });
  t.equal(json.status, 404);
  t.match(await json.json(), { code: 'app_has_no_http_port', detail: /has no HTTP port/ });
  // Its twin answers through the router as ever.
  const twin = await fetch(`${sandbox.twins.stripe.base_url}/v1/customers`, {
    headers: { authorization: `Bearer ${sandbox.env_vars.STRIPE_SECRET_KEY}` },
  });
  t.equal(twin.status, 200);
  t.match(await twin.json(), { data: [{ id: done.customer, name: 'from the worker' }] });

  // A worker that stops later fails its sandbox, as any app that exits does.
  await writeFile(join(workspace, 'stop'), '');
  await until(
    async () =>
      (await call(tb, { url: `/sandboxes/${sandbox.sandbox_id}`, token: user.key })).body.status === 'failed',
    'the sandbox to fail after its worker exited',
    60_000,
  );
  const after = (await call(tb, { url: `/sandboxes/${sandbox.sandbox_id}`, token: user.key })).body;
  t.match(after.error, /^App crashed: the app exited with code 0/);
  const failedPage = await fetch(sandbox.app_url, { headers: { accept: 'application/json' } });
  t.match(await failedPage.json(), { code: 'sandbox_failed' }, 'its URL now tells the failure');

  const crash = await deploySandbox(tb, user, { repo: 'octocat/crashes', branch: 'main' }, 240_000);
  t.equal(crash.status, 'failed');
  t.match(
    crash.error,
    /^App crashed on start: the app exited with code 3 within its first 5 s \(port: false: it has no HTTP port, so it must stay up\)/,
  );
});
