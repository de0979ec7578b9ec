import { execFile } from 'node:child_process';
import { createHash, randomUUID } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, readlinkSync, realpathSync } from 'node:fs';
import { mkdir, open, readdir, readFile, rename, rm, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Logger } from 'pino';
import { releaseCgroupTree } from './cgroups.ts';
import { mountPoints } from './mounts.ts';
import { findExecutable, TRUSTED_ENV, trustedExecutables } from './trusted-executables.ts';
import { deleteNamespace, listNamespaces, namespacePids, NETNS_PREFIX, netnsPrefixOf } from './netns.ts';

const run = promisify(execFile);

/**
 * Host-wide, like /run/netns beside it: every Twinbox on the machine, whatever its data directory, reads
 * and writes here. Under /run, so a reboot (which takes every namespace, mount and cgroup with it) starts
 * it empty on hosts where /run is a tmpfs; where it is not, a stale entry's owner is simply dead.
 */
export const HOST_REGISTRY_DIR = '/run/twinbox/instances';

/** What a Twinbox puts on the host that outlives it if it dies: enough for another Twinbox to remove it. */
export interface InstanceEntry {
  format: 1;
  /** The hash of the data directory's real path that names its namespaces and cgroups. */
  instance: string;
  data_dir: string;
  /** The owning process and its start time (/proc/<pid>/stat), so a reused pid is not taken for it. */
  pid: number;
  pid_start: string;
  netns_prefix: string;
  /** Its `twinbox/<instance>` cgroup in each hierarchy (they sit under its own cgroup, which may differ). */
  cgroups: string[];
  registered_at: string;
}

/** What a start's host sweep removed. */
export interface HostSweep {
  /** Instances (data directories gone, owners dead) whose leftovers went. */
  instances: string[];
  namespaces: string[];
  mounts: string[];
  loopDevices: string[];
  cgroups: number;
  processes: number;
}

/** Names the namespaces and cgroups of the Twinbox of a data directory (the same one at each start). */
export function instanceOf(dataDir: string): string {
  return createHash('sha256').update(realpathSync(dataDir)).digest('hex').slice(0, 16);
}

/** Field 22 of /proc/<pid>/stat (clock ticks since boot): with the pid, names one process for good. */
export function processStart(pid: number): string | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
  } catch {
    return undefined;
  }
}

function ownerAlive(entry: InstanceEntry): boolean {
  const start = processStart(entry.pid);
  return start !== undefined && start === entry.pid_start;
}

/** A path as the kernel shows it once its directory was removed ("<path> (deleted)"). */
function undeleted(path: string): string {
  return path.endsWith(' (deleted)') ? path.slice(0, -' (deleted)'.length) : path;
}

function under(path: string, dir: string): boolean {
  return undeleted(path).startsWith(`${dir}/`) || undeleted(path) === dir;
}

/** Mount points at or below `dir` in this mount namespace, deepest (latest) first. */
export function mountsUnder(dir: string): string[] {
  return mountPoints()
    .filter((point) => under(point, dir))
    .reverse();
}

/**
 * Unmounts everything at or below `dir` (lazily when busy), deepest first, and detaches the loop devices
 * whose image file lies below it. For a data directory being removed: the demo's Ctrl-C, and the
 * leftovers of a Twinbox that is gone. Resolves what it unmounted and detached.
 */
export async function unmountUnder(dir: string): Promise<{ mounts: string[]; loopDevices: string[] }> {
  const umount = trustedExecutables().umount;
  const mounts: string[] = [];
  for (let round = 0; umount && round < 4; round++) {
    const points = mountsUnder(dir);
    if (!points.length) break;
    for (const point of points) {
      const target = undeleted(point);
      try {
        await run(umount, [target], { env: TRUSTED_ENV });
      } catch {
        await run(umount, ['-l', target], { env: TRUSTED_ENV }).catch(() => {});
      }
      mounts.push(point);
    }
  }
  const loopDevices: string[] = [];
  const losetup = findExecutable('losetup');
  if (losetup) {
    const { stdout } = await run(losetup, ['--list', '--noheadings', '--raw', '--output', 'NAME,BACK-FILE'], {
      env: TRUSTED_ENV,
    }).catch(() => ({ stdout: '' }));
    for (const line of stdout.split('\n')) {
      const space = line.indexOf(' ');
      if (space < 0) continue;
      // --raw escapes spaces in the file name as \x20.
      const file = line
        .slice(space + 1)
        .replace(/\\x([0-9a-f]{2})/gi, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
      if (!under(file, dir)) continue;
      const device = line.slice(0, space);
      await run(losetup, ['--detach', device], { env: TRUSTED_ENV }).catch(() => {});
      loopDevices.push(device);
    }
  }
  return { mounts, loopDevices };
}

/** Processes whose working directory is at or below `dir` (also once it was removed). */
function processesIn(dir: string): number[] {
  const found: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      if (under(readlinkSync(`/proc/${name}/cwd`), dir)) found.push(Number(name));
    } catch {
      // gone, or not ours to read
    }
  }
  return found;
}

