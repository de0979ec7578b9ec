// The tests as `npm test` runs them: every test file in a process of its own, as tap's runner does, with
// tap's options from package.json (include, jobs, timeout), and each file's TAP saved where tap saves it
// (.tap/test-results/), which check-results reads. What differs from `tap`: each process runs the file's
// bundle (./bundle.ts) on plain Node, without the TypeScript, processinfo and mock loaders (see there).
// `tap test/x.test.ts` still runs one file from its source, with tsx.
import { createWriteStream, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { glob } from 'glob';
import t from 'tap';
import { bundleTests } from './bundle.ts';
import { failureSummary } from './failures.ts';

const ROOT = join(import.meta.dirname, '..', '..');

interface TapConfig {
  include: string[];
  jobs: number;
  timeout: number;
}
const config = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { tap: TapConfig }).tap;

// Files named on the command line run alone (as `tap <file>` would); else every file tap would include,
// in tap's order. `--results` saves their TAP elsewhere (the runner's own test runs it inside the suite).
const { values, positionals } = parseArgs({
  options: { results: { type: 'string' } },
  allowPositionals: true,
});
const results = resolve(values.results ?? join(ROOT, '.tap', 'test-results'));
const files = positionals.length ? positionals : (await glob(config.include, { cwd: ROOT })).sort();

// This run's bundles, in a directory of its own inside the checkout (so that the bundles' package imports
// find its node_modules): another run beside this one keeps its own. Gone when this run ends.
// Those of a run that was killed go a day later.
mkdirSync(join(ROOT, '.tap'), { recursive: true });
for (const name of readdirSync(join(ROOT, '.tap'))) {
  const dir = join(ROOT, '.tap', name);
  if (name.startsWith('bundles-') && statSync(dir).mtimeMs < Date.now() - 24 * 3600_000) {
    rmSync(dir, { recursive: true, force: true });
  }
}
const bundleDir = await mkdtemp(join(ROOT, '.tap', 'bundles-'));
process.on('exit', () => rmSync(bundleDir, { recursive: true, force: true }));
const bundles = await bundleTests(ROOT, files, bundleDir);

// As tap's runner: the root has no time limit of its own (tap's default would end it after 30 s); each
// file has `timeout`.
t.setTimeout(0);
t.jobs = config.jobs;
const failed: { file: string; tap: string; saved: string }[] = [];
t.on('spawn', (subtest) => {
  // Each file's TAP replaces its last (as tap's runner); the results of files not run stay.
  const out = join(results, `${subtest.name}.tap`);
  mkdirSync(dirname(out), { recursive: true });
  let tap = '';
  subtest.on('process', (child) => {
    child.stdout?.pipe(createWriteStream(out));
    child.stdout?.on('data', (chunk: Buffer) => (tap += chunk.toString()));
  });
  subtest.on('complete', (final) => {
    if (final.ok) return;
    // What tap itself said of the process (a time-out, a signal, bad TAP) comes after the file's own.
    const said = final.failures
      .map((f) => ('tapError' in f ? String(f.tapError) : (f as { name: string }).name))
      .filter((name) => !tap.includes(` - ${name}\n`))
      .map((name) => `not ok - ${name}`);
    failed.push({ file: subtest.name, tap: [tap, ...said].join('\n'), saved: out });
  });
});
// Last of all, so that it is in the tail of a long log (./failures.ts). Pipes and files take this
// synchronous write before the process exits.
process.on('exit', () => process.stderr.write(failureSummary(failed)));
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
