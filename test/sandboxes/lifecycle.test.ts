import t from 'tap';
import type { Deployer, DeployResult } from '../../server/sandboxes/deployer.ts';
import type { SandboxRecord } from '../../server/store/records.ts';
import { canTransition, isFinal, SANDBOX_STATUSES } from '../../server/sandboxes/states.ts';
import { call, createUser, startTestTwinbox, createSandbox } from '../helpers/twinbox.ts';

/**
 * A deployer whose deploys wait until the test releases them: it lets the tests observe queueing,
 * concurrency, cancellation and failure at the lifecycle's seam. (The real deployer is the deploy
 * engine; this tests the lifecycle, not a stand-in for a service.)
 */
class GatedDeployer implements Deployer {
  readonly started: string[] = [];
  readonly tornDown: string[] = [];
  private readonly gates = new Map<
    string,
    { resolve: (r: DeployResult) => void; reject: (e: Error) => void }
  >();
  running = 0;
  maxRunning = 0;

  deploy(sandbox: SandboxRecord, signal: AbortSignal): Promise<DeployResult> {
    this.started.push(sandbox.id);
    this.running++;
    this.maxRunning = Math.max(this.maxRunning, this.running);
    return new Promise<DeployResult>((resolve, reject) => {
      this.gates.set(sandbox.id, { resolve, reject });
      signal.addEventListener('abort', () => reject(new Error('aborted')));
    }).finally(() => this.running--);
  }

  async teardown(sandbox: SandboxRecord): Promise<void> {
    this.tornDown.push(sandbox.id);
  }

  succeed(id: string): void {
    this.gates.get(id)!.resolve({
      app_url: `http://127.0.0.1:9/${id}`,
      twins: {
        github: {
          base_url: 'http://127.0.0.1:1',
          admin_url: 'http://127.0.0.1:1/_twin',
          env_vars: { GITHUB_TOKEN: 't' },
        },
      },
      env_vars: { GITHUB_TOKEN: 't' },
      isolation: 'none',
    });
  }

  fail(id: string, message: string): void {
    this.gates.get(id)!.reject(new Error(message));
  }
}

const until = async (check: () => boolean | Promise<boolean>, what: string) => {
  for (let i = 0; i < 200; i++) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`timed out waiting for ${what}`);
};

t.test('the state machine', async (t) => {
  t.ok(canTransition('queued', 'building'));
  t.ok(canTransition('building', 'ready'));
  t.ok(canTransition('building', 'failed'));
  t.ok(canTransition('ready', 'expired'));
  t.ok(canTransition('ready', 'deleted'));
  t.ok(canTransition('ready', 'failed'), 'a ready app that crashes');
  t.notOk(canTransition('queued', 'ready'), 'never ready without building');
  t.notOk(canTransition('ready', 'building'));
  t.notOk(canTransition('deleted', 'queued'));
  t.same(SANDBOX_STATUSES.filter(isFinal), ['expired', 'deleted']);
});

t.test('without a deployer nothing pretends: a sandbox stays queued', async (t) => {
  const tb = await startTestTwinbox(t);
  const user = await createUser(tb);
  const { body } = await createSandbox(tb, user.key);
  await tb.lifecycle.idle();
  await new Promise((resolve) => setTimeout(resolve, 50));
  t.equal((await call(tb, { url: `/sandboxes/${body.sandbox_id}`, token: user.key })).body.status, 'queued');
});

