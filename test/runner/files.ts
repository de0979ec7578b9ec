// The tests as `npm test` runs them: every test file in a process of its own, as tap's runner does, with
// tap's options from package.json (include, jobs, timeout), and each file's TAP saved where tap saves it
// (.tap/test-results/), which check-results reads. What differs from `tap`: each process runs the file's
// bundle (./bundle.ts) on plain Node, without the TypeScript, processinfo and mock loaders (see there).
// `tap test/x.test.ts` still runs one file from its source, with tsx.
import { createWriteStream, mkdirSync, readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { glob } from 'glob';
import t from 'tap';
import { bundleTests } from './bundle.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const RESULTS = join(ROOT, '.tap', 'test-results');
const BUNDLES = join(ROOT, '.tap', 'bundles');

interface TapConfig {
  include: string[];
  jobs: number;
  timeout: number;
}
const config = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { tap: TapConfig }).tap;

// Files named on the command line run alone (as `tap <file>` would); else every file tap would include,
// in tap's order.
const files =
  process.argv.length > 2 ? process.argv.slice(2) : (await glob(config.include, { cwd: ROOT })).sort();
const bundles = await bundleTests(ROOT, files, BUNDLES);
await rm(RESULTS, { recursive: true, force: true });

// As tap's runner: the root has no time limit of its own (tap's default would end it after 30 s); each
// file has `timeout`.
t.setTimeout(0);
t.jobs = config.jobs;
t.on('spawn', (subtest) => {
  const out = join(RESULTS, `${subtest.name}.tap`);
  mkdirSync(dirname(out), { recursive: true });
  subtest.on('process', (child) => child.stdout?.pipe(createWriteStream(out)));
});
for (const file of files) {
  t.spawn(process.execPath, ['--enable-source-maps', bundles.get(file)!], {
    name: file,
    cwd: ROOT,
    // A test process takes its own time limit from the environment, as under tap's runner.
    env: { ...process.env, TAP_TIMEOUT: String(config.timeout) },
    buffered: config.jobs > 1,
    timeout: config.timeout * 1000,
    // As tap's runner: the file's own failure is its TAP, not a stack of this process.
    at: null,
    stack: '',
  });
}
