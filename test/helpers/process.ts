import { spawn, type ChildProcess } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Test } from 'tap';

export const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url));

/**
 * One pod bundle (server/deploy/pods/pod-bundle.ts) for every Twinbox the tests start, instead of one per
 * fresh data dir: the same sources make the same bundle, and each build costs 1-2 CPU-seconds, which the
 * suite (CPU-bound on 2 cores) paid for some 80 Twinboxes.
 */
export const TEST_POD_BUNDLE_DIR = join(tmpdir(), 'twinbox-test-pod-bundle');

/**
 * The arguments to Node that start Twinbox: `npm start`'s (tsx on server/main.ts), or, under `npm test`,
 * the runner's bundle of the same entry (TWINBOX_TEST_MAIN, test/runner/files.ts), which starts without
 * tsx's loader thread: about 1 CPU-second less per process, on a suite that starts dozens. The README's
 * first run (test/e2e/readme-first-run.test.ts) and `npm start`'s own output (test/logging/pretty.test.ts)
 * still run `npm start`'s command.
 */
export function twinboxMain(): string[] {
  const bundle = process.env.TWINBOX_TEST_MAIN;
  return bundle ? [bundle] : ['--import', 'tsx', 'server/main.ts'];
}

export interface TwinboxProcess {
  child: ChildProcess;
  baseUrl: string;
  output: () => string;
  /** Resolves with the exit code (or signal) once the process has ended. */
  exited: Promise<number | NodeJS.Signals>;
}

/**
 * Runs Twinbox as `npm start` does (twinboxMain) in its own process, on a free port, and
 * resolves once it listens. Killed at the end of the test if still running.
 */
export async function spawnTwinbox(t: Test, env: Record<string, string>): Promise<TwinboxProcess> {
  const child = spawn(process.execPath, twinboxMain(), {
    cwd: REPO_ROOT,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      PORT: '0',
      NODE_ENV: 'development',
      // These tests are about the process (start, restart, locks), not deploys: no GitHub to fetch from.
      TWINBOX_DEPLOY_ENGINE: 'none',
      TWINBOX_POD_BUNDLE_DIR: TEST_POD_BUNDLE_DIR,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | NodeJS.Signals>((resolve) =>
    child.on('exit', (code, signal) => resolve(code ?? signal!)),
  );
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    return exited;
  });
  const baseUrl = await new Promise<string>((resolve, reject) => {
    // Generous: with the deploy engine on PostgreSQL, a start took 13 s at a load average of 16 on the
    // 2-core machines; a slow start is not what these tests are about.
    const timer = setTimeout(() => reject(new Error(`Twinbox did not start in time:\n${output}`)), 120_000);
    const look = () => {
      const match = /^Twinbox listening on (http:\/\/\S+) /m.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    };
    child.stdout!.on('data', look);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`Twinbox exited (${code}) before listening:\n${output}`));
    });
  });
  return { child, baseUrl, output: () => output, exited };
}

/**
 * The local owner's API key that a first start writes to `<data dir>/dev-api-key`. Twinbox writes it just
 * after it prints that it listens, then prints its start-up hint: this waits for the hint (a loaded machine
 * can take seconds between the two), then reads the key.
 */
export async function devApiKey(proc: TwinboxProcess, dataDir: string): Promise<string> {
  const deadline = Date.now() + 60_000;
  while (!/^Open \S+\/dashboard in a browser/m.test(proc.output())) {
    if (Date.now() > deadline || proc.child.exitCode !== null) {
      throw new Error(`Twinbox printed no start-up hint with the key file:\n${proc.output()}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return (await readFile(join(dataDir, 'dev-api-key'), 'utf8')).trim();
}

/**
 * The environment of a Twinbox a test starts as a person would on their machine: a local (development)
 * start on a free port, logging at info (what the test reads), then the test's own variables.
 */
export function localStartEnv(env: Record<string, string | undefined>): Record<string, string | undefined> {
  return {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    NODE_ENV: 'development',
    PORT: '0',
    LOG_LEVEL: 'info',
    ...env,
  };
}

/** Runs Twinbox expecting it to refuse to start; resolves with its exit code and output. */
export async function runTwinboxToExit(
  env: Record<string, string>,
): Promise<{ code: number | null; output: string }> {
  const child = spawn(process.execPath, twinboxMain(), {
    cwd: REPO_ROOT,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  const code = await new Promise<number | null>((resolve) => child.on('exit', (c) => resolve(c)));
  clearTimeout(timer);
  return { code, output };
}

export async function stopGracefully(proc: TwinboxProcess): Promise<void> {
  proc.child.kill('SIGTERM');
  await proc.exited;
}

export interface ProcessGroup {
  child: ChildProcess;
  /** Everything it printed so far, stdout and stderr. */
  output: () => string;
  /** Resolves with the exit code (or signal) once the process has ended. */
  exited: Promise<string>;
}

/**
 * Runs a command as a terminal runs its foreground job, in a process group of its own (so a test can send
 * Ctrl-C's SIGINT to the whole group), collecting what it prints. The group is killed when the test ends.
 */
export function spawnProcessGroup(
  t: Test,
  command: string,
  args: string[],
  opts: { cwd: string; env: Record<string, string | undefined> },
): ProcessGroup {
  const child = spawn(command, args, { ...opts, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<string>((resolve) =>
    child.on('exit', (code, signal) => resolve(String(code ?? signal))),
  );
  t.teardown(() => {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // ended by the test, as it should
    }
  });
  return { child, output: () => output, exited };
}
