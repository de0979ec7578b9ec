import { mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export class DataDirLockedError extends Error {
  constructor(dataDir: string, pid: number) {
    super(
      `Another Twinbox process (pid ${pid}) is already using the data directory ${dataDir}. ` +
        `Stop it, or point TWINBOX_DATA_DIR at another directory.`,
    );
    this.name = 'DataDirLockedError';
  }
}

export interface DataDirLock {
  release(): void;
}

/**
 * Takes the data directory for this process alone: the embedded store keeps its state in memory, so
 * two processes writing the same files would lose each other's writes. The lock is a pid file created
 * with O_EXCL; a pid file left by a process that no longer runs (kill -9, power loss) is taken over.
 */
export function lockDataDir(dataDir: string): DataDirLock {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const path = join(dataDir, 'twinbox.pid');
  // Our own pid in the file is a leftover (a restarted container is pid 1 again) unless this very
  // process holds the lock, which only the in-process registry can tell.
  if (heldHere.has(path)) throw new DataDirLockedError(dataDir, process.pid);
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      writeFileSync(path, String(process.pid), { flag: 'wx', mode: 0o600 });
      heldHere.add(path);
      return {
        release: () => {
          if (!heldHere.delete(path)) return;
          if (readPid(path) === process.pid) unlinkSync(path);
        },
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const holder = readPid(path);
    if (holder !== undefined && holder !== process.pid && isRunning(holder)) {
      throw new DataDirLockedError(dataDir, holder);
    }
    try {
      unlinkSync(path);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
  }
  throw new Error(`Could not take the lock file ${path}; another process keeps recreating it.`);
}

const heldHere = new Set<string>();

function readPid(path: string): number | undefined {
  try {
    const pid = Number.parseInt(readFileSync(path, 'utf8').trim(), 10);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}
