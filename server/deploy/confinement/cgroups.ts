import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

export type CgroupVersion = 'v2' | 'v1' | 'none';

/** What one sandbox may use in total, across all its processes and steps. */
export interface CgroupLimits {
  /** Processes (and threads) at once. */
  pids: number;
  /** CPU time as a hard quota, in cores (0.25: a quarter of one core). */
  cpus: number;
  /** Memory including page cache and tmpfs pages it writes; no swap. */
  memoryBytes: number;
}

/** A sandbox's use so far, read from its cgroup. */
export interface CgroupUsage {
  cpuUsec?: number;
  pids?: number;
  /** The most processes at once so far, where the kernel reports it (pids.peak). */
  pidsPeak?: number;
  memoryBytes?: number;
  /** The highest memory use seen (v1 memory.max_usage_in_bytes, v2 memory.peak where the kernel has it). */
  memoryPeakBytes?: number;
  /** Processes the OOM killer killed at the sandbox's memory limit (oom_kill of memory.oom_control / memory.events). */
  oomKills?: number;
}

export interface CgroupsOptions {
  /**
   * Separates Twinboxes sharing a host (several data directories, parallel tests): sweeps and releases
   * touch only `twinbox/<instance>/`. Derive it from the data directory so a restart finds its leftovers.
   */
  instance?: string;
  /** Where the cgroup file systems are mounted; tests point it elsewhere. */
  root?: string;
  /** Contents of /proc/self/cgroup and /proc/self/mountinfo; read from /proc when absent. */
  selfCgroup?: string;
  mountinfo?: string;
}

const PERIOD_US = 100_000;
const V2_CONTROLLERS = ['pids', 'memory', 'cpu'];
/** v1 hierarchies a sandbox is put in; cpuacct only to measure, so it is optional. */
const V1_REQUIRED = ['pids', 'memory', 'cpu'];
const V1_OPTIONAL = ['cpuacct'];

const SAFE_NAME = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$/;

export function assertCgroupName(name: string): void {
  if (!SAFE_NAME.test(name)) throw new Error(`not a usable cgroup name: ${JSON.stringify(name)}`);
}

interface Hierarchy {
  /** v1 controllers of this mount, or the v2 controllers Twinbox uses. */
  controllers: string[];
  /** `<own cgroup>/twinbox/<instance>` in this hierarchy. */
  parent: string;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function read(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return undefined;
  }
}

function readNumber(path: string): number | undefined {
  const text = read(path)?.trim();
  return text !== undefined && /^\d+$/.test(text) ? Number(text) : undefined;
}

function keyed(path: string, key: string): number | undefined {
  const line = read(path)
    ?.split('\n')
    .find((l) => l.startsWith(`${key} `));
  return line ? Number(line.split(' ')[1]) : undefined;
}

function errorText(error: unknown): string {
  return (error as Error).message ?? String(error);
}

/** Mountinfo escapes space, tab, newline and backslash as octal. */
function unescapeMount(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8)));
}

interface Mount {
  root: string;
  mountpoint: string;
  fstype: string;
  superOptions: string[];
}

function parseMountinfo(text: string): Mount[] {
  const mounts: Mount[] = [];
  for (const line of text.split('\n')) {
    const dash = line.indexOf(' - ');
    if (dash < 0) continue;
    const head = line.slice(0, dash).split(' ');
    const tail = line.slice(dash + 3).split(' ');
    mounts.push({
      root: unescapeMount(head[3] ?? '/'),
      mountpoint: unescapeMount(head[4] ?? ''),
      fstype: tail[0] ?? '',
      superOptions: (tail[2] ?? '').split(','),
    });
  }
  return mounts;
}

/** A cgroup path as seen in /proc/self/cgroup, made relative to what the mount shows. */
function underMount(mount: Mount, cgroupPath: string): string {
  if (mount.root === '/') return cgroupPath;
  if (cgroupPath === mount.root || cgroupPath.startsWith(`${mount.root}/`))
    return cgroupPath.slice(mount.root.length) || '/';
  return '/';
}

/**
 * One cgroup per sandbox, shared by all its steps (install, build, app): process count, memory without
 * swap, and a hard CPU quota. v2 when the host has a unified hierarchy (`<root>/cgroup.controllers`), v1
 * otherwise. Sandbox cgroups live under `<Twinbox's own cgroup>/twinbox/<instance>/<sandbox id>` in each
 * hierarchy, so Twinbox's own limits (systemd unit, container) still bound its sandboxes.
 */
export class Cgroups {
  private constructor(
    readonly version: CgroupVersion,
    private readonly hierarchies: Hierarchy[],
    private readonly limits: CgroupLimits,
    /** Why cgroups are not used, when version is 'none'. */
    readonly reason?: string,
  ) {}

