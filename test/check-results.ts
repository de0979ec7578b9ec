// Reads the TAP that the last test run saved (.tap/test-results/, written by test/runner/files.ts or by
// `tap`) and fails the run when a test passed without asserting anything: tap counts an empty test as a
// pass, so a loop over nothing or a forgotten `await` would pass unseen. Under CI it also fails on any skip
// (a missing real part must fail there).
// Run by `npm test` after the tests.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { inCI } from './helpers/ci.ts';
import { findings } from './helpers/tap-results.ts';

const ROOT = join(import.meta.dirname, '..');
const RESULTS = join(ROOT, '.tap', 'test-results');

function tapFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? tapFiles(path) : name.endsWith('.tap') ? [path] : [];
  });
}

if (!existsSync(RESULTS)) {
  process.stderr.write(`check-results: no TAP results at ${RESULTS}: run tap first\n`);
  process.exit(1);
}
const all = tapFiles(RESULTS).flatMap((path) => {
  const source = relative(RESULTS, path).replace(/\.tap$/, '');
  // Results of a test file that no longer exists are left from an older run.
  if (!existsSync(join(ROOT, source))) return [];
  return findings(source, readFileSync(path, 'utf8'), inCI());
});
for (const f of all) process.stderr.write(`${f.file}: "${f.test}" ${f.why}\n`);
if (all.length) {
  process.stderr.write(`check-results: ${all.length} test(s) asserted nothing or were skipped\n`);
  process.exit(1);
}
process.stdout.write('check-results: every test asserted something\n');