t.test('deploys run with bounded concurrency, go building -> ready, and fill the spec fields', async (t) => {
  const deployer = new GatedDeployer();
  const tb = await startTestTwinbox(t, { TWINBOX_DEPLOY_CONCURRENCY: '2' }, { deployer });
  const user = await createUser(tb);
  const ids: string[] = [];
  for (let i = 0; i < 5; i++) {
    const res = await createSandbox(tb, user.key);
    t.equal(res.body.status, 'queued');
    ids.push(res.body.sandbox_id);
  }
  await until(() => deployer.started.length === 2, 'two deploys');
  t.equal((await call(tb, { url: `/sandboxes/${ids[0]}`, token: user.key })).body.status, 'building');
  t.equal((await call(tb, { url: `/sandboxes/${ids[2]}`, token: user.key })).body.status, 'queued');
  const changes: string[] = [];
  tb.lifecycle.on('change', (s) => changes.push(`${s.id}:${s.status}`));
  deployer.succeed(ids[0]!);
  await until(() => deployer.started.length === 3, 'the next deploy');
  const ready = (await call(tb, { url: `/sandboxes/${ids[0]}`, token: user.key })).body;
  t.equal(ready.status, 'ready');
  t.equal(ready.app_url, `http://127.0.0.1:9/${ids[0]}`);
  t.same(ready.env_vars, { GITHUB_TOKEN: 't' });
  t.equal(ready.twins.github.base_url, 'http://127.0.0.1:1');
  t.ok(changes.includes(`${ids[0]}:ready`), 'a change event for ready');
  for (const id of ids.slice(1)) {
    await until(() => deployer.started.includes(id), `deploy of ${id}`);
    deployer.succeed(id);
  }
  await tb.lifecycle.idle();
  t.equal(deployer.maxRunning, 2, 'never more than the configured concurrency');
});

t.test('a failed deploy ends failed with the error, and its resources are released', async (t) => {
  const deployer = new GatedDeployer();
  const tb = await startTestTwinbox(t, {}, { deployer });
  const user = await createUser(tb);
  const { body } = await createSandbox(tb, user.key);
  await until(() => deployer.started.length === 1, 'deploy');
  deployer.fail(body.sandbox_id, 'npm run build exited with code 1');
  await tb.lifecycle.idle();
  const failed = (await call(tb, { url: `/sandboxes/${body.sandbox_id}`, token: user.key })).body;
  t.equal(failed.status, 'failed');
  t.equal(failed.error, 'npm run build exited with code 1');
  t.same(deployer.tornDown, [body.sandbox_id]);
});

t.test(
  'a hold (the copy of twin logs) keeps the teardown waiting until it is done, and no longer',
  async (t) => {
    const deployer = new GatedDeployer();
    const tb = await startTestTwinbox(t, {}, { deployer });
    const user = await createUser(tb);
    let letGo: () => void = () => {};
    const held: string[] = [];
    tb.lifecycle.holdRelease(async (sandbox) => {
      held.push(sandbox.id);
      await new Promise<void>((resolve) => (letGo = resolve));
    });
    const { body } = await createSandbox(tb, user.key);
    await until(() => deployer.started.length === 1, 'deploy');
    deployer.fail(body.sandbox_id, 'npm run build exited with code 1');
    await until(() => held.length === 1, 'the hold to be asked');
    t.same(held, [body.sandbox_id], 'asked with the ending sandbox');
    await new Promise((resolve) => setTimeout(resolve, 300));
    t.same(deployer.tornDown, [], 'no teardown while the hold lasts');
    letGo();
    await tb.lifecycle.idle();
    await until(() => deployer.tornDown.length === 1, 'the teardown');
    t.same(deployer.tornDown, [body.sandbox_id], 'torn down once it is done');
  },
);

t.test('DELETE during a deploy cancels it and releases resources; it never becomes ready', async (t) => {
  const deployer = new GatedDeployer();
  const tb = await startTestTwinbox(t, {}, { deployer });
  const user = await createUser(tb);
  const { body } = await createSandbox(tb, user.key);
  await until(() => deployer.started.length === 1, 'deploy');
  const deleted = await call(tb, { method: 'DELETE', url: `/sandboxes/${body.sandbox_id}`, token: user.key });
  t.equal(deleted.body.status, 'deleted');
  await tb.lifecycle.idle();
  t.equal((await call(tb, { url: `/sandboxes/${body.sandbox_id}`, token: user.key })).body.status, 'deleted');
  t.ok(deployer.tornDown.includes(body.sandbox_id));
});