  /** Finds and prepares the hierarchies; never throws: when cgroups cannot be used, version is 'none'. */
  static open(limits: CgroupLimits, opts: CgroupsOptions = {}): Cgroups {
    const instance = opts.instance ?? 'default';
    const none = (reason: string) => new Cgroups('none', [], limits, reason);
    try {
      assertCgroupName(instance);
      const root = opts.root ?? '/sys/fs/cgroup';
      const selfCgroup = opts.selfCgroup ?? read('/proc/self/cgroup') ?? '';
      const hierarchies = existsSync(join(root, 'cgroup.controllers'))
        ? [openV2(root, selfCgroup, instance)]
        : openV1(opts.mountinfo ?? read('/proc/self/mountinfo') ?? '', selfCgroup, instance);
      const cgroups = new Cgroups(
        existsSync(join(root, 'cgroup.controllers')) ? 'v2' : 'v1',
        hierarchies,
        limits,
      );
      // A throwaway sandbox cgroup proves the limits can be written, not just the directories made.
      const probe = `probe-${process.pid}`;
      try {
        cgroups.create(probe);
      } finally {
        try {
          cgroups.removeDirs(probe);
        } catch {
          // an empty cgroup left behind is harmless; the next sweep takes it
        }
      }
      return cgroups;
    } catch (error) {
      return none(errorText(error));
    }
  }

  /**
   * This instance's parent cgroup in each hierarchy (`<own cgroup>/twinbox/<instance>`): what the host
   * registry records, so a later Twinbox can release them if this one dies (leftovers.ts).
   */
  get parents(): string[] {
    return this.hierarchies.map((h) => h.parent);
  }

  /** The sandbox's cgroup directory in each hierarchy (whether or not it exists). */
  dirs(sandboxId: string): string[] {
    assertCgroupName(sandboxId);
    return this.hierarchies.map((h) => join(h.parent, sandboxId));
  }

  /**
   * Creates the sandbox's cgroup with its limits (idempotent: a later step of the same sandbox joins the
   * same cgroup) and returns the `cgroup.procs` files a process writes its pid to, to join it. Empty when
   * cgroups are not in use. Throws when they are but the cgroup cannot be made: a step must never run
   * unlimited because of it.
   */
  create(sandboxId: string): string[] {
    if (this.version === 'none') return [];
    const dirs = this.dirs(sandboxId);
    this.hierarchies.forEach((h, i) => {
      const dir = dirs[i]!;
      mkdirSync(dir, { recursive: true });
      if (this.version === 'v2') {
        writeFileSync(join(dir, 'pids.max'), String(this.limits.pids));
        writeFileSync(join(dir, 'memory.max'), String(this.limits.memoryBytes));
        if (existsSync(join(dir, 'memory.swap.max'))) writeFileSync(join(dir, 'memory.swap.max'), '0');
        writeFileSync(join(dir, 'cpu.max'), `${quotaUs(this.limits.cpus)} ${PERIOD_US}`);
        return;
      }
      if (h.controllers.includes('pids')) writeFileSync(join(dir, 'pids.max'), String(this.limits.pids));
      if (h.controllers.includes('memory')) {
        writeFileSync(join(dir, 'memory.limit_in_bytes'), String(this.limits.memoryBytes));
        // Without this, memory past the limit goes to swap instead of failing (when swap accounting is on).
        if (existsSync(join(dir, 'memory.memsw.limit_in_bytes')))
          writeFileSync(join(dir, 'memory.memsw.limit_in_bytes'), String(this.limits.memoryBytes));
      }
      if (h.controllers.includes('cpu')) {
        writeFileSync(join(dir, 'cpu.cfs_period_us'), String(PERIOD_US));
        writeFileSync(join(dir, 'cpu.cfs_quota_us'), String(quotaUs(this.limits.cpus)));
      }
    });
    return dirs.map((dir) => join(dir, 'cgroup.procs'));
  }

  /** Pids in the sandbox's cgroup(s) right now. */
  pids(sandboxId: string): number[] {
    const found = new Set<number>();
    for (const dir of this.dirs(sandboxId))
      for (const line of (read(join(dir, 'cgroup.procs')) ?? '').split('\n'))
        if (/^\d+$/.test(line)) found.add(Number(line));
    return [...found];
  }

