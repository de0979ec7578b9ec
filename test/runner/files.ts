// The tests as `npm test` runs them: every test file in a process of its own, as tap's runner does, with
// tap's options from package.json (include, jobs, timeout), and each file's TAP saved where tap saves it
// (.tap/test-results/), which check-results reads. What differs from `tap`: each process runs the file's
// bundle (./bundle.ts) on plain Node, without the TypeScript, processinfo and mock loaders (see there).
// `tap test/x.test.ts` still runs one file from its source, with tsx.
import {
  createWriteStream,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
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
// `--jobs N` runs N at once instead of tap's `jobs`. `--cpu FILE` writes the CPU time each file's
// process tree used, as JSON, and prints the heaviest: the suite is CPU-bound on 2 cores, so that, not a
// file's wall time, says what a run's length is made of.
const { values, positionals } = parseArgs({
  options: { results: { type: 'string' }, cpu: { type: 'string' }, jobs: { type: 'string' } },
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
// Twinbox's own entry too: the tests that start Twinbox processes run this bundle of `npm start`'s
// server/main.ts (test/helpers/process.ts), which starts without tsx's loader: about 1 CPU-second less
// for each of the suite's many Twinbox processes.
const TWINBOX_MAIN = join('server', 'main.ts');
const bundles = await bundleTests(ROOT, [...files, TWINBOX_MAIN], bundleDir);

// As tap's runner: the root has no time limit of its own (tap's default would end it after 30 s); each
// file has `timeout`.
t.setTimeout(0);
const jobs = values.jobs ? Number(values.jobs) : config.jobs;
if (!Number.isInteger(jobs) || jobs < 1)
  throw new Error(`--jobs takes a whole number above 0, not ${values.jobs}`);
t.jobs = jobs;
const failed: { file: string; tap: string; saved: string }[] = [];
/**
 * When each file's process started and exited (ms since the first started), and the time its TAP reports
 * (`# time=`, which tap's runner prints: the child's own, from tap's start in it). What lies between the
 * two is the process's start, loading and exit, which the reported times leave out; the slots' use says
 * whether the run kept `jobs` files going. Written beside the saved TAP as timeline.json.
 */
interface FileTimes {
  started?: number;
  exited?: number;
  reported?: number;
}
const timeline = new Map<string, FileTimes>();
t.on('spawn', (subtest) => {
  // Each file's TAP replaces its last (as tap's runner); the results of files not run stay.
  const out = join(results, `${subtest.name}.tap`);
  mkdirSync(dirname(out), { recursive: true });
  let tap = '';
  const times: FileTimes = {};
  timeline.set(subtest.name, times);
  subtest.on('process', (child) => {
    times.started = performance.now();
    child.once('exit', () => (times.exited = performance.now()));
    child.stdout?.pipe(createWriteStream(out));
    child.stdout?.on('data', (chunk: Buffer) => (tap += chunk.toString()));
  });
  subtest.on('complete', (final) => {
    if (final.time !== null) times.reported = final.time;
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
// Without NODE_EXTRA_CA_CERTS, which a machine behind a TLS-inspecting proxy sets for its registry: with it,
// Node reads and parses every certificate of the file as it starts, 80 ms of CPU for each test process on
// these machines (`node -e 0`: 112 against 30 ms of user time). No test reaches an outside host from its
// own process; a sandbox's install reaches the registry with the system's bundle (server/pod/layout.ts).
const { NODE_EXTRA_CA_CERTS: _machineCa, ...testEnv } = process.env;
const cpuDir = values.cpu ? await mkdtemp(join(bundleDir, 'cpu-')) : undefined;
const cpuFile = (file: string) => join(cpuDir!, `${files.indexOf(file)}.times`);
for (const file of files) {
  const node = [process.execPath, '--enable-source-maps', bundles.get(file)!];
  // Measured: bash's `times` gives the user and system time of the children it waited for, and of all
  // the descendants those waited for in turn (the Twinbox processes, pods and apps a test starts).
  const [command, ...args] = cpuDir
    ? ['/bin/bash', '-c', '"$@"; code=$?; times > "$CPU_OUT"; exit $code', 'bash', ...node]
    : node;
  t.spawn(command!, args, {
    name: file,
    cwd: ROOT,
    // A test process takes its own time limit from the environment, as under tap's runner.
    env: {
      ...testEnv,
      TAP_TIMEOUT: String(config.timeout),
      TWINBOX_TEST_MAIN: bundles.get(TWINBOX_MAIN)!,
      ...(cpuDir ? { CPU_OUT: cpuFile(file) } : {}),
    },
    buffered: jobs > 1,
    timeout: config.timeout * 1000,
    // As tap's runner: the file's own failure is its TAP, not a stack of this process.
    at: null,
    stack: '',
  });
}
t.teardown(() => {
  const rows = [...timeline].filter(([, r]) => r.started !== undefined && r.exited !== undefined);
  if (!rows.length) return;
  const first = Math.min(...rows.map(([, r]) => r.started!));
  const span = Math.max(...rows.map(([, r]) => r.exited!)) - first;
  const busy = rows.reduce((sum, [, r]) => sum + r.exited! - r.started!, 0);
  const reported = rows.reduce((sum, [, r]) => sum + (r.reported ?? 0), 0);
  const ms = (n: number) => Math.round(n);
  const out = join(results, 'timeline.json');
  writeFileSync(
    out,
    `${JSON.stringify(
      rows.map(([file, r]) => ({
        file,
        started_ms: ms(r.started! - first),
        exited_ms: ms(r.exited! - first),
        reported_ms: r.reported === undefined ? null : ms(r.reported),
      })),
      null,
      2,
    )}\n`,
  );
  const s = (n: number) => `${Math.round(n / 1000).toLocaleString('en')} s`;
  process.stderr.write(
    `\n== ${rows.length} file processes in ${s(span)}: ${s(busy)} of ${jobs} x ${s(span)} of slots busy ` +
      `(${Math.round((100 * busy) / (jobs * span))}%); their reported times ${s(reported)} (${out})\n`,
  );
});
if (values.cpu) {
  const cpuOut = resolve(values.cpu);
  t.teardown(() => {
    const seconds = (s: string) => {
      const m = /^(\d+)m([\d.]+)s$/.exec(s);
      return m ? Number(m[1]) * 60 + Number(m[2]) : NaN;
    };
    const rows = files.map((file) => {
      // `times` prints the shell's own user and system time, then its children's. A file whose shell was
      // killed (a time-out) has none: NaN, shown as such.
      let times = '';
      try {
        times = readFileSync(cpuFile(file), 'utf8');
      } catch {}
      const [, children] = times.trim().split('\n');
      const [user, system] = (children ?? '').split(' ').map(seconds);
      return { file, cpu: Math.round(((user ?? NaN) + (system ?? NaN)) * 10) / 10 };
    });
    rows.sort((a, b) => b.cpu - a.cpu);
    writeFileSync(cpuOut, `${JSON.stringify(rows, null, 2)}\n`);
    const total = rows.reduce((sum, r) => sum + r.cpu, 0);
    process.stderr.write(
      `\n== CPU seconds per file (${cpuOut}): ${Math.round(total)} in all; the heaviest:\n` +
        rows
          .slice(0, 25)
          .map((r) => `${r.cpu.toFixed(1).padStart(7)}  ${r.file}`)
          .join('\n') +
        '\n',
    );
  });
}
