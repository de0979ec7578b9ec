/** `npm run bench`: every benchmark of Twinbox's own, one after the other. */
import { spawnSync } from 'node:child_process';
import { loadavg } from 'node:os';

// The CPU-bound HTTP suites first, while nothing of the deploy suites is left on the machine.
const all = [
  'bench/store/run.ts',
  'bench/processes/run.ts',
  'bench/api/run.ts',
  'bench/dashboard/run.ts',
  'bench/router/run.ts',
  'bench/twins/run.ts',
  'bench/deploy/run.ts',
  'bench/jobs/run.ts',
  'bench/fleet/run.ts',
  'bench/workspaces/run.ts',
];
// BENCH_ONLY=store,processes,jobs runs those suites alone, in this order (issue 14's figures in one run).
const only = process.env.BENCH_ONLY?.split(',').map((name) => name.trim());
const suites = only ? all.filter((suite) => only.includes(suite.split('/')[1]!)) : all;
if (only && suites.length !== only.length) {
  console.error(`BENCH_ONLY names a suite that is not one of: ${all.map((s) => s.split('/')[1]).join(', ')}`);
  process.exit(2);
}
// One suite failing does not cost the figures of the others (they must come from one run): all run,
// and the exit code says whether any failed.
const failed: string[] = [];
for (const suite of suites) {
  // Other work on the machine skews every figure: the load average before each suite tells a reader.
  console.log(
    `\n=== ${suite} (${new Date().toISOString()}, load average ${loadavg()
      .map((n) => n.toFixed(2))
      .join(' ')})`,
  );
  const result = spawnSync(process.execPath, ['--import', 'tsx', suite, ...process.argv.slice(2)], {
    stdio: 'inherit',
  });
  if (result.status !== 0) failed.push(`${suite} (exit ${result.status ?? result.signal})`);
}
console.log(
  `\n=== done (${new Date().toISOString()}, load average ${loadavg()
    .map((n) => n.toFixed(2))
    .join(' ')})`,
);
if (failed.length) {
  console.error(`\nfailed: ${failed.join(', ')}`);
  process.exit(1);
}
