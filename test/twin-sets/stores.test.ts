import t from 'tap';
import type { Test } from 'tap';
import { call, createSandbox, startTestTwinbox, tempDir } from '../helpers/twinbox.ts';
import { freshSchema, postgresSkip } from '../helpers/postgres.ts';

// A twin set is a sandbox record of kind `twins`: both stores keep the kind across a restart, so a twin
// set never turns into a sandbox (or back) when Twinbox starts again on its data.

async function keepsKind(t: Test, env: Record<string, string>): Promise<void> {
  const dataDir = await tempDir(t);
  const first = await startTestTwinbox(t, env, { dataDir });
  const account = await first.accounts.create(`kinds-${Date.now()}@example.com`, 'free');
  const { key } = await first.apiKeys.issue(account.id);
  const set = (
    await call(first, { method: 'POST', url: '/twin-sets', token: key, payload: { twins: ['stripe'] } })
  ).body;
  const sandbox = (await createSandbox(first, key)).body;
  t.equal((await first.store.sandboxes.get(set.id))!.kind, 'twins');
  t.notOk('kind' in (await first.store.sandboxes.get(sandbox.sandbox_id))!, 'a sandbox record has no kind');
  await first.stop();

  const second = await startTestTwinbox(t, env, { dataDir });
  const again = await call(second, { url: `/twin-sets/${set.id}`, token: key });
  t.equal(again.status, 200, 'the twin set is there after the restart');
  t.same(again.body, set, 'as it was');
  t.equal(
    (await call(second, { url: `/sandboxes/${set.id}`, token: key })).status,
    404,
    'and still no sandbox',
  );
  t.same(
    (await call(second, { url: '/sandboxes', token: key })).body.sandboxes.map((s: any) => s.sandbox_id),
    [sandbox.sandbox_id],
  );
  t.same(
    (await call(second, { url: '/twin-sets', token: key })).body.twin_sets.map((s: any) => s.id),
    [set.id],
  );
  const deleted = await call(second, { method: 'DELETE', url: `/twin-sets/${set.id}`, token: key });
  t.equal(deleted.body.status, 'deleted');
  t.equal((await second.store.sandboxes.get(set.id))!.kind, 'twins', 'the kind survives its transitions');
}

t.test('the embedded store keeps a twin set a twin set', (t) => keepsKind(t, {}));

const skip = await postgresSkip();
t.test('PostgreSQL keeps a twin set a twin set', { skip }, async (t) => {
  const { url } = await freshSchema();
  await keepsKind(t, { TWINBOX_DATABASE_URL: url });
});
