import { spawn } from 'node:child_process';
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { REPO_ROOT } from '../helpers/process.ts';

/** Runs the suite's runner on `files` (relative to the checkout), saving their TAP in `results`. */
function runFiles(results: string, files: string[]): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', 'test/runner/files.ts', '--results', results, ...files],
      { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, output }));
  });
}

const bundleDirs = async () =>
  (await readdir(join(REPO_ROOT, '.tap'))).filter((name) => name.startsWith('bundles-'));

t.test(
  'npm test’s runner: each file from its bundle, its TAP saved, a failing file fails the run',
  async (t) => {
    const results = await mkdtemp(join(tmpdir(), 'twinbox-runner-results-'));
    t.teardown(() => rm(results, { recursive: true, force: true }));
    const before = await bundleDirs();
    const passes = 'test/runner/fixtures/passes.ts';
    const fails = 'test/runner/fixtures/fails.ts';

    const run = await runFiles(results, [passes, fails]);
    t.equal(run.code, 1, 'the run fails');
    t.match(run.output, /^ok 1 - test\/runner\/fixtures\/passes\.ts/m, 'the passing file passes');
    t.match(run.output, /^not ok 2 - test\/runner\/fixtures\/fails\.ts/m, 'the failing file fails');
    t.match(
      await readFile(join(results, `${passes}.tap`), 'utf8'),
      /^ok 1 - finds a file beside its source/m,
      'in its bundle, the file found what is beside its source, and its TAP was saved',
    );
    const summary = run.output.slice(run.output.lastIndexOf('== 1 test file(s) failed:'));
    t.match(
      summary,
      /^== 1 test file\(s\) failed:\n# test\/runner\/fixtures\/fails\.ts \(TAP saved in .+\)\n {4}not ok 1 - one is two/,
      'the output ends with the failed file and its failing point',
    );
    t.notMatch(summary, /passes\.ts/, 'and names no passing file');
    const failed = await readFile(join(results, `${fails}.tap`), 'utf8');
    t.match(failed, /not ok 1 - one is two/, 'the failure is saved');
    t.match(failed, /fileName: test\/runner\/fixtures\/fails\.ts/, 'and names the source, not the bundle');
    t.same(
      (await bundleDirs()).filter((name) => !before.includes(name)),
      [],
      'the run removed its bundles',
    );

    const cpu = join(results, 'cpu.json');
    const alone = await runFiles(results, ['--cpu', cpu, passes]);
    t.equal(alone.code, 0, 'a run of passing files passes');
    const rows = JSON.parse(await readFile(cpu, 'utf8')) as { file: string; cpu: number }[];
    t.equal(rows.length, 1, '--cpu: a row for the file run');
    t.equal(rows[0]?.file, passes);
    // A Node process's start alone takes some 30 ms of CPU; a run that measured nothing says 0 or NaN.
    t.ok(rows[0]!.cpu > 0 && rows[0]!.cpu < 60, `its process's CPU seconds (${rows[0]?.cpu})`);
    t.match(alone.output, /== CPU seconds per file .*: \d+ in all/, 'and says so at the end');

    // Every run: when each file's process started and exited, and the time its TAP reported.
    const timeline = JSON.parse(await readFile(join(results, 'timeline.json'), 'utf8')) as {
      file: string;
      started_ms: number;
      exited_ms: number;
      reported_ms: number | null;
    }[];
    t.equal(timeline.length, 1, 'timeline: a row for the file run');
    const [row] = timeline;
    t.equal(row?.file, passes);
    t.equal(row?.started_ms, 0, 'counted from the first process');
    t.ok(row!.reported_ms !== null && row!.reported_ms >= 0, `its reported time (${row?.reported_ms} ms)`);
    t.ok(
      row!.exited_ms > row!.reported_ms!,
      `its process took longer than it reports (${row?.exited_ms} > ${row?.reported_ms} ms): start and exit`,
    );
    t.match(alone.output, /== 1 file processes in \d+ s: \d+ s of 4 x \d+ s of slots busy \(\d+%\)/);
  },
);

t.test(
  "errors a test leaves behind fail that test, and the next tests run (the bundle's async-domain.ts)",
  async (t) => {
    const results = await mkdtemp(join(tmpdir(), 'twinbox-runner-results-'));
    t.teardown(() => rm(results, { recursive: true, force: true }));
    const file = 'test/runner/fixtures/stray-errors.ts';
    const run = await runFiles(results, [file]);
    t.equal(run.code, 1, 'the run fails');
    const tap = await readFile(join(results, `${file}.tap`), 'utf8');
    t.match(
      tap,
      /^ *# Subtest: a throw from a timer\n *ok 1 - before the throw\n *not ok 2 - thrown from a timer\n[^]*?tapCaught: uncaughtException\n[^]*?^not ok \d+ - a throw from a timer/m,
      'a throw from a timer fails its test',
    );
    t.match(
      tap,
      /^ *# Subtest: a promise left rejected\n *ok 1 - before the rejection\n *not ok 2 - left rejected\n[^]*?tapCaught: unhandledRejection\n[^]*?^not ok \d+ - a promise left rejected/m,
      'a promise left rejected fails its test',
    );
    t.match(
      tap,
      /^ *# Subtest: inner\n[^]*?not ok 1 - thrown from an inner immediate\n[^]*?tapCaught: uncaughtException\n[^]*?^ *not ok 1 - inner\b.*\n[^]*?^ *ok 2 - the outer test goes on after the inner$/m,
      'a throw in a nested test fails the nested test, and its parent goes on',
    );
    t.match(tap, /^ok \d+ - a test after them/m, 'the test after them runs and passes');
  },
);
