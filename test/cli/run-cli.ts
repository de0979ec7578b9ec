import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Test } from 'tap';
import { REPO_ROOT } from '../helpers/process.ts';
import { tempDir } from '../helpers/twinbox.ts';

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface CliHome {
  /** HOME and XDG_CONFIG_HOME of the runs: a fresh directory a test, so no real config is touched. */
  home: string;
  configFile: string;
  env: Record<string, string>;
}

export async function cliHome(t: Test, env: Record<string, string> = {}): Promise<CliHome> {
  const home = await tempDir(t, 'twinbox-cli-');
  return {
    home,
    configFile: join(home, '.config', 'twinbox', 'config.json'),
    env: { PATH: process.env.PATH ?? '', HOME: home, ...env },
  };
}

/** Starts the committed `twinbox` bundle; the caller may talk to its stdin. */
export function startCli(
  home: CliHome,
  args: string[],
  options: { env?: Record<string, string>; cwd?: string } = {},
): { child: ChildProcessWithoutNullStreams; done: Promise<CliRun> } {
  // Asynchronous on purpose: the Twinbox under test runs in this process and must keep answering.
  const child = spawn(process.execPath, [join(REPO_ROOT, 'dist/cli.js'), ...args], {
    cwd: options.cwd ?? home.home,
    env: { ...home.env, ...options.env },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk));
  const done = new Promise<CliRun>((resolve) =>
    child.on('close', (code) => resolve({ code, stdout, stderr })),
  );
  return { child, done };
}

export function runCli(
  home: CliHome,
  args: string[],
  options: { env?: Record<string, string>; cwd?: string; stdin?: string } = {},
): Promise<CliRun> {
  const { child, done } = startCli(home, args, options);
  child.stdin.end(options.stdin ?? '');
  return done;
}

/** The sign-in code mailed to `email`, from the outbox of the test Twinbox (waits for the mail). */
export async function mailedCode(dataDir: string, email: string, after = new Set<string>()): Promise<string> {
  const outbox = join(dataDir, 'outbox');
  // Generous: the mail is written after the answer, on a machine that may be busy.
  for (let i = 0; i < 300; i++) {
    const names = await readdir(outbox).catch(() => [] as string[]);
    for (const name of names
      .filter((n) => n.endsWith('.json') && !after.has(n))
      .sort()
      .reverse()) {
      const message = JSON.parse(await readFile(join(outbox, name), 'utf8'));
      const code = /(\d{6})/.exec(message.subject)?.[1];
      if (message.to === email && code) {
        after.add(name);
        return code;
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`no code mailed to ${email}`);
}
