import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { TRUSTED_ENV } from './trusted-executables.ts';
import { environmentScript, type ExecSpec, type Isolation } from './isolation.ts';
import type { LogSink } from './logs.ts';

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** A command running as its own process group. */
export interface GroupProcess {
  readonly pid: number;
  readonly exited: Promise<Exit>;
  /**
   * SIGTERM to the command and what it started (not to its wrappers, which must outlive it), SIGKILL to
   * the whole group after `graceMs`; resolves once the leader has exited and the group is gone.
   */
  kill(graceMs?: number): Promise<void>;
}

/** True while any process of group `pgid` is alive (a zombie, dead but not yet reaped, is not). */
export function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
  // Killed processes of a sandbox are reparented to the host's init, which may reap them seconds later
  // (1.6 s per pod on the CI machines): they hold nothing but a pid, so a stop need not wait for them.
  return livingMember(pgid);
}

/** Is any process of group `pgid` not a zombie? Reads /proc; true where /proc cannot tell. */
function livingMember(pgid: number): boolean {
  const members = livingMembers(pgid);
  return members === undefined || members.length > 0;
}

/** The pids of group `pgid` that are not zombies; undefined where /proc cannot be read. */
function livingMembers(pgid: number): number[] | undefined {
  let names: string[];
  try {
    names = readdirSync('/proc');
  } catch {
    return undefined;
  }
  const members: number[] = [];
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${name}/stat`, 'utf8');
    } catch {
      continue; // exited meanwhile
    }
    // After the command's name: state, ppid, pgrp.
    const [state, , pgrp] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(pgrp) === pgid && state !== 'Z' && state !== 'X') members.push(Number(name));
  }
  return members;
}

function cmdlineOf(pid: number): string | undefined {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return undefined;
  }
}

/**
 * SIGTERM to the command of a group, not to what wraps it. Signalled with the rest, the wrappers end
 * before the command can stop gracefully: the outer bwrap has no SIGTERM handler, so it dies at once,
 * and --die-with-parent then SIGKILLs its namespace, the app with it; the shell that runs the command
 * dies too, and its exit (the namespace's last child, or the group's leader) ends the rest the same way.
 * Spared: the group's leader under bubblewrap (the outer bwrap) and the wrapping shell, known by its exact
 * argv (`shell`, NUL-terminated). The namespace's init needs no sparing: the kernel drops a signal it has
 * no handler for. An app the shell exec'd has another argv, so it is signalled. Where /proc cannot
 * tell, the whole group gets it, as before.
 */
function terminateCommand(pgid: number, spareLeader: boolean, shell: string | undefined): void {
  const members = livingMembers(pgid);
  if (!members) return signalGroup(pgid, 'SIGTERM');
  for (const pid of members) {
    if (spareLeader && pid === pgid) continue;
    if (shell !== undefined && cmdlineOf(pid) === shell) continue;
    try {
      process.kill(pid, 'SIGTERM');
    } catch {
      // exited meanwhile
    }
  }
}

/**
 * SIGKILLs a group until none of it is left: under bubblewrap the processes inside the namespace die a
 * moment after the leader (through --die-with-parent), and "torn down" must mean gone.
 */
export async function reapGroup(pgid: number, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (groupAlive(pgid) && Date.now() < deadline) {
    signalGroup(pgid, 'SIGKILL');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // ESRCH: the group is already gone.
  }
}

/**
 * Spawns `spec` confined by `isolation`, detached (a new session and process group, so one signal reaches
 * the app and everything it forked), with exactly `env` as its environment, output into `log`. The
 * programs outside the sandbox run with Twinbox's fixed environment; `env` goes to the sandboxed shell as
 * a script on its stdin (see Isolation.wrap). Throws when the sandbox's cgroup cannot be made.
 */
export function spawnGroup(
  spec: ExecSpec,
  env: Record<string, string>,
  isolation: Isolation,
  log: LogSink,
): GroupProcess {
  const [file, ...args] = isolation.wrap(spec);
  const child = spawn(file!, args, {
    cwd: spec.chdir ?? spec.cwd,
    env: { ...TRUSTED_ENV },
    detached: true,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  // EPIPE when the command fails before its shell reads: the exit code tells the story.
  child.stdin.on('error', () => {});
  child.stdin.end(environmentScript(env));
  child.stdout.on('data', (chunk: Buffer) => log.write(chunk));
  child.stderr.on('data', (chunk: Buffer) => log.write(chunk));
  const exited = new Promise<Exit>((resolve) => {
    child.once('error', (error) => {
      log.note(`could not start: ${error.message}`);
      resolve({ code: 127, signal: null });
    });
    child.once('exit', (code, signal) => {
      // Whatever the leader left behind in its group goes with it.
      if (child.pid) signalGroup(child.pid, 'SIGKILL');
      // Output still in the pipes belongs in the log before anyone reads it; a process that escaped the
      // group could hold them open forever, hence the bound.
      const done = () => resolve({ code, signal });
      const timer = setTimeout(done, 500);
      child.once('close', () => {
        clearTimeout(timer);
        done();
      });
    });
  });
  const pid = child.pid ?? -1;
  // The wrapping shell's argv (Isolation.wrap ends with it in every mode), as /proc/<pid>/cmdline shows it.
  const tail = args.slice(-3);
  const shell = tail[0] === '/bin/sh' && tail[1] === '-c' ? `${tail.join('\0')}\0` : undefined;
  return {
    pid,
    exited,
    async kill(graceMs = 3000) {
      if (pid <= 0) return;
      terminateCommand(pid, isolation.name === 'bubblewrap', shell);
      const timer = setTimeout(() => signalGroup(pid, 'SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
      await reapGroup(pid);
    },
  };
}

/** Runs a step to its end; rejects with a Build-failed style message naming the command. */
export async function runStep(
  label: string,
  spec: ExecSpec,
  env: Record<string, string>,
  isolation: Isolation,
  log: LogSink,
  opts: { timeoutMs: number; signal?: AbortSignal; onStart?: (p: GroupProcess) => void },
): Promise<void> {
  log.note(`${label}: ${spec.command}`);
  const proc = spawnGroup(spec, env, isolation, log);
  opts.onStart?.(proc);
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    void proc.kill();
  }, opts.timeoutMs);
  const abort = () => void proc.kill(500);
  opts.signal?.addEventListener('abort', abort);
  try {
    const exit = await proc.exited;
    if (opts.signal?.aborted) throw new Error('deploy cancelled');
    if (timedOut)
      throw new Error(`\`${spec.command}\` did not finish within ${Math.round(opts.timeoutMs / 1000)} s`);
    if (exit.code !== 0)
      throw new Error(
        `\`${spec.command}\` ${exit.code !== null ? `exited with code ${exit.code}` : `was killed by ${exit.signal}`}`,
      );
  } finally {
    clearTimeout(timer);
    opts.signal?.removeEventListener('abort', abort);
  }
}

