import t from 'tap';
import { failingPoints, failureSummary } from './failures.ts';

const TAP = `# Subtest: a group
    ok 1 - fine
    not ok 2 - inner
      ---
      found: 1
      wanted: 2
      ...
    1..2
not ok 1 - a group
  ---
  at: x.ts:3
  ...
ok 2 - other
not ok 3 - no diagnostics
1..3
`;

t.test('failing points at every depth, each with its YAML block, nothing that passed', async (t) => {
  t.same(failingPoints(TAP), [
    '    not ok 2 - inner',
    '      ---',
    '      found: 1',
    '      wanted: 2',
    '      ...',
    'not ok 1 - a group',
    '  ---',
    '  at: x.ts:3',
    '  ...',
    'not ok 3 - no diagnostics',
  ]);
  t.same(failingPoints('ok 1 - a\n1..1\n'), [], 'none in a passing file');
});

t.test('a long list is cut, and says how much is left out', async (t) => {
  const many = Array.from({ length: 100 }, (_, i) => `not ok ${i + 1} - n${i}`).join('\n');
  const points = failingPoints(many, 10);
  t.equal(points.length, 11);
  t.equal(points[9], 'not ok 10 - n9');
  t.equal(points[10], '  ... 90 more lines in the saved TAP');
});

t.test('the summary names each failed file and where its TAP is; none when nothing failed', async (t) => {
  t.equal(failureSummary([]), '');
  const summary = failureSummary([
    { file: 'test/a.test.ts', tap: TAP, saved: '.tap/test-results/test/a.test.ts.tap' },
    { file: 'test/b.test.ts', tap: 'ok 1 - a\n', saved: 'b.tap' },
  ]);
  t.match(
    summary,
    /^\n== 2 test file\(s\) failed:\n# test\/a\.test\.ts \(TAP saved in \.tap\/test-results\/test\/a\.test\.ts\.tap\)\n {4}not ok 2 - inner/,
  );
  t.match(
    summary,
    /# test\/b\.test\.ts \(TAP saved in b\.tap\)\n {2}\(no failing point: the process failed, timed out or was killed\)\n$/,
  );
});
