/**
 * API and runner processes on one PostgreSQL (docs/scaling.md), each a whole Twinbox in this test
 * process: a create on the API process is deployed by a runner, the API's router reaches the app and
 * its twins through that runner, its logs are read from the runner, a sandbox ended on the API process
 * is released on the runner, and a runner whose heartbeat goes stale loses its sandboxes to the
 * documented failure. test/e2e/multi-host.test.ts runs the same as separate processes and hosts.
 */
import t from 'tap';
import { call, createUser, startTestTwinbox } from '../helpers/twinbox.ts';
import { settle, until } from '../helpers/deploy.ts';
import { freshSchema, postgresSkip } from '../helpers/postgres.ts';
import { apiAndRunner } from './pair.ts';
import { lostRunnerError, RunnerRegistry } from '../../server/runners/index.ts';
import { RunnerWatchdog } from '../../server/runners/watchdog.ts';
import { loadConfig } from '../../server/config.ts';

const ADMIN_TOKEN = 'cluster-test-admin-token-0123456789abcdef';

t.test('TWINBOX_ROLE api and runner need PostgreSQL and the admin token', async (t) => {
  t.equal(loadConfig({}).role, 'all', 'one process by default');
  t.throws(
    () => loadConfig({ TWINBOX_ROLE: 'api' }),
    /"TWINBOX_DATABASE_URL" is required when TWINBOX_ROLE is api/,
  );
  t.throws(
    () => loadConfig({ TWINBOX_ROLE: 'runner', TWINBOX_DATABASE_URL: 'postgres://x@127.0.0.1/db' }),
    /"TWINBOX_ADMIN_TOKEN" is required when TWINBOX_ROLE is runner/,
  );
  t.throws(() => loadConfig({ TWINBOX_ROLE: 'both' }), /"TWINBOX_ROLE" must be one of \[all, api, runner\]/);
  t.throws(() => loadConfig({ TWINBOX_RUNNER_ID: 'no spaces' }), /TWINBOX_RUNNER_ID/);
});

t.test('API and runners on one database', { skip: await postgresSkip() }, async (t) => {
  const { api, runner } = await apiAndRunner(t, { adminToken: ADMIN_TOKEN, runnerId: 'runner-a' });
  t.equal(api.engine, undefined, 'an API process runs no sandbox');
  const user = await createUser(api);

  const created = await call(api, {
    method: 'POST',
    url: '/sandboxes',
    token: user.key,
    payload: { repo: 'octocat/shop', branch: 'main', twins: ['stripe'] },
  });
  t.equal(created.status, 201);
  const id = created.body.sandbox_id as string;
  const ready = await settle(api, user, id, 180_000);
  t.equal(ready.status, 'ready', ready.error ?? '');
  t.equal((await api.store.sandboxes.get(id))?.runner_id, 'runner-a', 'the runner took the deploy');
  t.ok(runner.engine?.deployer.podOf(id), 'the pod is on the runner');

  // The API process's router reaches the app and the twin through the runner, Host kept.
  const apiPort = Number(api.server.info.port);
  const page = await fetch(`http://${id}.localhost:${apiPort}/`);
  t.equal(page.status, 200, 'the app answers through the API process');
  t.match(await page.text(), /Hello|zero-dep|twin/i);
  const stripe = ready.twins.stripe;
  const customers = await fetch(`http://${id}--stripe.localhost:${apiPort}/v1/customers`, {
    headers: { authorization: `Bearer ${stripe.env_vars.STRIPE_SECRET_KEY}` },
  });
  t.equal(customers.status, 200, 'the twin answers through the API process');
  t.same(((await customers.json()) as { object: string }).object, 'list');
  const missing = await fetch(`http://nosuchsandbox.localhost:${apiPort}/`);
  t.equal(missing.status, 404, 'an unknown sandbox is 404, answered by the API process');

  // The log lives on the runner; the API reads it from there.
  const logs = await call(api, { url: `/sandboxes/${id}/logs`, token: user.key });
  t.equal(logs.status, 200);
  t.match(String(logs.body), /deploying octocat\/shop/, 'the deploy log, read from the runner');
  const refused = await fetch(
    `http://127.0.0.1:${Number(runner.server.info.port)}/runner/sandboxes/${id}/logs`,
  );
  t.equal(refused.status, 401, "the runner's log route wants the admin token");

  // Ended on the API process: the runner releases the pod (no change event reaches it).
  const deleted = await call(api, { method: 'DELETE', url: `/sandboxes/${id}`, token: user.key });
  t.ok(deleted.status === 200 || deleted.status === 204, `DELETE answered ${deleted.status}`);
  await until(() => !runner.engine?.deployer.podOf(id), 'the runner to release the pod', 30_000);
  const gone = await fetch(`http://${id}.localhost:${apiPort}/`);
  t.equal(gone.status, 410, 'the ended page, answered by the API process');
});

t.test(
  'a runner whose heartbeat is stale loses its sandboxes, once',
  { skip: await postgresSkip() },
  async (t) => {
    const { url } = await freshSchema();
    const tb = await startTestTwinbox(t, { TWINBOX_DATABASE_URL: url, TWINBOX_ADMIN_TOKEN: ADMIN_TOKEN });
    const user = await createUser(tb);
    const registry = new RunnerRegistry({ store: tb.store, logger: tb.logger, staleMs: 5000 });
    const now = new Date().toISOString();
    await tb.store.runners.insert({
      id: 'runner-gone',
      url: 'http://127.0.0.1:9',
      started_at: now,
      heartbeat_at: now,
      lost_at: null,
    });
    const made = await call(tb, {
      method: 'POST',
      url: '/sandboxes',
      token: user.key,
      payload: { repo: 'a/b', branch: 'main' },
    });
    const queuedId = made.body.sandbox_id as string;
    const base = (await tb.store.sandboxes.get(queuedId))!;
    for (const [id, status] of [
      ['held-ready', 'ready'],
      ['held-building', 'building'],
    ] as const)
      await tb.store.sandboxes.insert({ ...base, id, status, runner_id: 'runner-gone' });
    const watchdog = new RunnerWatchdog({
      store: tb.store,
      registry,
      lifecycle: tb.lifecycle,
      logger: tb.logger,
    });

    t.same(await watchdog.sweep(), [], 'a fresh heartbeat: nothing happens');
    t.equal((await tb.store.sandboxes.get('held-ready'))?.status, 'ready');

    const later = Date.now() + 6000;
    t.same(await watchdog.sweep(later), ['runner-gone'], 'stale: the runner is lost');
    for (const id of ['held-ready', 'held-building']) {
      const failed = await tb.store.sandboxes.get(id);
      t.equal(failed?.status, 'failed', `${id} failed`);
      t.equal(failed?.error, lostRunnerError('runner-gone'));
      t.equal(failed?.error, 'The runner runner-gone holding this sandbox stopped; deploy again.');
    }
    t.equal((await tb.store.sandboxes.get(queuedId))?.status, 'queued', 'a deploy not taken stays queued');
    t.ok((await tb.store.runners.get('runner-gone'))?.lost_at, 'marked lost');
    t.same(await watchdog.sweep(later), [], 'a second sweep finds nothing left to fail');
    t.equal(await registry.urlOf('runner-gone'), undefined, 'a lost runner is not forwarded to');
  },
);
