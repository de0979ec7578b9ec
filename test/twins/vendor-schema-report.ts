/**
 * Sums up a `VENDOR_SCHEMA_REPORT` file (one checked response a line, see vendor-schema.ts):
 *
 *   VENDOR_SCHEMA_MODE=record VENDOR_SCHEMA_REPORT=/tmp/schema.jsonl npx tap test/twins/github.test.ts ...
 *   npx tsx test/twins/vendor-schema-report.ts /tmp/schema.jsonl [--details]
 *
 * Per twin: the operations the tests drove and the share that succeeded at least once (a 2xx, for Slack
 * with `ok: true`; an operation the twin does not serve never does), and the share of responses valid
 * against the vendor's schema. Paths outside the description (OAuth pages, downloads) are left out.
 */
import { readFileSync } from 'node:fs';
import type { CheckResult } from './vendor-schema.ts';

const [file, flag] = process.argv.slice(2);
if (!file) {
  console.error('usage: tsx test/twins/vendor-schema-report.ts <report.jsonl> [--details]');
  process.exit(2);
}
const results = readFileSync(file, 'utf8')
  .split('\n')
  .filter(Boolean)
  .map((line) => JSON.parse(line) as CheckResult)
  .filter((r) => !r.unchecked);

const pct = (n: number, of: number) => (of ? `${((100 * n) / of).toFixed(0)} %` : 'n/a');
for (const twin of [...new Set(results.map((r) => r.twin))].sort()) {
  const mine = results.filter((r) => r.twin === twin);
  const operations = new Map<string, CheckResult[]>();
  for (const r of mine) {
    const key = r.operation ?? `(unknown) ${r.errors[0] ?? ''}`;
    operations.set(key, [...(operations.get(key) ?? []), r]);
  }
  const succeeded = [...operations.values()].filter((rs) => rs.some((r) => r.success)).length;
  const valid = mine.filter((r) => r.valid).length;
  console.log(
    `${twin}: ${operations.size} operations, ${pct(succeeded, operations.size)} succeeded (${succeeded}); ` +
      `${mine.length} responses, ${pct(valid, mine.length)} valid against the schema (${valid})`,
  );
  if (flag !== '--details') continue;
  for (const [operation, rs] of [...operations].sort()) {
    const bad = rs.filter((r) => !r.valid);
    const ok = rs.some((r) => r.success) ? 'ok  ' : 'FAIL';
    console.log(`  ${ok} ${operation} ${rs.length} calls, ${bad.length} invalid`);
    for (const error of new Set(bad.flatMap((r) => r.errors.map((e) => `${r.status} ${e}`)))) {
      console.log(`         ${error}`);
    }
  }
}
