/**
 * The router's lookup of sandboxes held by other runners (server/runners/locator.ts, docs/routing.md
 * "Several processes"): one store read, then the holding runner is remembered for a moment; a lost
 * runner, an ended sandbox and an unknown one are answered from the record.
 */
import t from 'tap';
import pino from 'pino';
import { openLowdbStore } from '../../server/store/lowdb-store.ts';
import { RunnerRegistry } from '../../server/runners/index.ts';
import { SandboxLocator } from '../../server/runners/locator.ts';
import type { SandboxRecord } from '../../server/store/records.ts';
import { tempDir } from '../helpers/twinbox.ts';

t.test('one store read per held sandbox, then the runner is remembered; a lost runner is not', async (t) => {
  const store = await openLowdbStore(await tempDir(t, 'twinbox-locator-'));
  t.teardown(() => store.close());
  const logger = pino({ level: 'silent' });
  const registry = new RunnerRegistry({ store, logger, staleMs: 60_000, cacheMs: 0 });
  t.teardown(() => registry.stop());
  await registry.register('runner-b', 'http://10.0.0.2:4000');
  const now = new Date().toISOString();
  const sandbox = {
    id: 'sb-1',
    owner_id: 'acct',
    status: 'ready',
    runner_id: 'runner-b',
    twins: { stripe: {} },
    created_at: now,
    updated_at: now,
    expires_at: now,
    ended_at: null,
  } as unknown as SandboxRecord;
  await store.sandboxes.insert(sandbox);

  // Counts the reads of the real store (a page of an app loads many assets; each asks the locator).
  let reads = 0;
  const get = store.sandboxes.get.bind(store.sandboxes);
  store.sandboxes.get = (id: string) => {
    reads++;
    return get(id);
  };
  let heldMs = 60_000;
  const locator = new SandboxLocator({
    store,
    registry,
    selfId: 'runner-a',
    keepEndedMs: 60_000,
    get heldMs() {
      return heldMs;
    },
  });

  for (let i = 0; i < 5; i++)
    t.same(await locator.locate('sb-1'), { runnerUrl: 'http://10.0.0.2:4000' }, `request ${i + 1}`);
  t.equal(reads, 1, 'the sandbox is read once for five requests');

  // A lost runner is never forwarded to, remembered or not: the record answers (the watchdog fails it).
  await registry.markLost('runner-b', Date.now() + 1000);
  t.same(await locator.locate('sb-1'), { state: { state: 'live', twins: ['stripe'] } });
  t.equal(reads, 2, 'read again once its runner is lost');

  // A sandbox this process holds is never forwarded; an unknown one is unknown.
  t.same(await locator.locate('nope'), { state: { state: 'unknown' } });
  await store.sandboxes.update('sb-1', (s) => ({ ...s, runner_id: 'runner-a' }));
  heldMs = 0;
  t.same(await locator.locate('sb-1'), { state: { state: 'live', twins: ['stripe'] } }, 'its own');

  // Ended: the recently ended page, from the record.
  await store.sandboxes.update('sb-1', (s) => ({
    ...s,
    status: 'deleted',
    ended_at: new Date().toISOString(),
  }));
  const ended = await locator.locate('sb-1');
  t.equal('state' in ended && ended.state.state, 'ended');
});