  /**
   * Kills every process still in the sandbox's cgroup (SIGKILL, again until none is left: a process may
   * fork while it is being killed) and removes the cgroup directories. Resolves false if something was
   * still there after `timeoutMs`.
   */
  async release(sandboxId: string, timeoutMs = 10_000): Promise<boolean> {
    if (this.version === 'none') return true;
    const dirs = this.dirs(sandboxId).filter((dir) => existsSync(dir));
    if (!dirs.length) return true;
    const deadline = Date.now() + timeoutMs;
    if (this.version === 'v2' && existsSync(join(dirs[0]!, 'cgroup.kill'))) {
      try {
        writeFileSync(join(dirs[0]!, 'cgroup.kill'), '1');
      } catch {
        // older kernel semantics: the loop below does it
      }
    }
    for (;;) {
      const pids = this.pids(sandboxId);
      if (!pids.length) break;
      if (Date.now() > deadline) return false;
      for (const pid of pids) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
      await sleep(10);
    }
    // rmdir can fail with EBUSY for a moment after the last task exits.
    for (;;) {
      try {
        this.removeDirs(sandboxId);
        return true;
      } catch (error) {
        if (Date.now() > deadline) throw error;
        await sleep(20);
      }
    }
  }

  /**
   * Releases every sandbox cgroup of this instance: after a crash, what the previous run left. Returns
   * the sandbox ids found.
   */
  async sweep(): Promise<string[]> {
    const ids = new Set<string>();
    for (const h of this.hierarchies) {
      let names: string[] = [];
      try {
        names = readdirSync(h.parent, { withFileTypes: true })
          .filter((e) => e.isDirectory() && SAFE_NAME.test(e.name))
          .map((e) => e.name);
      } catch {
        // no parent yet
      }
      for (const name of names) ids.add(name);
    }
    for (const id of ids) await this.release(id);
    return [...ids];
  }

  /**
   * Sweeps, then removes this instance's parent cgroups (Twinbox shutdown, tests): a stop leaves no
   * `twinbox/<instance>` directory behind. The shared `twinbox/` directory stays: other instances make
   * theirs in it at any moment, and an empty directory holds nothing.
   */
  async close(): Promise<void> {
    await this.sweep();
    for (const h of this.hierarchies) {
      try {
        rmdirSync(h.parent);
      } catch {
        // gone already, or a sandbox cgroup came back meanwhile (the next start's sweep takes it)
      }
    }
  }

  usage(sandboxId: string): CgroupUsage | undefined {
    if (this.version === 'none') return undefined;
    const dirs = this.dirs(sandboxId);
    if (this.version === 'v2') {
      const dir = dirs[0]!;
      return {
        cpuUsec: keyed(join(dir, 'cpu.stat'), 'usage_usec'),
        pids: readNumber(join(dir, 'pids.current')),
        pidsPeak: readNumber(join(dir, 'pids.peak')),
        memoryBytes: readNumber(join(dir, 'memory.current')),
        memoryPeakBytes: readNumber(join(dir, 'memory.peak')),
        oomKills: keyed(join(dir, 'memory.events'), 'oom_kill'),
      };
    }
    const usage: CgroupUsage = {};
    this.hierarchies.forEach((h, i) => {
      const dir = dirs[i]!;
      if (h.controllers.includes('cpuacct')) {
        const ns = readNumber(join(dir, 'cpuacct.usage'));
        if (ns !== undefined) usage.cpuUsec = Math.round(ns / 1000);
      }
      if (h.controllers.includes('pids')) {
        usage.pids = readNumber(join(dir, 'pids.current'));
        usage.pidsPeak = readNumber(join(dir, 'pids.peak'));
      }
      if (h.controllers.includes('memory')) {
        usage.memoryBytes = readNumber(join(dir, 'memory.usage_in_bytes'));
        usage.memoryPeakBytes = readNumber(join(dir, 'memory.max_usage_in_bytes'));
        usage.oomKills = keyed(join(dir, 'memory.oom_control'), 'oom_kill');
      }
    });
    return usage;
  }

  private removeDirs(sandboxId: string): void {
    for (const dir of this.dirs(sandboxId)) {
      try {
        rmdirSync(dir);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      }
    }
  }
}

/**
 * Kills every process in the cgroups below `parent` and removes them, deepest first, then `parent` itself
 * unless `keepParent`. For the `twinbox/<instance>` cgroups of a Twinbox that is gone, named by path (its
 * entry in the host registry): they may sit under another cgroup than this process's own. Refuses any
 * directory that is not `.../twinbox/<name>`, so a damaged record can never take a cgroup of someone else.
 */
