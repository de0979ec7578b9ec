import t from 'tap';
import { findings } from './helpers/tap-results.ts';
import { inCI } from './helpers/ci.ts';

// TAP as tap saves it for a file with an empty test, a real one, a skip by plan and a skip by option.
const TAP = `TAP version 14
# Subtest: empty
    1..0
ok 1 - empty # time=2.02ms

# Subtest: one
    ok 1 - x
    1..1
ok 2 - one # time=0.625ms

# Subtest: outer
    # Subtest: nested empty
        1..0
    ok 1 - nested empty # time=1ms

    1..1
ok 3 - outer # time=3ms

# Subtest: plan0
    1..0 # skipped outside CI: no bwrap
ok 4 - plan0 # SKIP skipped outside CI: no bwrap

ok 5 - by option # SKIP curl is not installed
1..5
`;

t.test('an empty test is found, at any depth, with or without CI', async (t) => {
  for (const ci of [false, true]) {
    const empty = findings('f.test.ts', TAP, ci).filter((f) => /without a single assertion/.test(f.why));
    t.same(
      empty.map((f) => f.test),
      ['empty', 'nested empty'],
      `ci=${ci}`,
    );
  }
});

t.test('skips pass outside CI and fail under it', async (t) => {
  t.same(findings('f.test.ts', TAP, false).length, 2, 'only the two empty tests');
  const skips = findings('f.test.ts', TAP, true).filter((f) => /skipped under CI/.test(f.why));
  t.equal(skips.length, 3, 'the plan-0 skip (its plan and its result line) and the option skip');
  t.ok(skips.some((f) => /no bwrap/.test(f.why)));
  t.ok(skips.some((f) => /curl is not installed/.test(f.test)));
});

t.test('a file of real tests gives nothing', async (t) => {
  t.same(findings('f.test.ts', 'TAP version 14\nok 1 - a\n1..1\n', true), []);
});

t.test('one rule for CI', async (t) => {
  t.equal(inCI({ CI: 'true' }), true);
  t.equal(inCI({ CI: '1' }), true);
  t.equal(inCI({ CI: 'TRUE' }), true);
  t.equal(inCI({ CI: 'false' }), false);
  t.equal(inCI({ CI: '0' }), false);
  t.equal(inCI({ CI: '' }), false);
  t.equal(inCI({}), false);
});
