/** `npm run bench`: every benchmark of Twinbox's own, one after the other. */
import { spawnSync } from 'node:child_process';

const suites = ['bench/store/run.ts', 'bench/api/run.ts', 'bench/twins/run.ts', 'bench/deploy/run.ts'];
for (const suite of suites) {
  const result = spawnSync(process.execPath, ['--import', 'tsx', suite, ...process.argv.slice(2)], {
    stdio: 'inherit',
  });
  if (result.status !== 0) process.exit(result.status ?? 1);
}
