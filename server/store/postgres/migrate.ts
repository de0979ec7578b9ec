import { fileURLToPath } from 'node:url';
import { createHash } from 'node:crypto';
import { runner, type RunnerOption } from 'node-pg-migrate';
import type { PoolClient } from 'pg';
import { COLLECTION_KEYS, COLLECTIONS } from '../collections.ts';
import { SchemaMismatchError } from './errors.ts';
import { tallyCall, tallyName, tallySql } from './tallies.ts';

type Logger = NonNullable<RunnerOption['logger']>;

export const MIGRATIONS_DIR = fileURLToPath(new URL('./migrations/', import.meta.url));
/** node-pg-migrate's bookkeeping table, in the same schema as the collections. */
export const MIGRATIONS_TABLE = 'twinbox_migrations';

/**
 * Applies the migrations not yet applied to `schema`, in order, in one transaction. Under a
 * session-level advisory lock of that schema, so processes starting together run them once: the
 * others wait for the lock, then find nothing left to do.
 */
export async function migrate(client: PoolClient, schema: string, logger: Logger): Promise<string[]> {
  const applied = await runner({
    dbClient: client,
    dir: MIGRATIONS_DIR,
    // Only the SQL files: a stray editor backup or README there must not be taken for a migration.
    ignorePattern: '(\\..*)|(.*\\.md)',
    migrationsTable: MIGRATIONS_TABLE,
    schema,
    direction: 'up',
    checkOrder: true,
    singleTransaction: true,
    advisoryLockMode: 'wait',
    lockValue: migrationLockId(schema),
    logger,
  });
  return applied.map((migration) => migration.name);
}

/** One lock per schema: tests (and tenants) in other schemas of one database do not wait on each other. */
function migrationLockId(schema: string): number {
  // pg_advisory_lock takes a bigint; 48 bits of a hash stay exact in a JS number.
  return Number.parseInt(
    createHash('sha256').update(`twinbox-migrations:${schema}`).digest('hex').slice(0, 12),
    16,
  );
}

/**
 * Checks, after the migrations, that every collection of collections.ts has its table and an index for
 * each unique and indexed field, so a collection declared without its migration fails the start
 * instead of its first query, and a unique field is never left unenforced.
 */
export async function verifySchema(client: PoolClient, schema: string): Promise<void> {
  const tables = new Set(
    (
      await client.query<{ name: string }>(`SELECT tablename AS name FROM pg_tables WHERE schemaname = $1`, [
        schema,
      ])
    ).rows.map((row) => row.name),
  );
  const indexes = new Map(
    (
      await client.query<{ name: string; definition: string }>(
        `SELECT indexname AS name, indexdef AS definition FROM pg_indexes WHERE schemaname = $1`,
        [schema],
      )
    ).rows.map((row) => [row.name, row.definition]),
  );
  const triggers = new Map(
    (
      await client.query<{ name: string; definition: string }>(
        `SELECT t.tgname AS name, pg_get_triggerdef(t.oid) AS definition FROM pg_trigger t ` +
          `JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace s ON s.oid = c.relnamespace ` +
          `WHERE s.nspname = $1 AND NOT t.tgisinternal`,
        [schema],
      )
    ).rows.map((row) => [row.name, row.definition]),
  );
  const problems: string[] = [];
  for (const key of COLLECTION_KEYS) {
    const spec = COLLECTIONS[key];
    if (!tables.has(spec.table)) {
      problems.push(
        `CREATE TABLE ${spec.table} (id text PRIMARY KEY, data jsonb NOT NULL CHECK (data ->> 'id' = id));`,
      );
    }
    const wanted: Array<[field: string, unique: boolean]> = [
      ...spec.unique.map((field): [string, boolean] => [field, true]),
      ...spec.indexed.map((field): [string, boolean] => [field, false]),
    ];
    for (const [field, unique] of wanted) {
      const name = `${spec.table}_${field}_${unique ? 'key' : 'idx'}`;
      const definition = indexes.get(name);
      const expression = `(data ->> '${field}'::text)`;
      if (definition?.includes(expression) && definition.startsWith('CREATE UNIQUE INDEX') === unique)
        continue;
      problems.push(
        `CREATE ${unique ? 'UNIQUE ' : ''}INDEX ${name} ON ${spec.table} ((data ->> '${field}'));` +
          (definition ? ` -- replacing: ${definition}` : ''),
      );
    }
  }
  // A declared tally without its trigger, or with another set of values, would count wrong: countBy
  // reads the tally's row and never the records (tallies.ts).
  for (const key of COLLECTION_KEYS) {
    const spec = COLLECTIONS[key];
    for (const tally of spec.tallies ?? []) {
      const definition = triggers.get(tallyName(spec.table, tally));
      const current =
        definition?.includes(tallyCall(spec.table, tally)) &&
        /AFTER INSERT OR DELETE OR UPDATE ON .* FOR EACH ROW/.test(definition);
      if (current) continue;
      problems.push(
        (definition ? `DROP TRIGGER ${tallyName(spec.table, tally)} ON ${spec.table}; ` : '') +
          tallySql(spec.table, tally),
      );
    }
  }
  if (problems.length) throw new SchemaMismatchError(problems);
}