export interface HostRegistryOptions {
  instance: string;
  /** The data directory's real path. */
  dataDir: string;
  cgroups: string[];
  logger: Logger;
  /** Where entries live; HOST_REGISTRY_DIR unless a test says otherwise. */
  dir?: string;
  /**
   * Also remove empty `tb-` namespaces no entry names (default true). Off only for a registry that is not
   * the host's (a test's), which does not know the host's live Twinboxes.
   */
  unregisteredNamespaces?: boolean;
}

/**
 * The Twinboxes of this host, one file each (`<instance>.json`), so that a start can remove what an
 * earlier Twinbox left when its data directory is gone, which no start on that directory will ever do:
 * its namespaces (and what still runs in them), its cgroups (killing what is left in them), processes
 * working in the removed directory, mounts and loop devices below it. A Twinbox whose owner process is
 * alive is never touched, whatever state its directory is in; one whose directory still exists is left to
 * the next start on that directory (its `ready` sandboxes are kept for a resume).
 */
export class HostRegistry {
  private readonly dir: string;
  private registered = false;

  constructor(private readonly opts: HostRegistryOptions) {
    this.dir = opts.dir ?? HOST_REGISTRY_DIR;
  }

  private pathOf(instance: string): string {
    return join(this.dir, `${instance}.json`);
  }

  private async read(instance: string): Promise<InstanceEntry | undefined> {
    try {
      const entry = JSON.parse(await readFile(this.pathOf(instance), 'utf8')) as InstanceEntry;
      return entry.format === 1 && entry.instance === instance ? entry : undefined;
    } catch {
      return undefined;
    }
  }

  /** Every entry on the host; unreadable ones are skipped (a torn write is replaced by its owner). */
  async entries(): Promise<InstanceEntry[]> {
    const names = await readdir(this.dir).catch(() => [] as string[]);
    const entries: InstanceEntry[] = [];
    for (const name of names.filter((n) => /^[0-9a-f]{1,64}\.json$/.test(n))) {
      const entry = await this.read(name.slice(0, -'.json'.length));
      if (entry) entries.push(entry);
    }
    return entries;
  }

  /**
   * At start, before this Twinbox makes any namespace or cgroup: sweeps the host (see the class), then
   * records this Twinbox. Never throws: where the registry cannot be written (not root), it says so and
   * the host sweep is skipped; the sweep of this instance's own leftovers still runs elsewhere.
   */
  async start(): Promise<HostSweep> {
    const sweep: HostSweep = {
      instances: [],
      namespaces: [],
      mounts: [],
      loopDevices: [],
      cgroups: 0,
      processes: 0,
    };
    try {
      await mkdir(this.dir, { recursive: true, mode: 0o700 });
    } catch (error) {
      this.opts.logger.warn(
        { err: error, dir: this.dir },
        'no host registry: leftovers of removed data directories will not be swept',
      );
      return sweep;
    }
    const entries = await this.entries();
    for (const entry of entries) {
      if (entry.instance === this.opts.instance) {
        // This data directory's previous run (the data-dir lock says it is not running): its cgroups
        // may sit under another cgroup than ours (started from another shell or service).
        await this.releaseCgroups(entry, sweep, new Set(this.opts.cgroups));
        continue;
      }
      if (ownerAlive(entry) || existsSync(entry.data_dir)) continue;
      try {
        await this.sweepInstance(entry, sweep);
      } catch (error) {
        this.opts.logger.warn(
          { err: error, instance: entry.instance, data_dir: entry.data_dir },
          'could not remove all that a Twinbox of a removed data directory left',
        );
      }
    }
    if (this.opts.unregisteredNamespaces ?? true) await this.sweepUnregisteredNamespaces(entries, sweep);
    try {
      await this.register();
    } catch (error) {
      this.opts.logger.warn(
        { err: error, dir: this.dir },
        'could not record this Twinbox in the host registry: if it dies and its data directory is removed, nothing will sweep what it leaves',
      );
    }
    const total =
      sweep.namespaces.length +
      sweep.mounts.length +
      sweep.loopDevices.length +
      sweep.cgroups +
      sweep.processes;
    if (total)
      this.opts.logger.info(
        {
          instances: sweep.instances,
          namespaces: sweep.namespaces.length,
          mounts: sweep.mounts.length,
          loop_devices: sweep.loopDevices.length,
          cgroups: sweep.cgroups,
          processes: sweep.processes,
        },
        'removed what earlier Twinboxes left on this host',
      );
    return sweep;
  }

