import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import {
  HOST_REGISTRY_DIR,
  mountsUnder,
  type InstanceEntry,
} from '../../server/deploy/confinement/leftovers.ts';

/**
 * What a Twinbox has on the host, counted from the host's side (issue 20, part 2): its network
 * namespaces (`ip netns list`), mounts under its data directory (/proc/self/mountinfo), cgroup
 * directories (`twinbox/<instance>` and below, in every hierarchy) and processes (in those cgroups, in
 * those namespaces, or working in its data directory).
 */
export interface HostCounts {
  namespaces: string[];
  mounts: string[];
  cgroups: string[];
  processes: number[];
}

/** The registry entry a running Twinbox wrote (server/deploy/confinement/leftovers.ts), or undefined. */
export function registryEntry(instance: string): InstanceEntry | undefined {
  try {
    return JSON.parse(readFileSync(join(HOST_REGISTRY_DIR, `${instance}.json`), 'utf8')) as InstanceEntry;
  } catch {
    return undefined;
  }
}

/** The entry whose data directory is `dataDir` (a real path), if any. */
export function registryEntryFor(dataDir: string): InstanceEntry | undefined {
  const names = existsSync(HOST_REGISTRY_DIR) ? readdirSync(HOST_REGISTRY_DIR) : [];
  for (const name of names.filter((n) => n.endsWith('.json'))) {
    const entry = registryEntry(name.slice(0, -'.json'.length));
    if (entry?.data_dir === dataDir) return entry;
  }
  return undefined;
}

export function namespacesWith(prefix: string): string[] {
  // stderr: `ip` complains of names made in other mount namespaces (the multi-host test's); not ours.
  return execFileSync('ip', ['netns', 'list'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] })
    .split('\n')
    .map((line) => line.split(' ')[0] ?? '')
    .filter((name) => name.startsWith(prefix));
}

function pidsInNamespace(name: string): number[] {
  try {
    return execFileSync('ip', ['netns', 'pids', name], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    })
      .split('\n')
      .filter((line) => /^\d+$/.test(line))
      .map(Number);
  } catch {
    return [];
  }
}

function cgroupTree(dir: string): string[] {
  if (!existsSync(dir)) return [];
  const out = [dir];
  for (const entry of readdirSync(dir, { withFileTypes: true }))
    if (entry.isDirectory()) out.push(...cgroupTree(join(dir, entry.name)));
  return out;
}

function cwdUnder(dir: string): number[] {
  const found: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      const cwd = readlinkSync(`/proc/${name}/cwd`).replace(/ \(deleted\)$/, '');
      if (cwd === dir || cwd.startsWith(`${dir}/`)) found.push(Number(name));
    } catch {
      // gone
    }
  }
  return found;
}

/** Alive, not a zombie waiting for the host's init to reap it. */
function living(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}

/** Counts what the Twinbox of `entry` has on the host now (see HostCounts). */
export function hostCounts(entry: Pick<InstanceEntry, 'data_dir' | 'netns_prefix' | 'cgroups'>): HostCounts {
  const namespaces = namespacesWith(entry.netns_prefix);
  const cgroups = entry.cgroups.flatMap(cgroupTree);
  const processes = new Set<number>();
  for (const dir of cgroups) {
    let procs = '';
    try {
      procs = readFileSync(join(dir, 'cgroup.procs'), 'utf8');
    } catch {
      continue; // removed since it was listed
    }
    for (const line of procs.split('\n')) if (/^\d+$/.test(line)) processes.add(Number(line));
  }
  for (const name of namespaces) for (const pid of pidsInNamespace(name)) processes.add(pid);
  for (const pid of cwdUnder(entry.data_dir)) processes.add(pid);
  return {
    namespaces,
    mounts: mountsUnder(entry.data_dir),
    cgroups,
    processes: [...processes].filter(living),
  };
}

export const NOTHING: HostCounts = { namespaces: [], mounts: [], cgroups: [], processes: [] };

/**
 * The loop devices backed by `image`. The kernel names the backing file, and follows it when it is
 * renamed; it marks it "(deleted)" once it is unlinked.
 */
export function loopsOf(image: string): string[] {
  return readdirSync('/sys/block')
    .filter((name) => name.startsWith('loop'))
    .filter((name) => {
      try {
        return readFileSync(`/sys/block/${name}/loop/backing_file`, 'utf8').trim().startsWith(image);
      } catch {
        return false;
      }
    });
}
