import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Test } from 'tap';
import { missingPart } from '../helpers/ci.ts';
import { Cgroups } from '../../server/deploy/confinement/cgroups.ts';
import { trustedExecutables } from '../../server/deploy/confinement/trusted-executables.ts';
import {
  createIsolation,
  probeIsolation,
  type ExecSpec,
  type Isolation,
  type IsolationMode,
  type SandboxLimits,
} from '../../server/deploy/confinement/isolation.ts';
import { LogSink } from '../../server/deploy/confinement/logs.ts';
import { runStep, spawnGroup, type GroupProcess } from '../../server/deploy/confinement/processes.ts';

export const MiB = 1024 * 1024;

/** Small limits, so the attacks hit them quickly. */
export const LIMITS: SandboxLimits = { pids: 48, cpus: 0.25, memoryBytes: 128 * MiB, tmpBytes: 8 * MiB };

/**
 * What these tests need from the host. In CI (CI=true) a missing piece fails the test: the protection it
 * proves would silently not exist in production. Elsewhere the test is skipped, saying why.
 */
export function requireHost(t: Test, needs: { bwrap?: boolean; cgroups?: boolean; root?: boolean }): boolean {
  const missing: string[] = [];
  if (needs.bwrap && !trustedExecutables().bwrap) missing.push('bubblewrap (bwrap) is not installed');
  if (needs.cgroups) {
    const probe = Cgroups.open(LIMITS, { instance: `check-${process.pid}` });
    if (probe.version === 'none') missing.push(`no writable cgroup file system (${probe.reason})`);
    else void probe.close();
  }
  if (needs.root && process.getuid?.() !== 0) missing.push('not root (cannot mount a tmpfs)');
  if (!missing.length) return true;
  missingPart(t, missing.join('; '));
  return false;
}

/** A cgroup instance of this test alone, swept and removed at its end. */
export function testCgroups(t: Test, limits: SandboxLimits = LIMITS): Cgroups {
  const cgroups = Cgroups.open(limits, { instance: `test-${process.pid}-${randomUUID().slice(0, 8)}` });
  t.teardown(() => cgroups.close());
  return cgroups;
}

/** The modes this host can actually run (probed, like Twinbox does at start). */
export function runnableModes(limits: SandboxLimits = LIMITS): IsolationMode[] {
  const modes: IsolationMode[] = [];
  const cgroups = Cgroups.open(limits, { instance: `modes-${process.pid}` });
  try {
    const { isolation } = probeIsolation('auto', limits, { cgroups });
    if (isolation.mode === 'bubblewrap-userns') modes.push('bubblewrap-userns', 'bubblewrap');
    else if (isolation.mode === 'bubblewrap') modes.push('bubblewrap');
    modes.push('process-group');
  } finally {
    void cgroups.close();
  }
  return modes;
}

/**
 * The bubblewrap modes this host runs, asserting there is at least one: with bubblewrap installed but
 * failing its probe, a loop over none would pass without testing anything.
 */
export function bubblewrapModes(t: Test, limits: SandboxLimits = LIMITS): IsolationMode[] {
  const modes = runnableModes(limits).filter((mode) => mode !== 'process-group');
  t.ok(modes.length > 0, `bubblewrap runs on this host (modes: ${modes.join(', ') || 'none'})`);
  return modes;
}

export function isolationFor(t: Test, mode: IsolationMode, limits: SandboxLimits = LIMITS): Isolation {
  return createIsolation(mode, limits, { cgroups: testCgroups(t, limits) });
}

export async function scratch(t: Test, prefix = 'twinbox-sec-'): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

export const sandboxId = () => `sb-${randomUUID()}`;

export interface StepResult {
  ok: boolean;
  error?: string;
  /** What the command printed (Twinbox's own `[twinbox ...]` lines left out: they quote the command). */
  output: string;
  wallMs: number;
}

const commandOutput = (log: LogSink) =>
  log
    .text()
    .split('\n')
    .filter((line) => !line.startsWith('[twinbox '))
    .join('\n');

/** Runs one command of a sandbox to its end through runStep, with the real isolation. */
export async function runIn(
  isolation: Isolation,
  spec: Partial<ExecSpec> & { command: string; cwd: string; sandboxId: string },
  env: Record<string, string> = { PATH: '/usr/bin:/bin' },
  timeoutMs = 60_000,
): Promise<StepResult> {
  const log = new LogSink(join(tmpdir(), `twinbox-step-${randomUUID()}.log`), 4 * MiB, 8 * MiB);
  const began = Date.now();
  try {
    await runStep('test', { memoryBytes: 1024 * MiB, ...spec }, env, isolation, log, { timeoutMs });
    return { ok: true, output: commandOutput(log), wallMs: Date.now() - began };
  } catch (error) {
    return {
      ok: false,
      error: (error as Error).message,
      output: commandOutput(log),
      wallMs: Date.now() - began,
    };
  } finally {
    await log.close();
    await rm(log.path, { force: true });
  }
}

/** Starts a command and resolves once its output matches `ready`; killed and cleaned up at the test's end. */
export async function startIn(
  t: Test,
  isolation: Isolation,
  spec: Partial<ExecSpec> & { command: string; cwd: string; sandboxId: string },
  ready: RegExp,
  env: Record<string, string> = { PATH: '/usr/bin:/bin' },
): Promise<{ proc: GroupProcess; log: LogSink }> {
  const log = new LogSink(join(tmpdir(), `twinbox-step-${randomUUID()}.log`), 4 * MiB, 8 * MiB);
  const proc = spawnGroup({ memoryBytes: 1024 * MiB, ...spec }, env, isolation, log);
  t.teardown(async () => {
    await proc.kill(100);
    await isolation.release(spec.sandboxId);
    await log.close();
    await rm(log.path, { force: true });
  });
  const deadline = Date.now() + 30_000;
  let exited = false;
  void proc.exited.then(() => (exited = true));
  while (!ready.test(log.text())) {
    if (exited || Date.now() > deadline)
      throw new Error(`never became ready (${exited ? 'exited' : 'timeout'}): ${log.text()}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return { proc, log };
}