  /** A clean stop left nothing on the host: the entry goes with it. */
  async unregister(): Promise<void> {
    if (!this.registered) return;
    this.registered = false;
    const entry = await this.read(this.opts.instance);
    if (entry && entry.pid === process.pid) await rm(this.pathOf(this.opts.instance), { force: true });
  }

  private async register(): Promise<void> {
    const entry: InstanceEntry = {
      format: 1,
      instance: this.opts.instance,
      data_dir: this.opts.dataDir,
      pid: process.pid,
      pid_start: processStart(process.pid) ?? '',
      netns_prefix: netnsPrefixOf(this.opts.instance),
      cgroups: this.opts.cgroups,
      registered_at: new Date().toISOString(),
    };
    const path = this.pathOf(this.opts.instance);
    // Write-then-rename: a reader never sees half an entry.
    const tmp = `${path}.${randomUUID()}.tmp`;
    const file = await open(tmp, 'wx', 0o600);
    try {
      await file.writeFile(JSON.stringify(entry));
    } finally {
      await file.close();
    }
    await rename(tmp, path).catch(async (error: unknown) => {
      await unlink(tmp).catch(() => {});
      throw error;
    });
    this.registered = true;
  }

  private async releaseCgroups(entry: InstanceEntry, sweep: HostSweep, keep: ReadonlySet<string>) {
    for (const parent of entry.cgroups) {
      try {
        const released = await releaseCgroupTree(parent, { keepParent: keep.has(parent) });
        sweep.cgroups += released.cgroups;
        sweep.processes += released.processes;
      } catch (error) {
        this.opts.logger.warn({ err: error, cgroup: parent }, 'could not remove a leftover cgroup');
      }
    }
  }

  private async sweepInstance(entry: InstanceEntry, sweep: HostSweep): Promise<void> {
    // Read again right before: a Twinbox starting on that path now has replaced the entry with its own.
    const current = await this.read(entry.instance);
    if (!current || current.pid !== entry.pid || current.pid_start !== entry.pid_start) return;
    sweep.instances.push(entry.instance);
    const ip = trustedExecutables().ip;
    if (ip && entry.netns_prefix.startsWith(NETNS_PREFIX) && entry.netns_prefix.length > NETNS_PREFIX.length)
      for (const name of await listNamespaces(ip))
        if (name.startsWith(entry.netns_prefix)) {
          sweep.processes += await deleteNamespace(ip, name);
          sweep.namespaces.push(name);
        }
    await this.releaseCgroups(entry, sweep, new Set());
    // Without cgroups or namespaces (isolation off), pods and apps still work in the removed directory.
    if (entry.data_dir.startsWith('/') && entry.data_dir !== '/')
      for (const pid of processesIn(entry.data_dir)) {
        try {
          process.kill(pid, 'SIGKILL');
          sweep.processes++;
        } catch {
          // gone meanwhile
        }
      }
    if (entry.data_dir.startsWith('/') && entry.data_dir !== '/') {
      const { mounts, loopDevices } = await unmountUnder(entry.data_dir);
      sweep.mounts.push(...mounts);
      sweep.loopDevices.push(...loopDevices);
    }
    await rm(this.pathOf(entry.instance), { force: true });
  }

  /**
   * `tb-` namespaces no entry names (left by a Twinbox older than the registry): removed only when
   * nothing runs in them, since their owner may be alive. Namespaces of any registered instance, dead or
   * alive, are not this sweep's to take.
   */
  private async sweepUnregisteredNamespaces(entries: InstanceEntry[], sweep: HostSweep): Promise<void> {
    const ip = trustedExecutables().ip;
    if (!ip) return;
    const known = new Set([...entries.map((e) => e.netns_prefix), netnsPrefixOf(this.opts.instance)]);
    for (const name of await listNamespaces(ip)) {
      if (!name.startsWith(NETNS_PREFIX)) continue;
      if ([...known].some((prefix) => name.startsWith(prefix))) continue;
      // A registry entry written since the list above protects that instance too.
      if ((await this.entries()).some((e) => name.startsWith(e.netns_prefix))) continue;
      const pids = await namespacePids(ip, name);
      if (!pids || pids.length) continue;
      await deleteNamespace(ip, name);
      sweep.namespaces.push(name);
    }
  }
}
