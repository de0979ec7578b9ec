import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Every namespace Twinbox makes is named `tb-<instance>-<slot>`. */
export const NETNS_PREFIX = 'tb-';

/** The prefix of one instance's namespaces (`tb-<first 8 of the instance>-`). */
export function netnsPrefixOf(instance: string): string {
  return `${NETNS_PREFIX}${instance.slice(0, 8)}-`;
}

/** Every named network namespace on the host (`ip netns list`), Twinbox's or not. */
export async function listNamespaces(ip: string): Promise<string[]> {
  const { stdout } = await run(ip, ['netns', 'list']).catch(() => ({ stdout: '' }));
  return stdout
    .split('\n')
    .map((line) => line.split(' ')[0] ?? '')
    .filter(Boolean);
}

/**
 * The processes in a namespace (`ip netns pids`); undefined when that cannot be told (the name is not a
 * namespace in this mount namespace, say), which callers must take as "in use".
 */
export async function namespacePids(ip: string, name: string): Promise<number[] | undefined> {
  try {
    const { stdout } = await run(ip, ['netns', 'pids', name]);
    return stdout
      .split('\n')
      .filter((line) => /^\d+$/.test(line))
      .map(Number);
  } catch {
    return undefined;
  }
}

/**
 * Kills whatever still runs in a namespace (SIGKILL) and deletes it: for namespaces whose Twinbox is
 * gone. Resolves how many processes it killed.
 */
export async function deleteNamespace(ip: string, name: string): Promise<number> {
  const pids = (await namespacePids(ip, name)) ?? [];
  for (const pid of pids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  await run(ip, ['netns', 'del', name]).catch(() => {});
  return pids.length;
}

export interface NetnsTools {
  ip: string;
  nsenter: string;
  sh: string;
}

/**
 * Network namespaces of sandboxes, made with iproute2 (`ip netns`, so they persist under /run/netns while
 * Twinbox restarts). Each has only a loopback device: no route leaves it. A `local` route makes every
 * address answer on that loopback, so the pod's guard sees a connection to any address, and unprivileged
 * ports start at 0 inside, so the pod (an unprivileged user) can serve DNS on port 53.
 */
export class NetworkNamespaces {
  /** `tb-<instance>-`: a Twinbox sweeps only its own leftovers, never another's live sandboxes. */
  readonly prefix: string;

  constructor(
    private readonly tools: NetnsTools,
    /** Tells Twinboxes on one host apart (a hash of the data directory); at most 8 characters are used. */
    instance: string,
  ) {
    this.prefix = netnsPrefixOf(instance);
  }

  /** The namespace of a pod slot. */
  nameOf(slot: string): string {
    return `${this.prefix}${slot}`;
  }

  pathOf(name: string): string {
    return `/run/netns/${name}`;
  }

  async create(name: string): Promise<string> {
    const { ip, nsenter, sh } = this.tools;
    await run(ip, ['netns', 'add', name]);
    try {
      await run(ip, ['-n', name, 'link', 'set', 'lo', 'up']);
      await run(ip, ['-n', name, 'route', 'add', 'local', '0.0.0.0/0', 'dev', 'lo']);
      await run(nsenter, [
        `--net=${this.pathOf(name)}`,
        '--',
        sh,
        '-c',
        'echo 0 > /proc/sys/net/ipv4/ip_unprivileged_port_start',
      ]);
    } catch (error) {
      await this.remove(name);
      throw error;
    }
    return this.pathOf(name);
  }

  async remove(name: string): Promise<void> {
    if (!existsSync(this.pathOf(name))) return;
    await run(this.tools.ip, ['netns', 'del', name]).catch(() => {});
  }

  /** Namespaces of ours that exist now (after a crash: the ones to sweep). */
  async list(): Promise<string[]> {
    return (await listNamespaces(this.tools.ip)).filter((name) => name.startsWith(this.prefix));
  }

  /** Can namespaces be made here? Tries one; the reason when not. */
  async probe(): Promise<string | undefined> {
    const name = `${this.prefix}probe-${process.pid}`;
    try {
      await this.create(name);
      return undefined;
    } catch (error) {
      return (error as Error & { stderr?: string }).stderr?.trim() || (error as Error).message;
    } finally {
      await this.remove(name);
    }
  }
}
