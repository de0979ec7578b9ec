// `npm test`: the type check, the formatting check and the tests, then check-results. The two static
// checks need nothing from the tests, and the tests spend much of their time waiting on child processes,
// sandboxes and the network, so the checks run beside `tap build` and `tap` instead of before them: on a
// 2-core machine that hides most of their ~1 min. They run at a lower CPU priority, so the tests (which
// bound their waits generously, but still wait on real processes) keep the CPU when they need it. Their
// output is held and printed after tap's, so it never interleaves with it; every step runs to its end,
// and the run fails if any step failed.
import { spawn } from 'node:child_process';
import { setPriority } from 'node:os';
import { join } from 'node:path';

const ROOT = join(import.meta.dirname, '..');
const BIN = join(ROOT, 'node_modules', '.bin');

interface Step {
  name: string;
  code: number;
  output: string;
}

/** Runs a command to its end; `held` keeps its output (stdout and stderr, in order) instead of showing it. */
function run(
  name: string,
  command: string,
  args: string[],
  held: boolean,
  lowPriority = false,
): Promise<Step> {
  return new Promise((resolve) => {
    const child = spawn(command.startsWith('/') ? command : join(BIN, command), args, {
      cwd: ROOT,
      stdio: held ? 'pipe' : 'inherit',
    });
    // Best effort: a system that refuses a lower priority still runs the check, at the normal one.
    if (lowPriority && child.pid !== undefined) {
      try {
        setPriority(child.pid, 10);
      } catch {}
    }
    let output = '';
    child.stdout?.on('data', (chunk: Buffer) => (output += chunk));
    child.stderr?.on('data', (chunk: Buffer) => (output += chunk));
    child.on('error', (error) => resolve({ name, code: 1, output: `${output}${error.message}\n` }));
    child.on('close', (code, signal) => resolve({ name, code: code ?? (signal ? 1 : 0), output }));
  });
}

const started = Date.now();
const seconds = () => `${Math.round((Date.now() - started) / 1000)} s`;
const checks = [
  run('typecheck (tsc --noEmit)', 'tsc', ['--noEmit'], true, true),
  run('format (prettier --check .)', 'prettier', ['--check', '--log-level', 'warn', '.'], true, true),
].map((p) => p.then((step) => ({ ...step, at: seconds() })));

const tests: Step[] = [];
const build = await run('tap build', 'tap', ['build'], false);
tests.push(build);
if (build.code === 0) {
  // Each test file from its bundle, with tap's options (test/runner/files.ts); at a terminal, through
  // tap's own reporter, as `tap` shows it.
  tests.push(
    process.stdout.isTTY
      ? await run(
          'tests',
          '/bin/bash',
          ['-o', 'pipefail', '-c', `"${BIN}/tsx" test/runner/files.ts | "${BIN}/tap" -`],
          false,
        )
      : await run('tests', 'tsx', [join('test', 'runner', 'files.ts')], false),
  );
  tests.push(await run('check-results', 'tsx', [join('test', 'check-results.ts')], false));
}

let failed = tests.some((s) => s.code !== 0);
for (const step of await Promise.all(checks)) {
  process.stdout.write(`\n${step.name}: ${step.code === 0 ? 'passed' : 'FAILED'} (done at ${step.at})\n`);
  if (step.output.trim()) process.stdout.write(step.output);
  if (step.code !== 0) failed = true;
}
for (const step of tests) if (step.code !== 0) process.stdout.write(`${step.name}: FAILED\n`);
process.stdout.write(`npm test: ${failed ? 'FAILED' : 'passed'} in ${seconds()}\n`);
process.exit(failed ? 1 : 0);
