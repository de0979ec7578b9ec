import { spawnSync } from 'node:child_process';
import { existsSync, lstatSync, mkdtempSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { Cgroups, type CgroupsOptions, type CgroupUsage, type CgroupVersion } from './cgroups.ts';
import {
  TRUSTED_ENV,
  trustedExecutables,
  trustedExecutable,
  type TrustedExecutables,
} from './trusted-executables.ts';

/** One command to run for a sandbox: a shell line, its directory and the paths it may see. */
export interface ExecSpec {
  command: string;
  /** The sandbox the command belongs to: names its cgroup, which all its steps share. */
  sandboxId: string;
  /** The sandbox's workspace: the working directory, writable. */
  cwd: string;
  /** Where the command starts, inside `cwd` (an app's `root:` folder); default: `cwd`. */
  chdir?: string;
  /** Further paths the command may read (the dependency cache it links to). */
  readOnly?: string[];
  /** Further paths the command may write. */
  writable?: string[];
  /** A network namespace to run in (a path such as /run/netns/<name>); absent: Twinbox's own. */
  netns?: string;
  /**
   * Files shown read-only at other paths inside (inside path -> host file): a sandbox in its own network
   * namespace gets an /etc/resolv.conf naming its pod's DNS and an /etc/hosts of its own.
   */
  files?: Record<string, string>;
  /** RLIMIT_DATA of every process of the command, in bytes (defence in depth under the cgroup's limit). */
  memoryBytes: number;
}

/** Per-sandbox limits, across all of a sandbox's processes and steps. */
export interface SandboxLimits {
  pids: number;
  /** Hard CPU quota in cores. */
  cpus: number;
  memoryBytes: number;
  /** Size of the sandbox's private /tmp (a tmpfs; its pages also count as the sandbox's memory). */
  tmpBytes: number;
}

/** What actually holds on this host; the lead refuses production starts on a weak answer. */
export interface IsolationCapabilities {
  /** Own PID namespace: a sandbox cannot see or signal other processes. */
  processes: boolean;
  /** Own file-system view: the workspace, its dependencies, the system's binaries, nothing else. */
  filesystem: boolean;
  /** Process count, memory and CPU capped per sandbox, and by which cgroup version; 'none': not enforced. */
  cgroups: CgroupVersion;
  /** uid 65534 in a user namespace; false: Twinbox's own uid (root: uid 0 without capabilities). */
  userNamespace: boolean;
  /** /tmp is a private tmpfs of limits.tmpBytes. */
  tmpSize: boolean;
  /** No capabilities and no_new_privs inside: setuid binaries gain nothing. */
  noPrivileges: boolean;
}

export type IsolationMode = 'bubblewrap-userns' | 'bubblewrap' | 'process-group';

/** How commands are confined. `wrap` returns the argv to spawn (detached, as its own process group). */
export interface Isolation {
  readonly name: 'bubblewrap' | 'process-group';
  readonly mode: IsolationMode;
  readonly capabilities: IsolationCapabilities;
  readonly limits: SandboxLimits;
  /**
   * The argv that runs `spec.command` confined, every element outside the sandbox an absolute path
   * resolved at start. Creates the sandbox's cgroup (idempotent) and throws when it cannot. The command's
   * shell reads its environment as a script on stdin (`environmentScript`), so nothing of the app's
   * environment reaches the programs that run outside the sandbox; spawnGroup does this.
   */
  wrap(spec: ExecSpec): string[];
  /** Kills every process left in the sandbox's cgroup and removes it. Call after the steps are stopped. */
  release(sandboxId: string): Promise<void>;
  /** Releases the cgroups a crashed earlier run left (this instance's only); returns their sandbox ids. */
  killLeftovers(): Promise<string[]>;
  /** CPU, memory and process use of a sandbox so far; undefined without cgroups. */
  usage(sandboxId: string): CgroupUsage | undefined;
}

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

function shellQuote(value: string): string {
  return `'${value.replace(/'/g, `'\\''`)}'`;
}

/**
 * The app's environment as a shell script of exports: what the sandboxed shell reads on stdin. The
 * environment never passes through the helpers outside the sandbox (LD_PRELOAD, PATH, BASH_FUNC_* set by a
 * repository would otherwise act on programs running as Twinbox's user), and never appears in a command
 * line other users can read. Names that are not shell names are dropped.
 */
export function environmentScript(env: Record<string, string>): string {
  return Object.entries(env)
    .filter(([name, value]) => NAME.test(name) && !value.includes('\0'))
    .map(([name, value]) => `export ${name}=${shellQuote(value)}\n`)
    .join('');
}

/**
 * The sandboxed shell's first lines: the environment from stdin, then stdin becomes /dev/null. The shell
 * reads the script with its own `read` (no `cat`: one fork and one exec fewer on every start; stdin is a
 * socket, which `.` of /dev/stdin cannot open). environmentScript ends every line with a newline.
 */
function withEnvironment(command: string): string {
  // Shell variables, not exported: the app's environment is only what the script exports.
  const read =
    'twinbox_env=; while IFS= read -r twinbox_line; do twinbox_env="$twinbox_env$twinbox_line\n"; done';
  return `${read}; unset twinbox_line; eval "$twinbox_env" || exit 125\nexec </dev/null\n${command}`;
}

/**
 * The launcher, the first program of every command: a shell (by absolute path, with Twinbox's fixed
 * environment) that writes its own pid into each of the sandbox's `cgroup.procs`, so nothing of the
 * command runs outside its cgroup, and sets the resource limits (rlimits), then execs the rest. Its
 * builtins do what `prlimit` did, one exec fewer. Files, limits and argv are arguments, never part of the
 * script.
 */
function launcher(tools: TrustedExecutables, procsFiles: string[], spec: ExecSpec, argv: string[]): string[] {
  return [
    tools.sh!,
    '-c',
    // POSIX units: -d in KiB (every shell), -f in 512-byte blocks.
    'n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 125; shift; n=$((n - 1)); done; ' +
      'ulimit -d "$1" && ulimit -f "$2" && ulimit -c 0 || exit 125; shift 2; exec "$@"',
    'twinbox-launch',
    String(procsFiles.length),
    ...procsFiles,
    ...rlimitArgs(spec),
    ...argv,
  ];
}

function enterNetns(tools: TrustedExecutables, netns: string | undefined, argv: string[]): string[] {
  if (!netns) return argv;
  if (!netns.startsWith('/')) throw new Error(`network namespace must be an absolute path: ${netns}`);
  if (!tools.nsenter) throw new Error('nsenter is not installed: cannot enter the sandbox network namespace');
  return [tools.nsenter, `--net=${netns}`, '--', ...argv];
}

/**
 * RLIMIT_DATA (heap and anonymous mappings, unlike RLIMIT_AS which V8's large reservations would trip),
 * file size and no core dumps, soft and hard, as the launcher's `ulimit` arguments (KiB, 512-byte blocks).
 * Under the cgroup's limits, this is defence in depth.
 */
function rlimitArgs(spec: ExecSpec): string[] {
  return [String(Math.floor(spec.memoryBytes / 1024)), String(FILE_SIZE_BYTES / 512)];
}

const FILE_SIZE_BYTES = 2 * 1024 * 1024 * 1024;

/** `nice` keeps apps from starving Twinbox of CPU. */
function niced(tools: TrustedExecutables): string[] {
  return tools.nice ? [tools.nice, '-n', '10'] : [];
}

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

/** One mount of a command's own view: bwrap arguments, and the path inside they mount over. */
interface Mount {
  at: string;
  args: string[];
  /** A hidden path's mask: mounted before the command's paths at the same depth, read-only at the end. */
  mask?: boolean;
}

function depth(path: string): number {
  return path.split('/').filter(Boolean).length;
}

/**
 * The mounts of a command's own paths, in an order where no mount covers a later one: bwrap mounts in
 * argument order, so a path bound after one of its ancestors stays visible, and one bound before it is
 * hidden. Outer paths come first (the checkout a pod reads, then a hidden data directory inside it, then
 * the pod's own directory inside that); at one depth, masks come first.
 */
function ownMounts(limits: SandboxLimits, spec: ExecSpec, hidden: readonly string[]): string[] {
  const mounts: Mount[] = [
    // A private, size-capped /tmp; the workspace may itself live under /tmp, so it goes after.
    { at: '/tmp', args: ['--size', String(limits.tmpBytes), '--tmpfs', '/tmp'] },
    // Each hidden path is an empty tmpfs (made read-only below): what of it the command needs is bound
    // back over it, nothing else of it is there.
    ...hidden.map((path) => ({ at: path, args: ['--tmpfs', path], mask: true })),
    { at: spec.cwd, args: ['--bind', spec.cwd, spec.cwd] },
    ...(spec.readOnly ?? []).map((path) => ({ at: path, args: ['--ro-bind', path, path] })),
    ...(spec.writable ?? []).map((path) => ({ at: path, args: ['--bind', path, path] })),
  ];
  const ordered = mounts
    .map((mount, index) => ({ mount, index }))
    .sort(
      (a, b) =>
        depth(a.mount.at) - depth(b.mount.at) ||
        Number(Boolean(b.mount.mask)) - Number(Boolean(a.mount.mask)) ||
        a.index - b.index,
    )
    .map(({ mount }) => mount);
  const args = ordered.flatMap((mount) => mount.args);
  // Files shown at other paths (/etc/resolv.conf) go over the system's.
  for (const [inside, file] of Object.entries(spec.files ?? {})) args.push('--ro-bind', file, inside);
  // Not recursive: the paths bound inside a mask stay as they were bound.
  for (const path of hidden) args.push('--remount-ro', path);
  return args;
}

function bubblewrapArgv(
  tools: TrustedExecutables,
  system: string[],
  userNamespace: boolean,
  disableNestedUserns: boolean,
  limits: SandboxLimits,
  spec: ExecSpec,
  hidden: readonly string[],
): string[] {
  const args = [tools.bwrap!];
  // Unprivileged inside: uid 65534 in a user namespace, so root on the host is not root in the app, and
  // no further user namespaces (each would hand the app a fresh set of capabilities to attack the kernel;
  // bwrap before 0.8 cannot forbid them, hence optional).
  if (userNamespace) args.push('--unshare-user', '--uid', '65534', '--gid', '65534');
  if (userNamespace && disableNestedUserns) args.push('--disable-userns');
  args.push(...system, '--proc', '/proc', '--dev', '/dev', ...ownMounts(limits, spec, hidden));
  args.push('--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-cgroup-try');
  // Every mode: without a user namespace bwrap would otherwise keep root's capabilities for the app.
  // bwrap also always sets no_new_privs, so setuid binaries inside gain nothing.
  args.push('--cap-drop', 'ALL');
  // No --unshare-net here: the caller picks the network namespace (ExecSpec.netns). No --new-session:
  // the detached spawn already made a new session without a terminal, and the app must stay in the
  // process group Twinbox signals (SIGTERM first, for a graceful stop).
  args.push(
    '--die-with-parent',
    '--clearenv',
    '--hostname',
    'sandbox',
    '--chdir',
    spec.chdir ?? spec.cwd,
    '--',
    '/bin/sh',
    '-c',
    withEnvironment(spec.command),
  );
  return args;
}

/**
 * No namespaces: the app sees what Twinbox's user sees. What still holds: the cgroup, rlimits, and (with
 * setpriv) no capabilities and no_new_privs, so Twinbox running as root does not hand root's powers over.
 */
function processGroupArgv(tools: TrustedExecutables, spec: ExecSpec): string[] {
  const drop: string[] = [];
  if (tools.setpriv) {
    drop.push(tools.setpriv, '--no-new-privs', '--inh-caps=-all');
    // Exec as uid 0 grants the bounding set; an empty one leaves root without capabilities.
    if (process.getuid?.() === 0) drop.push('--bounding-set=-all');
    drop.push('--');
  }
  return [...drop, ...niced(tools), tools.env!, '-i', '/bin/sh', '-c', withEnvironment(spec.command)];
}

export interface IsolationOptions extends CgroupsOptions {
  /** Share one Cgroups between isolations (tests building several modes); opened from limits otherwise. */
  cgroups?: Cgroups;
  /** With a user namespace: forbid the app further ones (bwrap --disable-userns, 0.8+). Default true. */
  disableNestedUserns?: boolean;
  /**
   * Absolute paths no command sees, except those of its own paths (workspace, pod directory, cache
   * entries) that lie inside them: Twinbox's data directory, whose secrets (`encryption-key`,
   * `dev-api-key`, the store) would otherwise be in view wherever a bound path contains it, such as
   * the checkout a pod reads when the data directory is inside the checkout. Bubblewrap only.
   */
  hidden?: string[];
}

/** Each isolation's argv with no cgroup to join, for probing a mode before any sandbox exists. */
const bareArgv = new WeakMap<Isolation, (spec: ExecSpec) => string[]>();

/** Builds one mode without probing it (probeIsolation picks the strongest that works). */
export function createIsolation(
  mode: IsolationMode,
  limits: SandboxLimits,
  opts: IsolationOptions = {},
): Isolation {
  const tools = trustedExecutables();
  for (const name of ['sh', 'env'] as const) trustedExecutable(name);
  if (mode !== 'process-group') trustedExecutable('bwrap');
  const cgroups = opts.cgroups ?? Cgroups.open(limits, opts);
  const bubblewrap = mode !== 'process-group';
  const system = bubblewrap ? systemBinds() : [];
  const userNamespace = mode === 'bubblewrap-userns';
  const disableNested = opts.disableNestedUserns ?? true;
  for (const path of opts.hidden ?? [])
    if (!path.startsWith('/') || resolve(path) === '/')
      throw new Error(`a hidden path must be absolute, not /: ${path}`);
  // /tmp itself needs no mask: every command gets a private, empty one.
  const hidden = [...new Set((opts.hidden ?? []).map((path) => resolve(path)))].filter(
    (path) => path !== '/tmp',
  );
  const inner = (spec: ExecSpec): string[] =>
    bubblewrap
      ? [
          ...niced(tools),
          ...bubblewrapArgv(tools, system, userNamespace, disableNested, limits, spec, hidden),
        ]
      : processGroupArgv(tools, spec);
  const isolation: Isolation = {
    name: bubblewrap ? 'bubblewrap' : 'process-group',
    mode,
    limits,
    capabilities: {
      processes: bubblewrap,
      filesystem: bubblewrap,
      cgroups: cgroups.version,
      userNamespace: mode === 'bubblewrap-userns',
      tmpSize: bubblewrap,
      noPrivileges: bubblewrap || Boolean(tools.setpriv),
    },
    wrap(spec) {
      const procs = cgroups.create(spec.sandboxId);
      return launcher(tools, procs, spec, enterNetns(tools, spec.netns, inner(spec)));
    },
    async release(sandboxId) {
      if (!(await cgroups.release(sandboxId)))
        throw new Error(`processes of sandbox ${sandboxId} were still alive after SIGKILL`);
    },
    killLeftovers: () => cgroups.sweep(),
    usage: (sandboxId) => cgroups.usage(sandboxId),
  };
  bareArgv.set(isolation, (spec) => launcher(tools, [], spec, inner(spec)));
  return isolation;
}

/** Runs `exit 0` under a candidate (without a cgroup): does this mode work on this host? */
function works(isolation: Isolation): { ok: boolean; detail: string } {
  const cwd = mkdtempSync(join(tmpdir(), 'twinbox-probe-'));
  try {
    const argv = bareArgv.get(isolation)!({
      command: 'exit 0',
      sandboxId: 'probe',
      cwd,
      memoryBytes: Math.max(256 * 1024 * 1024, isolation.limits.memoryBytes),
    });
    const probe = spawnSync(argv[0]!, argv.slice(1), {
      env: TRUSTED_ENV,
      input: '',
      encoding: 'utf8',
      timeout: 10_000,
    });
    return { ok: probe.status === 0, detail: (probe.stderr || probe.error?.message || '').trim() };
  } finally {
    rmSync(cwd, { recursive: true, force: true });
  }
}

/**
 * Picks the strongest isolation that actually works here, by running a no-op under it: bubblewrap with a
 * user namespace, bubblewrap without, then plain process groups. Containers often forbid namespaces, so
 * bwrap being installed proves nothing. Cgroups apply in every mode when the host lets Twinbox write them.
 * `warnings` says what does not hold; `isolation.capabilities` says it as data.
 */
export function probeIsolation(
  mode: 'auto' | 'off',
  limits: SandboxLimits,
  opts: IsolationOptions = {},
): { isolation: Isolation; warning?: string; warnings: string[] } {
  const cgroups = opts.cgroups ?? Cgroups.open(limits, opts);
  const warnings: string[] = [];
  if (cgroups.version === 'none')
    warnings.push(
      `cgroups are not usable (${cgroups.reason}): process count, memory and CPU are not capped per sandbox`,
    );
  const tools = trustedExecutables();
  const fallback = (reason: string) => {
    const isolation = createIsolation('process-group', limits, { ...opts, cgroups });
    warnings.unshift(reason);
    if (!isolation.capabilities.noPrivileges)
      warnings.push('setpriv is not installed: apps keep the capabilities of Twinbox’s user');
    return { isolation, warning: warnings.join('; '), warnings };
  };
  if (mode === 'off') return fallback('sandbox isolation is off (TWINBOX_SANDBOX_ISOLATION=off)');
  if (!tools.bwrap)
    return fallback('bubblewrap (bwrap) is not installed: apps run as plain process groups, not isolated');
  const failures: string[] = [];
  const candidates = [
    { mode: 'bubblewrap-userns', disableNestedUserns: true },
    { mode: 'bubblewrap-userns', disableNestedUserns: false },
    { mode: 'bubblewrap', disableNestedUserns: false },
  ] as const;
  for (const { mode: candidateMode, disableNestedUserns } of candidates) {
    const candidate = createIsolation(candidateMode, limits, { ...opts, cgroups, disableNestedUserns });
    const result = works(candidate);
    if (result.ok) {
      if (candidateMode === 'bubblewrap-userns' && !disableNestedUserns)
        warnings.push(
          `bwrap cannot forbid nested user namespaces here (${failures[0]}): apps may create their own`,
        );
      if (candidateMode === 'bubblewrap')
        warnings.push(
          `no user namespaces here (${failures[1]}): apps run as Twinbox's uid with all capabilities dropped`,
        );
      return { isolation: candidate, warning: warnings.length ? warnings.join('; ') : undefined, warnings };
    }
    failures.push(result.detail || 'failed');
  }
  return fallback(
    `bubblewrap cannot create namespaces here (${failures.join('; ')}): apps run as plain process groups, not isolated`,
  );
}