t.test('the reaper expires a sandbox at expires_at and releases it', async (t) => {
  const deployer = new GatedDeployer();
  const tb = await startTestTwinbox(t, { TWINBOX_REAPER_INTERVAL_MS: '50' }, { deployer });
  const user = await createUser(tb);
  const { body } = await createSandbox(tb, user.key, { repo: 'a/b', branch: 'm', ttl_minutes: 1 });
  await until(() => deployer.started.length === 1, 'deploy');
  deployer.succeed(body.sandbox_id);
  await tb.lifecycle.idle();
  t.equal(await tb.reaper.sweep(new Date(Date.parse(body.expires_at) - 1000)), 0, 'not before its time');
  t.equal(await tb.reaper.sweep(new Date(Date.parse(body.expires_at))), 1);
  const expired = (await call(tb, { url: `/sandboxes/${body.sandbox_id}`, token: user.key })).body;
  t.equal(expired.status, 'expired');
  t.same(deployer.tornDown, [body.sandbox_id]);
  t.equal(await tb.reaper.sweep(new Date(Date.parse(body.expires_at) + 60_000)), 0, 'expired once only');
});

t.test('the reaper runs on its own interval', async (t) => {
  const tb = await startTestTwinbox(t, { TWINBOX_REAPER_INTERVAL_MS: '50' });
  const user = await createUser(tb);
  const { body } = await createSandbox(tb, user.key);
  // Move its expiry into the past, as if its hour had passed.
  await tb.store.sandboxes.update(body.sandbox_id, (s) => ({
    ...s,
    expires_at: new Date(Date.now() - 1).toISOString(),
  }));
  await until(async () => (await tb.store.sandboxes.get(body.sandbox_id))?.status === 'expired', 'expiry');
  t.pass('expired by the interval sweep');
});

t.test(
  'after a restart: queued deploys resume, cut-off ones run again, ready ones without resume fail',
  async (t) => {
    // One deploy at a time: `ready` is deployed, `building` is cut off by the stop, `queued` waits.
    const gated = new GatedDeployer();
    const first = await startTestTwinbox(t, { TWINBOX_DEPLOY_CONCURRENCY: '1' }, { deployer: gated });
    const user = await createUser(first);
    const make = async () => (await createSandbox(first, user.key)).body.sandbox_id as string;
    const ready = await make();
    await until(() => gated.started.includes(ready), 'the first deploy');
    gated.succeed(ready);
    await until(async () => (await first.store.sandboxes.get(ready))?.status === 'ready', 'ready');
    const building = await make();
    await until(() => gated.started.includes(building), 'the second deploy');
    const queued = await make();
    await first.stop();
    t.equal((await first.store.sandboxes.get(building))?.status, 'building', 'cut off by the stop');

    const deployer = new GatedDeployer();
    const second = await startTestTwinbox(t, {}, { dataDir: first.dataDir, deployer });
    await until(() => deployer.started.includes(queued), 'queued deploy resumed');
    await until(() => deployer.started.includes(building), 'the cut-off deploy run again');
    t.ok(
      deployer.tornDown.indexOf(building) >= 0 &&
        deployer.started.filter((id) => id === building).length === 1,
      'what the cut-off deploy left is torn down, and it runs once more, exactly once',
    );
    deployer.succeed(queued);
    deployer.succeed(building);
    await second.lifecycle.idle();
    const r = await second.store.sandboxes.get(ready);
    t.equal(r?.status, 'failed');
    t.match(r?.error, /Twinbox restarted and could not bring this sandbox back/);
    t.ok(deployer.tornDown.includes(ready), "the ready sandbox's resources released");
    t.equal((await second.store.sandboxes.get(queued))?.status, 'ready');
    t.equal((await second.store.sandboxes.get(building))?.status, 'ready');
    await second.timeline.idle();
    const transitions = (await second.store.sandboxEvents.findBy('sandbox_id', building))
      .filter((e) => e.kind === 'status')
      .sort((a, b) => a.seq - b.seq)
      .map((e) => `${(e.detail as { from: string }).from}->${(e.detail as { to: string }).to}`);
    t.same(
      transitions.slice(-3),
      ['building->queued', 'queued->building', 'building->ready'],
      'the requeue is a recorded lifecycle event',
    );
  },
);
