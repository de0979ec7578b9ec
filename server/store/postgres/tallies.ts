/** A tally as collections.ts declares it (`tallies`), its fields as plain names. */
export interface TallySpec {
  by: string;
  where: string;
  in: readonly string[];
}

/**
 * A tally's name: its row key in `twinbox_tallies` and the name of the trigger that keeps it
 * (migrations/0008_tallies.sql), `<table>_<by>_<where>_tally`.
 */
export function tallyName(table: string, tally: Pick<TallySpec, 'by' | 'where'>): string {
  return `${table}_${tally.by}_${tally.where}_tally`;
}

/** `value` as an SQL string literal. */
function sqlString(value: string): string {
  return `'${value.replace(/'/g, "''")}'`;
}

/** The trigger function's call as pg_get_triggerdef prints it: name, fields, then the values sorted. */
export function tallyCall(table: string, tally: TallySpec): string {
  const args = [tallyName(table, tally), tally.by, tally.where, ...[...tally.in].sort()];
  return `twinbox_tally(${args.map(sqlString).join(', ')})`;
}

/**
 * What a migration must run to keep `tally`: its trigger, and the counts of the rows already there.
 * For migrate.ts's refusal to start, as the SQL to put in a new migration.
 */
export function tallySql(table: string, tally: TallySpec): string {
  const name = tallyName(table, tally);
  const values = [...tally.in].sort().map(sqlString).join(', ');
  return (
    `CREATE TRIGGER ${name} AFTER INSERT OR UPDATE OR DELETE ON ${table} FOR EACH ROW EXECUTE FUNCTION ${tallyCall(table, tally)}; ` +
    `DELETE FROM twinbox_tallies WHERE tally = '${name}'; ` +
    `INSERT INTO twinbox_tallies (tally, key, n) SELECT '${name}', data ->> '${tally.by}', count(*) FROM ${table} ` +
    `WHERE jsonb_typeof(data -> '${tally.by}') = 'string' AND jsonb_typeof(data -> '${tally.where}') = 'string' ` +
    `AND data ->> '${tally.where}' IN (${values}) GROUP BY 2;`
  );
}
