// The PostgreSQL store's change feed (server/store/postgres/changes.ts): a write of a cached collection
// resolves only once every process listening for the schema has confirmed that it dropped the record,
// not when PostgreSQL has merely sent the notices. Here a bare connection plays the other process, so
// the test decides when it confirms.
import t, { type Test } from 'tap';
import pg from 'pg';
import { ACKS_CHANNEL, listenerLockOf } from '../../server/store/postgres/changes.ts';
import { CHANGES_CHANNEL } from '../../server/store/postgres/collection.ts';
import { openPostgresStore } from '../../server/store/postgres/store.ts';
import type { AccountRecord } from '../../server/store/records.ts';
import { freshSchema, postgresSkip, TEST_DATABASE_URL } from '../helpers/postgres.ts';

const skip = await postgresSkip();

/** Another process's listening connection: it listens and holds the schema's listener lock. */
async function otherProcess(t: Test, schema: string) {
  const client = new pg.Client({ connectionString: TEST_DATABASE_URL });
  client.on('error', () => {});
  await client.connect();
  t.teardown(() => client.end().catch(() => {}));
  const notices: string[] = [];
  let wake = () => {};
  client.on('notification', (message) => {
    if (message.channel !== CHANGES_CHANNEL || !message.payload?.startsWith(`${schema}\t`)) return;
    notices.push(message.payload);
    wake();
  });
  await client.query(`LISTEN ${CHANGES_CHANNEL}`);
  await client.query('SELECT pg_advisory_lock_shared($1, $2)', listenerLockOf(schema));
  const nextNotice = async (): Promise<string> => {
    while (notices.length === 0) await new Promise<void>((resolve) => (wake = resolve));
    return notices.shift()!;
  };
  const confirm = (payload: string) =>
    client.query('SELECT pg_notify($1, $2)', [ACKS_CHANNEL, `${schema}\t${payload.split('\t')[3]}`]);
  return { client, nextNotice, confirm };
}

function account(id: string): AccountRecord {
  return { id, email: `${id}@example.com`, plan: 'free', created_at: new Date().toISOString() };
}

t.test('a cached write waits for every listening process to confirm', { skip }, async (t) => {
  const { schema, url } = await freshSchema();
  const store = await openPostgresStore({ url });
  t.teardown(() => store.close());
  const other = await otherProcess(t, schema);

  let done = false;
  const write = store.accounts.insert(account('acct_wait')).then(() => (done = true));
  const notice = await other.nextNotice();
  t.match(notice, /\taccounts\tacct_wait\t[0-9a-f]{16}$/, 'the other process got the notice');
  // This process's own notice has long come back by now; the write still waits for the other.
  await new Promise((resolve) => setTimeout(resolve, 300));
  t.equal(done, false, 'the write has not resolved before the other process confirmed');
  await other.confirm(notice);
  await write;
  t.equal(done, true, 'and resolves once it has');
});

t.test(
  'a process that dies without confirming holds a write only until the wait ends',
  { skip },
  async (t) => {
    const { schema, url } = await freshSchema();
    const store = await openPostgresStore({ url });
    t.teardown(() => store.close());
    const other = await otherProcess(t, schema);
    const write = store.accounts.insert(account('acct_dies'));
    await other.nextNotice();
    await other.client.end();
    await t.resolves(write, 'the write resolves');
    t.ok(await store.accounts.get('acct_dies'), 'and was written');
    // With it gone, the next write waits for this process alone.
    await t.resolves(store.accounts.update('acct_dies', (a) => ({ ...a, plan: 'pro' })));
    t.equal((await store.accounts.get('acct_dies'))?.plan, 'pro');
  },
);

t.test('processes of another schema are not waited for', { skip }, async (t) => {
  const { url } = await freshSchema();
  const elsewhere = await freshSchema();
  const store = await openPostgresStore({ url });
  t.teardown(() => store.close());
  const other = await otherProcess(t, elsewhere.schema);
  await store.accounts.insert(account('acct_alone'));
  t.equal((await store.accounts.get('acct_alone'))?.id, 'acct_alone', 'written without its confirmation');
  t.equal(
    (await other.client.query('SELECT 1 AS one')).rows[0].one,
    1,
    'the other schema’s listener still runs',
  );
});
