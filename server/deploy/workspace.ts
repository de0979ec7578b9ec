import { execFile } from 'node:child_process';
import { readFileSync, realpathSync } from 'node:fs';
import { mkdir, readdir, rm } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { HELPER_ENV, helpers } from './helpers.ts';

const run = promisify(execFile);

export interface Workspace {
  dir: string;
  /** True when `dir` is a tmpfs of `bytes`: a write past it fails with ENOSPC. */
  enforced: boolean;
  /** Why the cap is not enforced, when it is not. */
  reason?: string;
}

/** Mount points in this mount namespace (mountinfo escapes spaces and the like as octal). */
function mountPoints(): string[] {
  let text = '';
  try {
    text = readFileSync('/proc/self/mountinfo', 'utf8');
  } catch {
    return [];
  }
  return text
    .split('\n')
    .map((line) => line.split(' ')[4])
    .filter((field): field is string => Boolean(field))
    .map((field) => field.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8))));
}

function canonical(dir: string): string {
  try {
    return realpathSync(dir);
  } catch {
    return resolve(dir);
  }
}

export function isMountPoint(dir: string): boolean {
  return mountPoints().includes(canonical(dir));
}

/**
 * A fresh, empty workspace at `dir` (mode 0700) holding at most `bytes`: a tmpfs of that size (nosuid,
 * nodev; an inode per KiB, so empty files cannot exhaust the kernel either) where Twinbox may mount, that
 * is as root. Elsewhere a plain directory, with `enforced: false` and the reason. What the sandbox writes
 * there counts as its memory too (tmpfs pages are charged to the writer's memory cgroup), so the
 * sandbox's memory limit bounds it as well. Anything already at `dir` is removed first.
 */
export async function createWorkspace(dir: string, bytes: number): Promise<Workspace> {
  await removeWorkspace(dir);
  await mkdir(dirname(dir), { recursive: true, mode: 0o700 });
  await mkdir(dir, { mode: 0o700 });
  const mount = helpers().mount;
  if (!mount) return { dir, enforced: false, reason: '`mount` is not installed' };
  if (process.getuid?.() !== 0)
    return { dir, enforced: false, reason: 'Twinbox is not root, so it cannot mount a size-limited tmpfs' };
  const size = Math.max(4096, Math.floor(bytes));
  const inodes = Math.max(4096, Math.floor(size / 1024));
  try {
    await run(
      mount,
      [
        '-t',
        'tmpfs',
        '-o',
        `size=${size},nr_inodes=${inodes},mode=0700,nosuid,nodev`,
        'twinbox-workspace',
        dir,
      ],
      { env: HELPER_ENV },
    );
    return { dir, enforced: true };
  } catch (error) {
    const stderr = ((error as { stderr?: string }).stderr ?? '').trim();
    return { dir, enforced: false, reason: `mounting a tmpfs failed: ${stderr || (error as Error).message}` };
  }
}

/**
 * Unmounts (lazily when something still holds it open) and removes a workspace. Stop the sandbox's
 * processes first (Isolation.release): a lazy unmount of a busy tmpfs frees its memory only once they exit.
 */
export async function removeWorkspace(dir: string): Promise<void> {
  const umount = helpers().umount;
  // A workspace made twice without removal has two mounts stacked: take them all off.
  for (let i = 0; umount && i < 16 && isMountPoint(dir); i++) {
    try {
      await run(umount, [canonical(dir)], { env: HELPER_ENV });
    } catch {
      await run(umount, ['-l', canonical(dir)], { env: HELPER_ENV }).catch(() => {});
    }
  }
  if (isMountPoint(dir)) throw new Error(`could not unmount the workspace ${dir}`);
  await rm(dir, { recursive: true, force: true, maxRetries: 3 });
}

/**
 * Removes the workspaces under `parentDir` a previous run left, except those named in `keep` (sandboxes
 * to resume); returns the names removed.
 */
export async function sweepWorkspaces(
  parentDir: string,
  keep: ReadonlySet<string> = new Set(),
): Promise<string[]> {
  let names: string[];
  try {
    names = await readdir(parentDir);
  } catch {
    return [];
  }
  const orphans = names.filter((name) => !keep.has(name));
  for (const name of orphans) await removeWorkspace(join(parentDir, name));
  return orphans;
}