export async function releaseCgroupTree(
  parent: string,
  opts: { keepParent?: boolean; timeoutMs?: number } = {},
): Promise<{ cgroups: number; processes: number }> {
  if (basename(dirname(parent)) !== 'twinbox' || !SAFE_NAME.test(basename(parent)))
    throw new Error(`not a Twinbox instance cgroup: ${parent}`);
  if (!existsSync(parent)) return { cgroups: 0, processes: 0 };
  const deadline = Date.now() + (opts.timeoutMs ?? 10_000);
  const killed = new Set<number>();
  const dirs = subtree(parent);
  if (!opts.keepParent) dirs.push(parent);
  let removed = 0;
  for (const dir of dirs) {
    if (existsSync(join(dir, 'cgroup.kill'))) {
      try {
        writeFileSync(join(dir, 'cgroup.kill'), '1');
      } catch {
        // the loop below does it
      }
    }
    for (;;) {
      const pids = (read(join(dir, 'cgroup.procs')) ?? '').split('\n').filter((l) => /^\d+$/.test(l));
      if (!pids.length) break;
      if (Date.now() > deadline) throw new Error(`processes in ${dir} were still alive after SIGKILL`);
      for (const pid of pids) {
        killed.add(Number(pid));
        try {
          process.kill(Number(pid), 'SIGKILL');
        } catch {
          // already gone
        }
      }
      await sleep(10);
    }
    for (;;) {
      try {
        rmdirSync(dir);
        removed++;
        break;
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if (code === 'ENOENT') break;
        if (Date.now() > deadline) throw error;
        await sleep(20);
      }
    }
  }
  return { cgroups: removed, processes: killed.size };
}

/** Every cgroup below `dir`, children before their parents. */
function subtree(dir: string): string[] {
  const out: string[] = [];
  let entries: string[] = [];
  try {
    entries = readdirSync(dir, { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => e.name);
  } catch {
    return out;
  }
  for (const name of entries) {
    out.push(...subtree(join(dir, name)));
    out.push(join(dir, name));
  }
  return out;
}

function quotaUs(cpus: number): number {
  return Math.max(1000, Math.round(cpus * PERIOD_US));
}

function openV1(mountinfo: string, selfCgroup: string, instance: string): Hierarchy[] {
  const own = new Map<string, string>();
  for (const line of selfCgroup.split('\n')) {
    const match = /^\d+:([^:]*):(.*)$/.exec(line);
    if (match) for (const controller of match[1]!.split(',')) own.set(controller, match[2]!);
  }
  const hierarchies: Hierarchy[] = [];
  const seen = new Set<string>();
  for (const controller of [...V1_REQUIRED, ...V1_OPTIONAL]) {
    const mount = parseMountinfo(mountinfo).find(
      (m) => m.fstype === 'cgroup' && m.superOptions.includes(controller),
    );
    if (!mount) {
      if (V1_REQUIRED.includes(controller))
        throw new Error(`cgroup v1: no "${controller}" hierarchy is mounted`);
      continue;
    }
    if (seen.has(mount.mountpoint)) continue;
    seen.add(mount.mountpoint);
    const base = join(mount.mountpoint, underMount(mount, own.get(controller) ?? '/'));
    const parent = join(base, 'twinbox', instance);
    mkdirSync(parent, { recursive: true });
    hierarchies.push({
      controllers: [...V1_REQUIRED, ...V1_OPTIONAL].filter((c) => mount.superOptions.includes(c)),
      parent,
    });
  }
  return hierarchies;
}

/** Writes `+controller` for each missing one into `dir/cgroup.subtree_control`. */
function enableControllers(dir: string): void {
  const enabled = (read(join(dir, 'cgroup.subtree_control')) ?? '').trim().split(/\s+/);
  const missing = V2_CONTROLLERS.filter((c) => !enabled.includes(c));
  if (missing.length)
    writeFileSync(join(dir, 'cgroup.subtree_control'), missing.map((c) => `+${c}`).join(' '));
}

function openV2(root: string, selfCgroup: string, instance: string): Hierarchy {
  const line = selfCgroup.split('\n').find((l) => l.startsWith('0::'));
  const base = join(root, line ? line.slice(3) : '/');
  const available = (read(join(base, 'cgroup.controllers')) ?? '').trim().split(/\s+/);
  const unavailable = V2_CONTROLLERS.filter((c) => !available.includes(c));
  if (unavailable.length)
    throw new Error(`cgroup v2: ${unavailable.join(', ')} not delegated to ${base} (cgroup.controllers)`);
  try {
    enableControllers(base);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EBUSY') throw error;
    // "No internal processes": a cgroup that hands controllers to children may hold no process itself.
    // Twinbox moves itself into a leaf beside its sandboxes (as container runtimes do with their init).
    const leaf = join(base, 'twinbox-server');
    mkdirSync(leaf, { recursive: true });
    writeFileSync(join(leaf, 'cgroup.procs'), String(process.pid));
    try {
      enableControllers(base);
    } catch (again) {
      throw new Error(
        `cgroup v2: ${base} holds other processes, so it cannot delegate controllers; run Twinbox in a cgroup ` +
          `of its own (systemd: Delegate=yes). ${errorText(again)}`,
      );
    }
  }
  const twinbox = join(base, 'twinbox');
  mkdirSync(twinbox, { recursive: true });
  enableControllers(twinbox);
  const parent = join(twinbox, instance);
  mkdirSync(parent, { recursive: true });
  enableControllers(parent);
  return { controllers: V2_CONTROLLERS, parent };
}