/** Start time of a process in clock ticks since boot (field 22 of /proc/<pid>/stat); tells pid reuse apart. */
function startTimeOf(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

/**
 * Pid files of running process groups, one per sandbox, so that a Twinbox that died without cleaning up
 * can kill what it left behind when it starts again, and never a process that merely reused the pid.
 */
export class PidFiles {
  constructor(private readonly dir: string) {}

  async record(sandboxId: string, pid: number): Promise<void> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    await writeFile(this.pathOf(sandboxId), JSON.stringify({ pgid: pid, start: startTimeOf(pid) ?? null }), {
      mode: 0o600,
    });
  }

  async remove(sandboxId: string): Promise<void> {
    await rm(this.pathOf(sandboxId), { force: true });
  }

  /** Kills the groups in every pid file left by an earlier run; returns the sandbox ids that had one. */
  async killLeftovers(): Promise<string[]> {
    // None there yet (or unreadable): nothing left to find.
    const names = await readdir(this.dir).catch((): string[] => []);
    const found: string[] = [];
    for (const name of names.filter((n) => n.endsWith('.pid'))) {
      const id = decodeURIComponent(name.slice(0, -4));
      await this.killRecorded(id);
      found.push(id);
    }
    return found;
  }

  /** Kills the group recorded for one sandbox (if it is still the same process) and removes the file. */
  async killRecorded(sandboxId: string): Promise<void> {
    try {
      const { pgid, start } = JSON.parse(await readFile(this.pathOf(sandboxId), 'utf8')) as {
        pgid: number;
        start: string | null;
      };
      const current = startTimeOf(pgid);
      // The leader may be gone while its group lives on; only a different live process with that pid is spared.
      if (current === undefined || current === start) await reapGroup(pgid);
    } catch {
      // no file, or not ours to read: nothing to kill
    }
    await this.remove(sandboxId);
  }

  private pathOf(sandboxId: string): string {
    return join(this.dir, `${encodeURIComponent(sandboxId)}.pid`);
  }
}
