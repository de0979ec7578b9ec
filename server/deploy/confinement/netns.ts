import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
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

/** The host's own range of ephemeral ports (`ip_local_port_range`), where a `PORT=0` listener lands. */
export function hostEphemeralRange(): [number, number] {
  try {
    const [low, high] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8')
      .trim()
      .split(/\s+/)
      .map(Number);
    if (Number.isInteger(low) && Number.isInteger(high)) return [low!, high!];
  } catch {
    // Not Linux's /proc: Linux's default.
  }
  return [32768, 60999];
}

/**
 * The ephemeral ports inside a sandbox's namespace: a range apart from the host's. Inside, the pod's
 * guard listens on the public URLs' port (0.0.0.0), which is Twinbox's own port on the host, often one
 * the host's kernel picked from its ephemeral range (`PORT=0`). Had a socket inside already taken that
 * number as its own ephemeral port (a connection's local end, a listener on port 0), that listen would
 * fail with EADDRINUSE and the deploy with it: seen once in a full test run. Above the host's range when
 * 1,000 ports fit there, else below it; undefined (the default kept) when neither fits.
 */
export function namespaceEphemeralRange([low, high] = hostEphemeralRange()): [number, number] | undefined {
  if (65535 - high >= 1000) return [high + 1, 65535];
  if (low - 1024 >= 1000) return [1024, low - 1];
  return undefined;
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
 * ports start at 0 inside, so the pod (an unprivileged user) can serve DNS on port 53. Its ephemeral ports
 * are a range apart from the host's (namespaceEphemeralRange).
 */
export class NetworkNamespaces {
  /** `tb-<instance>-`: a Twinbox sweeps only its own leftovers, never another's live sandboxes. */
  readonly prefix: string;
  /** Inside each namespace, its ephemeral ports (namespaceEphemeralRange). */
  readonly ephemeral = namespaceEphemeralRange();

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

  /**
   * One program run from this process (a shell), which runs the four steps: each run forks this process
   * first, 4-11 ms of its event loop blocked each time on 2 cores with Twinbox's memory, and the first
   * spare pod's namespace is made while the first deploy may already wait for it. The name, path and
   * ports are the script's arguments, never part of its text.
   */
  async create(name: string): Promise<string> {
    const { ip, nsenter, sh } = this.tools;
    const script = [
      'set -e',
      '"$1" netns add "$3"',
      '"$1" -n "$3" link set lo up',
      '"$1" -n "$3" route add local 0.0.0.0/0 dev lo',
      // In the namespace: its own sysctls. $5 is empty or the ephemeral range.
      `"$2" --net="$4" -- "$0" -c 'echo 0 > /proc/sys/net/ipv4/ip_unprivileged_port_start && ` +
        `if [ -n "$1" ]; then echo "$1" > /proc/sys/net/ipv4/ip_local_port_range; fi' "$0" "$5"`,
    ].join('\n');
    try {
      await run(sh, [
        '-c',
        script,
        sh,
        ip,
        nsenter,
        name,
        this.pathOf(name),
        this.ephemeral?.join(' ') ?? '',
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
