/**
 * What only the PostgreSQL store has: migrations (run once by processes starting together, checked
 * against collections.ts), connection failures, and a database shared by several Twinboxes.
 */
import t, { type Test } from 'tap';
import { ConfigError, loadConfig } from '../../server/config.ts';
import { MIGRATIONS_TABLE } from '../../server/store/postgres/migrate.ts';
import { openPostgresStore } from '../../server/store/postgres/store.ts';
import { DatabaseUnavailableError, SchemaMismatchError } from '../../server/store/postgres/errors.ts';
import type { Store } from '../../server/store/store.ts';
import { adminQuery, freshSchema, postgresSkip, schemaUrl } from '../helpers/postgres.ts';
import { call, createUser, startTestTwinbox, tempDir } from '../helpers/twinbox.ts';
import { readdir } from 'node:fs/promises';
import { spawn } from 'node:child_process';
import { REPO_ROOT } from '../helpers/process.ts';
import { MIGRATIONS_DIR } from '../../server/store/postgres/migrate.ts';

const skip = await postgresSkip();

async function open(t: Test, url: string, log?: (level: string, message: string) => void): Promise<Store> {
  const store = await openPostgresStore({ url, log });
  t.teardown(() => store.close());
  return store;
}

t.test('TWINBOX_DATABASE_URL must be a PostgreSQL URL, and is never echoed', async (t) => {
  t.equal(loadConfig({}).databaseUrl, undefined, 'unset: the embedded store');
  const url = 'postgresql://twinbox:s3cret@db.internal:5432/twinbox?sslmode=require';
  t.equal(loadConfig({ TWINBOX_DATABASE_URL: url }).databaseUrl, url);
  for (const bad of ['mysql://u:s3cret@h/db', 'not a url s3cret']) {
    const error = t.throws(() => loadConfig({ TWINBOX_DATABASE_URL: bad })) as Error;
    t.type(error, ConfigError);
    t.match(error.message, /TWINBOX_DATABASE_URL" must be a postgres:\/\/ or postgresql:\/\/ URL/);
    t.notMatch(error.message, /s3cret/);
  }
});

t.test('migrations', { skip }, async (t) => {
  const migrationFiles = (await readdir(MIGRATIONS_DIR)).filter((name) => name.endsWith('.sql')).sort();

  t.test('processes starting together apply each migration once', async (t) => {
    const { schema, url } = await freshSchema();
    // Four stores opening at once are four sessions racing for the migration lock, as four processes are.
    const stores = await Promise.all([1, 2, 3, 4].map(() => open(t, url)));
    const { rows } = await adminQuery(`SELECT name FROM "${schema}"."${MIGRATIONS_TABLE}" ORDER BY id`);
    t.same(
      rows.map((row) => `${row.name}.sql`),
      migrationFiles,
    );
    await stores[0]!.accounts.insert({ id: 'a', email: 'a@x.io', plan: 'free', created_at: 'now' });
    t.equal((await stores[3]!.accounts.get('a'))?.email, 'a@x.io', 'one database under all four');

    const logs: string[] = [];
    await open(t, url, (level, message) => logs.push(`${level} ${message}`));
    const again = await adminQuery(`SELECT count(*)::int AS n FROM "${schema}"."${MIGRATIONS_TABLE}"`);
    t.equal(again.rows[0].n, migrationFiles.length, 'a restart applies nothing again');
    t.notMatch(logs.join('\n'), /^info/m, 'and says nothing at info');
  });

  t.test('a schema that lacks what collections.ts declares is refused, naming the SQL to add', async (t) => {
    const { schema, url } = await freshSchema();
    await (await openPostgresStore({ url })).close();
    await adminQuery(`DROP INDEX "${schema}".api_keys_hash_key`);
    await adminQuery(`CREATE INDEX api_keys_hash_key ON "${schema}".api_keys ((data ->> 'hash'))`);
    await adminQuery(`DROP INDEX "${schema}".sandboxes_status_idx`);
    await adminQuery(`DROP TABLE "${schema}".sandbox_events`);
    await adminQuery(`DROP TRIGGER sandboxes_owner_id_status_tally ON "${schema}".sandboxes`);
    const error = await openPostgresStore({ url }).then(
      () => undefined,
      (error: unknown) => error,
    );
    t.type(error, SchemaMismatchError);
    const message = (error as Error).message;
    t.match(
      message,
      /CREATE UNIQUE INDEX api_keys_hash_key ON api_keys \(\(data ->> 'hash'\)\);/,
      'not unique',
    );
    t.match(message, /CREATE INDEX sandboxes_status_idx ON sandboxes \(\(data ->> 'status'\)\);/, 'missing');
    t.match(message, /CREATE TABLE sandbox_events \(id text PRIMARY KEY/, 'missing table');
    t.match(
      message,
      /CREATE TRIGGER sandboxes_owner_id_status_tally AFTER INSERT OR UPDATE OR DELETE ON sandboxes FOR EACH ROW EXECUTE FUNCTION twinbox_tally\('sandboxes_owner_id_status_tally', 'owner_id', 'status', 'building', 'queued', 'ready'\); DELETE FROM twinbox_tallies WHERE tally = 'sandboxes_owner_id_status_tally'; INSERT INTO twinbox_tallies/,
      'missing tally trigger, with the counts to recompute',
    );
  });

  t.test('a tally is one row a trigger keeps, whoever writes, counted again by its migration', async (t) => {
    const { schema, url } = await freshSchema();
    const store = await open(t, url);
    const active = { field: 'status', in: ['queued', 'building', 'ready'] } as const;
    const count = (s: Store, owner: string) => s.sandboxes.countBy('owner_id', owner, active);
    const sandbox = (id: string, owner: string, status: string) =>
      ({ id, owner_id: owner, status, blob: 'x'.repeat(10_000) }) as never;
    await store.sandboxes.insert(sandbox('s1', 'o1', 'queued'));
    await store.sandboxes.insert(sandbox('s2', 'o1', 'ready'));
    await store.sandboxes.insert(sandbox('s3', 'o1', 'deleted'));
    await store.sandboxes.insert(sandbox('s4', 'o2', 'building'));
    t.equal(await count(store, 'o1'), 2);

    // An operator's statements, in another search_path, and a status of another JSON type.
    const table = `"${schema}".sandboxes`;
    await adminQuery(
      `INSERT INTO ${table} VALUES ('s5', '{"id": "s5", "owner_id": "o1", "status": "building"}')`,
    );
    t.equal(await count(store, 'o1'), 3, 'an INSERT in psql');
    await adminQuery(`UPDATE ${table} SET data = data || '{"status": "expired"}' WHERE id = 's1'`);
    t.equal(await count(store, 'o1'), 2, 'an UPDATE out of the set');
    await adminQuery(`UPDATE ${table} SET data = data || '{"owner_id": "o2"}' WHERE id = 's2'`);
    t.equal(await count(store, 'o1'), 1, 'moved to another owner');
    t.equal(await count(store, 'o2'), 2, 'which counts it');
    await adminQuery(`UPDATE ${table} SET data = data || '{"status": 1}' WHERE id = 's5'`);
    t.equal(await count(store, 'o1'), 0, 'a number is not a status');
    await adminQuery(`DELETE FROM ${table} WHERE id = 's4'`);
    t.equal(await count(store, 'o2'), 1, 'a DELETE');

    // countBy reads the row, not the records: what makes a create's quota check cost the same however
    // many sandboxes the account has or had, and however large they are.
    await adminQuery(
      `UPDATE "${schema}".twinbox_tallies SET n = 42 WHERE tally = 'sandboxes_owner_id_status_tally' AND key = 'o2'`,
    );
    t.equal(await count(store, 'o2'), 42, 'the count is the tally row');

    // A database migrated before 0008 has sandboxes already: the migration counts them.
    await adminQuery(
      `DROP TRIGGER sandboxes_owner_id_status_tally ON ${table}; DROP FUNCTION "${schema}".twinbox_tally(); ` +
        `DROP TABLE "${schema}".twinbox_tallies; ` +
        `DELETE FROM "${schema}"."${MIGRATIONS_TABLE}" WHERE name = '0008_tallies'`,
    );
    await store.close();
    const migrated = await open(t, url);
    t.equal(await count(migrated, 'o1'), 0);
    t.equal(await count(migrated, 'o2'), 1, 'counted by the migration (not the 42)');
    await migrated.sandboxes.insert(sandbox('s6', 'o1', 'queued'));
    t.equal(await count(migrated, 'o1'), 1, 'and kept from then on');
    await migrated.close();

    // Without its trigger the start is refused with the SQL that restores it; that SQL does.
    await adminQuery(`DROP TRIGGER sandboxes_owner_id_status_tally ON ${table}`);
    await adminQuery(`UPDATE "${schema}".twinbox_tallies SET n = 7`);
    const refusal = await openPostgresStore({ url }).then(
      () => undefined,
      (error: unknown) => error,
    );
    t.type(refusal, SchemaMismatchError);
    const sql = /CREATE TRIGGER sandboxes_owner_id_status_tally .*GROUP BY 2;/.exec(
      (refusal as Error).message,
    );
    t.ok(sql, 'names the SQL');
    await adminQuery(`BEGIN; SET LOCAL search_path = "${schema}"; ${sql![0]} COMMIT`);
    const restored = await open(t, url);
    t.equal(await count(restored, 'o1'), 1, 'counted again');
    t.equal(await count(restored, 'o2'), 1);
  });

  t.test('a search_path naming no schema is refused', async (t) => {
    const error = await openPostgresStore({ url: schemaUrl('twinbox_no_such_schema') }).then(
      () => undefined,
      (error: unknown) => error,
    );
    t.type(error, DatabaseUnavailableError);
    t.match((error as Error).message, /no schema of its search_path exists/);
  });
});

t.test('an unreachable database fails the start saying where, without the password', async (t) => {
  // Port 1 on loopback: nothing listens there, so the connection is refused at once.
  const error = await openPostgresStore({ url: 'postgres://twinbox:s3cret@127.0.0.1:1/twinbox' }).then(
    () => undefined,
    (error: unknown) => error,
  );
  t.type(error, DatabaseUnavailableError);
  t.match((error as Error).message, /at 127\.0\.0\.1:1\/twinbox \(TWINBOX_DATABASE_URL\)/);
  t.notMatch((error as Error).message, /s3cret/);
});

t.test('npm start with an unreachable database exits 1 with one line saying so', async (t) => {
  const dataDir = await tempDir(t);
  const child = spawn(process.execPath, ['--import', 'tsx', 'server/main.ts'], {
    cwd: REPO_ROOT,
    env: {
      PATH: process.env.PATH,
      PORT: '0',
      TWINBOX_DATA_DIR: dataDir,
      TWINBOX_DATABASE_URL: 'postgres://twinbox:s3cret@127.0.0.1:1/twinbox',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  t.equal(code, 1);
  t.match(stderr, /^twinbox: Could not open the PostgreSQL store at 127\.0\.0\.1:1\/twinbox/m);
  t.notMatch(stderr, /s3cret|\n\s+at /, 'no password, no stack');
});

t.test('a connection the server drops is replaced, not fatal', { skip }, async (t) => {
  const { url } = await freshSchema();
  // Our own application_name, so that only this test's connections are dropped.
  const name = `twinbox_drop_${process.pid}`;
  const own = new URL(url);
  own.searchParams.set('application_name', name);
  const warned: string[] = [];
  let dropped!: () => void;
  const lost = new Promise<void>((resolve) => (dropped = resolve));
  const store = await open(t, own.toString(), (level, message) => {
    if (level !== 'warn') return;
    warned.push(message);
    // The change feed's own connection is dropped too (its warning is checked below).
    if (/PostgreSQL connection lost/.test(message)) dropped();
  });
  await store.accounts.insert({ id: 'a', email: 'a@x.io', plan: 'free', created_at: 'now' });
  const killed = await adminQuery(
    `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = '${name}'`,
  );
  t.ok(killed.rowCount! >= 1, 'the idle connection was terminated');
  await lost;
  t.ok(
    warned.some((message) => /PostgreSQL connection lost/.test(message)),
    'the pool said it lost one',
  );
  t.equal((await store.accounts.get('a'))?.email, 'a@x.io', 'the next query opens another connection');
  t.ok(
    warned.some((message) => /PostgreSQL change feed lost/.test(message)),
    'the change feed said it lost its connection',
  );
});

t.test('Twinboxes on one database', { skip }, async (t) => {
  t.test('two at once, each with its own data dir: no global lock, one set of records', async (t) => {
    const { url } = await freshSchema();
    const env = { TWINBOX_DATABASE_URL: url };
    const one = await startTestTwinbox(t, env);
    const two = await startTestTwinbox(t, env);
    const user = await createUser(one, 'pro');
    const created = await call(two, {
      method: 'POST',
      url: '/sandboxes',
      token: user.key,
      payload: { repo: 'a/b', branch: 'main', env: { NUL: 'a\u0000b' } },
    });
    t.equal(created.status, 201, 'an API key made through one Twinbox works on the other');
    const seen = await call(one, { url: `/sandboxes/${created.body.sandbox_id}`, token: user.key });
    t.equal(seen.status, 200);
    t.equal(seen.body.repo, 'a/b');
    t.equal((await one.store.sandboxes.get(created.body.sandbox_id))?.env.NUL, 'a\u0000b');
  });

  t.test('a restart on a new data dir keeps every record: they live in the database', async (t) => {
    const { url } = await freshSchema();
    const env = { TWINBOX_DATABASE_URL: url };
    const first = await startTestTwinbox(t, env, { dataDir: await tempDir(t) });
    const user = await createUser(first, 'pro');
    const created = await call(first, {
      method: 'POST',
      url: '/sandboxes',
      token: user.key,
      payload: { repo: 'a/b', branch: 'main' },
    });
    t.equal(created.status, 201);
    await first.stop();
    const second = await startTestTwinbox(t, env, { dataDir: await tempDir(t) });
    const listed = await call(second, { url: '/sandboxes', token: user.key });
    t.equal(listed.status, 200);
    t.same(
      listed.body.sandboxes.map((sandbox: { sandbox_id: string }) => sandbox.sandbox_id),
      [created.body.sandbox_id],
    );
  });

  t.test('the data dir stays one process’s: its lock still applies', async (t) => {
    const { url } = await freshSchema();
    const dataDir = await tempDir(t);
    await startTestTwinbox(t, { TWINBOX_DATABASE_URL: url }, { dataDir });
    await t.rejects(startTestTwinbox(t, { TWINBOX_DATABASE_URL: url }, { dataDir }), {
      name: 'DataDirLockedError',
    });
  });
});
