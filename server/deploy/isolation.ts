import { spawnSync } from 'node:child_process';
import { existsSync, lstatSync, readlinkSync } from 'node:fs';
import { dirname } from 'node:path';

/** One command to run for a sandbox: a shell line, its directory and the paths it may see. */
export interface ExecSpec {
  command: string;
  /** The sandbox's workspace: the working directory, writable. */
  cwd: string;
  /** Further paths the command may read (the dependency cache it links to). */
  readOnly?: string[];
  /** Further paths the command may write (the npm cache during an install). */
  writable?: string[];
  /** RLIMIT_DATA of every process of the command, in bytes. */
  memoryBytes: number;
}

/** How commands are confined. `wrap` returns the argv to spawn (detached, as its own process group). */
export interface Isolation {
  readonly name: 'bubblewrap' | 'process-group';
  wrap(spec: ExecSpec): string[];
}

/**
 * Limits applied in both modes with prlimit: memory (data segment: heap and anonymous mappings, unlike
 * RLIMIT_AS which V8's large reservations would trip), file size, no core dumps. `nice` keeps apps from
 * starving Twinbox itself of CPU.
 */
function limits(spec: ExecSpec): string[] {
  const tools: string[] = [];
  if (onPath('prlimit'))
    tools.push(
      'prlimit',
      `--data=${spec.memoryBytes}`,
      `--fsize=${2 * 1024 * 1024 * 1024}`,
      '--core=0',
      '--',
    );
  if (onPath('nice')) tools.push('nice', '-n', '10');
  return tools;
}

const pathCache = new Map<string, boolean>();
function onPath(binary: string): boolean {
  let found = pathCache.get(binary);
  if (found === undefined) {
    found = spawnSync('sh', ['-c', `command -v ${binary}`], { stdio: 'ignore' }).status === 0;
    pathCache.set(binary, found);
  }
  return found;
}

/** Plain process groups: the app sees the whole file system Twinbox's user sees. The fallback. */
export const processGroupIsolation: Isolation = {
  name: 'process-group',
  wrap: (spec) => [...limits(spec), '/bin/sh', '-c', spec.command],
};

/** The read-only view of the system an app gets: binaries, libraries, and only the /etc it needs. */
function systemBinds(): string[] {
  const args = ['--ro-bind', '/usr', '/usr'];
  for (const top of ['/bin', '/sbin', '/lib', '/lib32', '/lib64']) {
    if (!existsSync(top)) continue;
    const stat = lstatSync(top);
    if (stat.isSymbolicLink()) args.push('--symlink', readlinkSync(top), top);
    else args.push('--ro-bind', top, top);
  }
  for (const file of [
    '/etc/resolv.conf',
    '/etc/hosts',
    '/etc/nsswitch.conf',
    '/etc/passwd',
    '/etc/group',
    '/etc/localtime',
    '/etc/ssl',
    '/etc/ca-certificates',
    '/etc/alternatives',
  ])
    args.push('--ro-bind-try', file, file);
  // Node installed outside /usr (nvm, /opt, /usr/local is under /usr already): its prefix, read-only.
  const nodePrefix = dirname(dirname(process.execPath));
  if (!nodePrefix.startsWith('/usr/')) args.push('--ro-bind', nodePrefix, nodePrefix);
  return args;
}

function bubblewrap(userNamespace: boolean): Isolation {
  const system = systemBinds();
  return {
    name: 'bubblewrap',
    wrap(spec) {
      const args = [
        'bwrap',
        ...system,
        '--proc',
        '/proc',
        '--dev',
        '/dev',
        // A private /tmp; the workspace is bound after it, since it may itself live under /tmp.
        '--tmpfs',
        '/tmp',
        '--bind',
        spec.cwd,
        spec.cwd,
      ];
      for (const path of spec.readOnly ?? []) args.push('--ro-bind', path, path);
      for (const path of spec.writable ?? []) args.push('--bind', path, path);
      args.push('--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-cgroup-try');
      // Unprivileged inside: uid 65534 in a user namespace, so root on the host is not root in the app.
      if (userNamespace) args.push('--unshare-user', '--uid', '65534', '--gid', '65534');
      // No --unshare-net: the app must reach its twins on the host's loopback. No --new-session either:
      // the app must stay in the process group Twinbox kills (it has no terminal to abuse anyway).
      args.push(
        '--die-with-parent',
        '--hostname',
        'sandbox',
        '--chdir',
        spec.cwd,
        '--',
        '/bin/sh',
        '-c',
        spec.command,
      );
      return [...limits(spec), ...args];
    },
  };
}

/**
 * Picks the strongest isolation that actually works here, by running `true` under it: bubblewrap with a
 * user namespace, bubblewrap without, then plain process groups. Containers often forbid namespaces, so
 * bwrap being on PATH proves nothing.
 */
export function probeIsolation(mode: 'auto' | 'off'): { isolation: Isolation; warning?: string } {
  if (mode === 'off')
    return {
      isolation: processGroupIsolation,
      warning: 'sandbox isolation is off (TWINBOX_SANDBOX_ISOLATION=off)',
    };
  if (!onPath('bwrap'))
    return {
      isolation: processGroupIsolation,
      warning: 'bubblewrap (bwrap) is not installed: apps run as plain process groups, not isolated',
    };
  for (const userNamespace of [true, false]) {
    const candidate = bubblewrap(userNamespace);
    const argv = candidate.wrap({ command: 'true', cwd: '/', memoryBytes: 256 * 1024 * 1024 }).slice(0);
    const bwrapAt = argv.indexOf('bwrap');
    const probe = spawnSync(argv[bwrapAt]!, argv.slice(bwrapAt + 1), { stdio: 'ignore', timeout: 10_000 });
    if (probe.status === 0) return { isolation: candidate };
  }
  return {
    isolation: processGroupIsolation,
    warning: 'bubblewrap cannot create namespaces here: apps run as plain process groups, not isolated',
  };
}
