import { spawn } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Test } from 'tap';
import { REPO_ROOT } from '../helpers/process.ts';
import { tempDir } from '../helpers/twinbox.ts';

export interface ActionRun {
  code: number | null;
  stdout: string;
  stderr: string;
  outputs: Record<string, string>;
  summary: string;
  /** What the step exported to later steps (GITHUB_ENV). */
  exported: Record<string, string>;
  /** What it saved for its post step (GITHUB_STATE), as the runner hands it back: `STATE_<name>`. */
  state: Record<string, string>;
}

/**
 * Runs the committed bundle as a runner would: `node dist/index.js` with each input as
 * `INPUT_<NAME>` (uppercased, hyphens kept, as GitHub does) and files for outputs and summary.
 */
export async function runAction(
  t: Test,
  inputs: Record<string, string>,
  github: { env?: Record<string, string>; event?: unknown } = {},
): Promise<ActionRun> {
  const dir = await tempDir(t, 'twinbox-action-');
  const outputFile = join(dir, 'output');
  const summaryFile = join(dir, 'summary');
  const eventFile = join(dir, 'event.json');
  const envFile = join(dir, 'env');
  const stateFile = join(dir, 'state');
  await writeFile(outputFile, '');
  await writeFile(summaryFile, '');
  await writeFile(envFile, '');
  await writeFile(stateFile, '');
  await writeFile(eventFile, JSON.stringify(github.event ?? {}));
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    GITHUB_OUTPUT: outputFile,
    GITHUB_STEP_SUMMARY: summaryFile,
    GITHUB_ENV: envFile,
    GITHUB_STATE: stateFile,
    GITHUB_EVENT_PATH: eventFile,
    GITHUB_REPOSITORY: 'acme/shop',
    GITHUB_EVENT_NAME: 'push',
    GITHUB_REF_NAME: 'main',
    ...github.env,
  };
  for (const [name, value] of Object.entries(inputs))
    env[`INPUT_${name.replace(/ /g, '_').toUpperCase()}`] = value;
  // Asynchronous on purpose: the Twinbox under test runs in this process and must keep answering.
  const child = spawn(process.execPath, ['dist/index.js'], {
    cwd: REPO_ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk));
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  return {
    code,
    stdout,
    stderr,
    outputs: parseOutputs(await readFile(outputFile, 'utf8')),
    summary: await readFile(summaryFile, 'utf8'),
    exported: parseOutputs(await readFile(envFile, 'utf8')),
    state: Object.fromEntries(
      Object.entries(parseOutputs(await readFile(stateFile, 'utf8'))).map(([name, value]) => [
        `STATE_${name}`,
        value,
      ]),
    ),
  };
}

/** The post step of a run, as the runner starts it: the same inputs, and the state the main step saved. */
export function runPostStep(t: Test, inputs: Record<string, string>, main: ActionRun): Promise<ActionRun> {
  return runAction(t, inputs, { env: main.state });
}

/**
 * The `name<<DELIMITER\nvalue\nDELIMITER` records @actions/core appends to GITHUB_OUTPUT (and GITHUB_ENV,
 * GITHUB_STATE); last one wins.
 */
export function parseOutputs(text: string): Record<string, string> {
  const outputs: Record<string, string> = {};
  const pattern = /^([^\n<]+)<<(\S+)\n([\s\S]*?)\n\2$/gm;
  for (const match of text.matchAll(pattern)) outputs[match[1]!] = match[3]!;
  return outputs;
}

/** The values the run asked the runner to mask. */
export function masked(run: ActionRun): string[] {
  return [...run.stdout.matchAll(/^::add-mask::(.*)$/gm)].map((m) => m[1]!);
}
