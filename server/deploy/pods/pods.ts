import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync, realpathSync } from 'node:fs';
import { mkdir, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { request, type Server } from 'node:http';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';
import type { EgressAttempt } from '../../pod/egress-guard.ts';
import { podLayout, TRUST_PATHS } from '../../pod/layout.ts';
import {
  POD_EVENTS_PATH,
  type ExpectedTwins as ExpectedTwinsFile,
  type PodAnswer,
  type PodCall,
  type PodEvent,
  type PodRequest,
} from '../../pod/protocol.ts';
import {
  parseStartFailure,
  PodStartError,
  SOCKET_NAME_ROOM,
  SOCKET_PATH_MAX,
  startFailureReason,
} from '../../pod/start-failure.ts';
import type { TwinEntry } from '../../twins/runtime/host.ts';
import { sandboxDir, twinSocketPath } from '../../twins/runtime/paths.ts';
import { twinDescriptors } from '../../twins/descriptors.ts';
import { startInstallProxy } from './install-proxy.ts';
import { RsaKeyStock } from './key-stock.ts';
import { bundlePod, type PodProgram } from './pod-bundle.ts';
import type { Isolation } from '../confinement/isolation.ts';
import { probePause } from '../steps/health.ts';
import type { HostPort } from '../steps/npm-registries.ts';
import { LogSink } from '../confinement/logs.ts';
import type { NetworkNamespaces } from '../confinement/netns.ts';
import { podCall } from './pod-control.ts';
import { PidFiles, spawnGroup, type GroupProcess } from '../confinement/processes.ts';

const REPO_ROOT = fileURLToPath(new URL('../../..', import.meta.url));

/**
 * What a pod reads: the checkout (its code and node_modules), and node_modules' real directory when the
 * checkout links it from elsewhere (a symlink to a shared install), or the pod could not load a module.
 */
function podReadOnly(): string[] {
  const paths = [REPO_ROOT];
  try {
    const modules = realpathSync(join(REPO_ROOT, 'node_modules'));
    if (relative(REPO_ROOT, modules).startsWith('..')) paths.push(modules);
  } catch {
    // no node_modules in the checkout: the pod fails on start and says so
  }
  return paths;
}

/**
 * CA bundles that SDKs installed on this machine ship and read instead of the system's (stripe-python
 * verifies against its own `stripe/data/ca-certificates.crt`, whatever SSL_CERT_FILE says): in a sandbox's
 * view each is the sandbox's bundle, so those SDKs trust its CA too. Looked up once; only under /usr,
 * which is what a sandbox sees of the system. An SDK the app installs in its own workspace keeps its own.
 */
let pinnedBundles: string[] | undefined;
function sdkPinnedBundles(): string[] {
  if (pinnedBundles) return pinnedBundles;
  const found: string[] = [];
  for (const lib of ['/usr/lib', '/usr/local/lib']) {
    let pythons: string[] = [];
    try {
      pythons = readdirSync(lib).filter((name) => name === 'python3' || name.startsWith('python3.'));
    } catch {
      continue;
    }
    for (const python of pythons)
      for (const packages of ['dist-packages', 'site-packages']) {
        const bundle = join(lib, python, packages, 'stripe', 'data', 'ca-certificates.crt');
        if (existsSync(bundle)) found.push(bundle);
      }
  }
  pinnedBundles = found;
  return found;
}

/** How many past deploys' twins a spare warms for, and at most how many twins. */
const DEMAND_KEPT = 4;
const WARM_TWINS_MAX = 4;

export interface PodManagerOptions {
  dataDir: string;
  isolation: Isolation;
  /** Present: every pod gets its own network namespace; absent: pods share the host's network. */
  namespaces?: NetworkNamespaces;
  installEgress: Array<{ host: string; port: number }>;
  memoryBytes: number;
  /** The largest request body a twin reads (TWINBOX_TWIN_BODY_BYTES). */
  twinBodyBytes: number;
  logger: Logger;
  /**
   * What pod processes run (pod-bundle.ts); absent: bundled from the checkout on the first pod start. A
   * bundle that cannot be made fails every pod start with its PodBundleError.
   */
  program?: Promise<PodProgram>;
  /** Pods kept started ahead of need, so a deploy does not wait for Node to load the twins. */
  spares?: number;
  readyTimeoutMs?: number;
  /** Where the RSA keys of a deploy's twins come from (key-stock.ts); absent: a stock of its own. */
  rsaKeys?: RsaKeyStock;
}

/**
 * One sandbox's pod: its network namespace (when there is one), the process hosting its twins inside it,
 * and the sockets that cross the namespace boundary. Twinbox restarts the process when it dies; twins come
 * back from their persisted state.
 */
export class Pod {
  sandboxId: string | undefined;
  /** The app's port once the deploy knows it: the router reaches the app only then. */
  appPort: number | undefined;
  /** The pod's pipe to a port, opened before the deploy knew it was the app's (exposeAppEarly). */
  earlyExposure: { port: number; opened: Promise<void> } | undefined;
  /** True while the sandbox's install step runs: the only time the install proxy lets anything out. */
  installing = false;
  /** The registries the repository's `.npmrc` names, for the install under way (public addresses only). */
  repositoryRegistries: HostPort[] = [];
  readonly blocked = new Map<string, { host: string; port: number; count: number; first_seen: string }>();
  onBlocked: (attempt: EgressAttempt) => void = () => {};
  process: GroupProcess | undefined;
  proxy: Server | undefined;
  stopping = false;

  constructor(
    readonly slot: string,
    readonly dir: string,
    readonly stateDir: string,
    readonly netnsPath: string | undefined,
  ) {}

  get layout() {
    return podLayout(this.dir);
  }

  appSocket(): string {
    return this.layout.app;
  }

  twinSocket(name: string): string {
    return twinSocketPath(this.dir, name);
  }

  /** /etc files of the sandbox's commands: names resolve through the pod's guard (egress-guard.ts). */
  etcFiles(): Record<string, string> | undefined {
    if (!this.netnsPath) return undefined;
    const files: Record<string, string> = {
      '/etc/resolv.conf': join(this.dir, 'resolv.conf'),
      '/etc/hosts': join(this.dir, 'hosts'),
    };
    // The sandbox CA the pod made, where every program of the sandbox looks (layout.ts, TRUST_PATHS).
    if (existsSync(this.layout.caBundle)) {
      files[TRUST_PATHS.certificate] = this.layout.caCertificate;
      files[TRUST_PATHS.bundle] = this.layout.caBundle;
      if (existsSync(TRUST_PATHS.system)) files[TRUST_PATHS.system] = this.layout.caBundle;
      for (const pinned of sdkPinnedBundles()) files[pinned] = this.layout.caBundle;
    }
    return files;
  }

  call<C extends PodCall>(
    call: C,
    body: PodRequest<C>,
    timeoutMs?: number,
    signal?: AbortSignal,
  ): Promise<PodAnswer<C>> {
    return podCall(this.layout.control, call, body, timeoutMs, signal);
  }

  record(attempt: EgressAttempt): void {
    const key = `${attempt.host}:${attempt.port}`;
    const seen = this.blocked.get(key);
    if (seen) seen.count++;
    else this.blocked.set(key, { host: attempt.host, port: attempt.port, count: 1, first_seen: attempt.at });
    this.onBlocked(attempt);
  }
}

export class PodManager {
  private readonly spares: Promise<Pod>[] = [];
  /** Each spare's start, by its warm-up's promise (the pool's entry). */
  private readonly startedOf = new WeakMap<Promise<Pod>, Promise<Pod>>();
  /** What each spare (by its pool entry) is told to expect (ExpectedTwins), until its start is done. */
  private readonly expectedOf = new WeakMap<Promise<Pod>, ExpectedTwins>();
  /** Spares a deploy has taken (by their pool entry). */
  private readonly taken = new WeakSet<Promise<Pod>>();
  private readonly live = new Set<Pod>();
  private closed = false;
  /** Pod processes by slot: without bubblewrap (which takes them down with Twinbox) they outlive a kill -9. */
  private readonly pids: PidFiles;
  private program: Promise<PodProgram> | undefined;
  /** The twins of the last deploys (newest last): what the next spare warms (warmTwins). */
  private readonly demand: string[][] = [];
  /** Keys for the twins of a pod a deploy waits for while it starts (key-stock.ts). */
  private readonly keys: RsaKeyStock;

  constructor(private readonly opts: PodManagerOptions) {
    this.pids = new PidFiles(join(opts.dataDir, 'run', 'pods'));
    this.program = opts.program;
    this.keys = opts.rsaKeys ?? new RsaKeyStock();
  }

  /**
   * Records the twins a deploy asks for. A spare warms the twins of the last few deploys (at most
   * WARM_TWINS_MAX names): warming them all would cost each pod seconds of CPU and tens of MiB.
   */
  expect(names: readonly string[]): void {
    if (!names.length) return;
    this.demand.push([...names]);
    if (this.demand.length > DEMAND_KEPT) this.demand.shift();
  }

  private warmSet(): string[] {
    const names = new Set<string>();
    for (const deploy of [...this.demand].reverse())
      for (const name of deploy) if (names.size < WARM_TWINS_MAX) names.add(name);
    return [...names];
  }

  /** The bundle pods run, made once (pod-bundle.ts). */
  private podProgram(): Promise<PodProgram> {
    return (this.program ??= bundlePod(join(this.opts.dataDir, 'pod-bundle')));
  }

  get network(): 'own' | 'host' {
    return this.opts.namespaces ? 'own' : 'host';
  }

  /**
   * Fills the spare pool: at start, and after each deploy that took a pod. A spare is in the pool as the
   * promise of its warm-up (warmTwins) done, and a deploy takes it once started, without waiting for the
   * warm-up.
   */
  warm(): void {
    if (!this.closed) this.keys.fill();
    while (!this.closed && this.spares.length < (this.opts.spares ?? 1)) {
      const expected: ExpectedTwins = { names: this.warmSet() };
      const started = this.create(expected);
      started.catch(() => {});
      // A spare taken before it started (a burst of deploys) is not warmed: its deploy starts the twins.
      const warmed: Promise<Pod> = started.then((pod) => (this.taken.has(warmed) ? pod : this.warmUp(pod)));
      warmed.catch(() => {});
      this.startedOf.set(warmed, started);
      this.expectedOf.set(warmed, expected);
      // Started, it has read its file: a deploy that takes it later has nothing to tell it, and keys
      // written then would be made for no one.
      void started.then(
        () => this.expectedOf.delete(warmed),
        () => {},
      );
      this.spares.push(warmed);
    }
  }

  /** A spare's warm-up; one that fails costs the deploy its head start, nothing more. */
  private async warmUp(pod: Pod): Promise<Pod> {
    const names = this.warmSet();
    if (!names.length || pod.sandboxId) return pod;
    await pod.call('warmTwins', { names }).catch((error: Error) => {
      // A deploy that took the pod meanwhile makes the pod refuse it, a stop ends it: nothing to tell.
      if (!pod.sandboxId && !pod.stopping && !this.closed)
        this.opts.logger.warn({ err: error, twins: names }, 'a spare sandbox pod could not warm its twins');
    });
    return pod;
  }

  /**
   * A started pod for `sandboxId`: a spare when one is ready, else a new one. `twins`, the twins it will
   * start, are what the next spare warms. The pool is not refilled here: a pod's start is a few hundred
   * milliseconds of CPU, which on a small machine would slow the very app start this deploy waits for.
   * The deployer calls warm() once its deploy is done.
   */
  async acquire(sandboxId: string, twins: readonly string[] = []): Promise<Pod> {
    this.expect(twins);
    const spare = this.spares.shift();
    if (spare) this.taken.add(spare);
    // A spare still starting learns this deploy's twins at once, and prepares them as it starts.
    // It is given the RSA keys its twins would make (key-stock.ts): this deploy waits for its start.
    const expected = spare && this.expectedOf.get(spare);
    if (expected) {
      expected.keys = this.keys;
      void tellExpected(expected, twins);
    }
    let pod: Pod;
    try {
      pod = spare
        ? await (this.startedOf.get(spare) ?? spare)
        : await this.create({ names: [...twins], keys: this.keys });
    } catch {
      pod = await this.create({ names: [...twins], keys: this.keys });
    }
    pod.sandboxId = sandboxId;
    return pod;
  }

  private async create(expected: ExpectedTwins = { names: [] }): Promise<Pod> {
    // Nothing of a pod is made before its bundle is there: a bundle that fails starts no pod at all.
    await this.podProgram();
    const slot = randomUUID().slice(0, 8);
    const dir = join(this.opts.dataDir, 'pods', slot);
    // Node cuts a longer socket path silently, so two of the pod's sockets (or two pods') would be one file.
    if (Buffer.byteLength(dir) + 1 + SOCKET_NAME_ROOM > SOCKET_PATH_MAX)
      throw new PodStartError(
        startFailureReason({ step: 'socket_path' }, { code: null, signal: null }, dir),
        '',
      );
    const stateDir = join(dir, 'state');
    await mkdir(stateDir, { recursive: true, mode: 0o700 });
    expected.file = podLayout(dir).expectedTwins;
    await tellExpected(expected);
    const netnsPath = await this.opts.namespaces?.create(this.opts.namespaces.nameOf(slot));
    const pod = new Pod(slot, dir, stateDir, netnsPath);
    if (netnsPath) {
      await writeFile(join(dir, 'resolv.conf'), 'nameserver 127.0.0.1\noptions timeout:1 attempts:1\n');
      await writeFile(join(dir, 'hosts'), '127.0.0.1 localhost sandbox\n::1 localhost\n');
    }
    try {
      if (netnsPath)
        pod.proxy = await startInstallProxy({
          socketPath: pod.layout.egress,
          allowed: this.opts.installEgress,
          repositoryAllowed: () => pod.repositoryRegistries,
          open: () => pod.installing,
          onBlocked: (attempt) => pod.record(attempt),
        });
      await this.start(pod);
    } catch (error) {
      await this.destroy(pod);
      throw error;
    }
    this.live.add(pod);
    return pod;
  }

  /** Spawns the pod process and waits until its control API answers. */
  private async start(pod: Pod): Promise<void> {
    const program = await this.podProgram();
    const log = new LogSink(join(pod.dir, 'pod.log'), 64 * 1024);
    const command = `exec ${shellQuote(process.execPath)} ${shellQuote(program.entry)}`;
    const spec = {
      command,
      // Its own cgroup: an app that exhausts its sandbox's processes or memory leaves the twins standing.
      sandboxId: `pod-${pod.slot}`,
      cwd: pod.dir,
      readOnly: [...podReadOnly(), program.dir],
      netns: pod.netnsPath,
      memoryBytes: this.opts.memoryBytes,
    };
    const env = {
      PATH: '/usr/bin:/bin',
      HOME: pod.dir,
      TWINBOX_POD_DIR: pod.dir,
      TWINBOX_POD_STATE_DIR: pod.stateDir,
      TWINBOX_POD_NETWORK: pod.netnsPath ? 'own' : 'host',
      TWINBOX_POD_BODY_BYTES: String(this.opts.twinBodyBytes),
    };
    const proc = spawnGroup(spec, env, this.opts.isolation, log);
    pod.process = proc;
    await this.pids.record(pod.slot, proc.pid);
    const deadline = Date.now() + (this.opts.readyTimeoutMs ?? 90_000);
    let exit: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    void proc.exited.then((how) => (exit = how));
    for (let attempt = 0; ; attempt++) {
      // Worded from the pod's own report (start-failure.ts), never from its stack trace.
      if (exit)
        throw new PodStartError(
          startFailureReason(parseStartFailure(log.text()), exit, pod.dir),
          log.tail(20),
        );
      if (Date.now() > deadline) {
        await proc.kill(100);
        const seconds = Math.round((this.opts.readyTimeoutMs ?? 90_000) / 1000);
        throw new PodStartError(
          `it did not answer within ${seconds} s; the machine may be overloaded (TWINBOX_POD_START_TIMEOUT_MS)`,
          log.tail(20),
        );
      }
      try {
        await podCall(pod.layout.control, 'ready', undefined, 2000);
        break;
      } catch {
        // The pod prints `pod ready` once its control socket listens: its output ends the pause at once,
        // where the pause alone (up to 50 ms) added 20-40 ms to every pod start.
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([
          new Promise((resolve) => (timer = setTimeout(resolve, probePause(attempt)))),
          log.nextWrite(),
        ]);
        clearTimeout(timer);
      }
    }
    this.follow(pod);
    void proc.exited.then(() => {
      void log.close();
      if (!pod.stopping && !this.closed && pod.process === proc) void this.revive(pod);
    });
  }

  /** Streams the pod's egress reports into the pod record while the process lives. */
  private follow(pod: Pod): void {
    const req = request({ socketPath: pod.layout.control, path: POD_EVENTS_PATH }, (res) => {
      let buffered = '';
      res.on('data', (chunk: Buffer) => {
        buffered += chunk.toString('utf8');
        const lines = buffered.split('\n');
        buffered = lines.pop() ?? '';
        for (const line of lines.filter(Boolean)) {
          try {
            pod.record(JSON.parse(line) as PodEvent);
          } catch {
            // a torn line from a dying pod: nothing to record
          }
        }
      });
      res.on('error', () => {});
    });
    req.on('error', () => {});
    req.end();
  }

  /** A pod process died (killed, crashed, corrupted): start it again and bring its twins back. */
  private async revive(pod: Pod): Promise<void> {
    this.opts.logger.warn({ sandbox_id: pod.sandboxId, slot: pod.slot }, 'sandbox pod died: restarting it');
    try {
      await this.start(pod);
      if (pod.sandboxId) await pod.call('restoreTwins', { sandbox_id: pod.sandboxId });
      if (pod.appPort) await pod.call('exposeApp', { port: pod.appPort });
    } catch (error) {
      this.opts.logger.error({ err: error, sandbox_id: pod.sandboxId }, 'could not restart a sandbox pod');
    }
  }

  /** Starts the named twins in the pod; entries carry the URLs that work inside the sandbox. */
  async startTwins(
    pod: Pod,
    names: string[],
    opts: { adminToken: string; seeds?: Record<string, unknown>; publicUrls?: Record<string, string> },
  ): Promise<Record<string, TwinEntry>> {
    const { twins } = await pod.call('startTwins', {
      sandbox_id: pod.sandboxId!,
      names,
      admin_token: opts.adminToken,
      seeds: opts.seeds,
      public_urls: opts.publicUrls,
    });
    return twins;
  }

  /**
   * Moves a sandbox's twin state from the pod it had before a Twinbox restart (`fromSlot`, kept by sweep)
   * into `pod`, then drops what is left of the old pod. Resolves false when there is no such state.
   */
  async adoptState(pod: Pod, fromSlot: string, sandboxId: string): Promise<boolean> {
    const oldDir = join(this.opts.dataDir, 'pods', fromSlot);
    if (fromSlot === pod.slot) return true;
    let moved = true;
    try {
      await rename(sandboxDir(join(oldDir, 'state'), sandboxId), sandboxDir(pod.stateDir, sandboxId));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      moved = false;
    }
    await rm(oldDir, { recursive: true, force: true, maxRetries: 3 });
    return moved;
  }

  /** Drops a pod directory kept for a resume that will not happen (the sandbox failed or ended). */
  async discard(slot: string): Promise<void> {
    if ([...this.live].some((pod) => pod.slot === slot)) return;
    await rm(join(this.opts.dataDir, 'pods', slot), { recursive: true, force: true, maxRetries: 3 });
  }

  /** Starts a sandbox's twins in `pod` from their persisted state (not their seed); their entries inside. */
  async restoreTwins(pod: Pod, sandboxId: string): Promise<Record<string, TwinEntry>> {
    pod.sandboxId = sandboxId;
    const { twins } = await pod.call('restoreTwins', { sandbox_id: sandboxId });
    return twins;
  }

  async exposeApp(pod: Pod, port: number): Promise<void> {
    pod.appPort = port;
    const early = pod.earlyExposure;
    if (early?.port === port) return early.opened;
    await pod.call('exposeApp', { port });
  }

  /**
   * Resolves once the app's port accepts a connection inside the pod's namespace (true), or once
   * `timeoutMs` has passed (false): the pod tries every 2 ms, where an HTTP probe through the pod would
   * cost both processes a request each time. `signal`: no longer needed (the pod stops trying).
   */
  async appListening(pod: Pod, timeoutMs: number, signal?: AbortSignal): Promise<boolean> {
    const wait = Math.max(1, Math.min(Math.round(timeoutMs), 3_600_000));
    return (await pod.call('appListening', { timeout_ms: wait }, wait + 10_000, signal)).listening;
  }

  /**
   * Opens the pod's pipe to `port` before the deploy knows it is the app's: the port a profile without
   * `port:` gets is known once the pod is taken, and the pod call (answered in 25-65 ms while the pod's
   * twins start) then runs beside the workspace and the source, not between the app's spawn and its
   * first probe. exposeApp with the same port waits for it; with another port it asks again. The
   * router still reaches the app only after exposeApp (`appPort`).
   */
  exposeAppEarly(pod: Pod, port: number): void {
    const opened = pod.call('exposeApp', { port }).then(() => {});
    opened.catch(() => {}); // awaited by exposeApp, or not needed
    pod.earlyExposure = { port, opened };
  }

  /**
   * Stops the pod: its process, its namespace, its files (twin state included). With `keepState` (a
   * Twinbox shutdown with the sandbox still ready) the twins' state files stay for the next start's resume.
   */
  async destroy(pod: Pod, opts: { keepState?: boolean } = {}): Promise<void> {
    pod.stopping = true;
    this.live.delete(pod);
    // SIGTERM first: the pod's twins flush their state as they stop.
    await pod.process?.kill(1000);
    await this.pids.killRecorded(pod.slot);
    await this.opts.isolation.release(`pod-${pod.slot}`);
    await new Promise<void>((resolve) => (pod.proxy ? pod.proxy.close(() => resolve()) : resolve()));
    if (pod.netnsPath) await this.opts.namespaces?.remove(this.opts.namespaces.nameOf(pod.slot));
    if (!opts.keepState) await rm(pod.dir, { recursive: true, force: true, maxRetries: 3 });
  }

  /**
   * What a stopped or crashed Twinbox left: pod processes, namespaces and pod directories. The twin
   * state of the pods in `keepSlots` (sandboxes to resume) stays; everything else of theirs goes too.
   * Call before warm().
   */
  async sweep(keepSlots: ReadonlySet<string> = new Set()): Promise<void> {
    await this.pids.killLeftovers();
    for (const name of (await this.opts.namespaces?.list()) ?? []) await this.opts.namespaces?.remove(name);
    const root = join(this.opts.dataDir, 'pods');
    let slots: string[] = [];
    try {
      slots = await readdir(root);
    } catch {
      return;
    }
    for (const slot of slots) {
      const dir = join(root, slot);
      if (!keepSlots.has(slot)) {
        await rm(dir, { recursive: true, force: true, maxRetries: 3 });
        continue;
      }
      for (const name of await readdir(dir).catch(() => []))
        if (name !== 'state') await rm(join(dir, name), { recursive: true, force: true, maxRetries: 3 });
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    this.keys.stop();
    // Started is enough: a warm-up under way ends with its pod.
    const spares = await Promise.allSettled(
      this.spares.splice(0).map((spare) => this.startedOf.get(spare) ?? spare),
    );
    for (const result of spares) if (result.status === 'fulfilled') this.live.add(result.value);
    await Promise.all([...this.live].map((pod) => this.destroy(pod)));
  }
}

function shellQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

/**
 * The twins a pod is told to expect while it starts (layout.expectedTwins, protocol.ts ExpectedTwins): the
 * warm set for a spare, the deploy's own twins for a pod made for it or a spare it takes while that spare
 * still starts. `keys`, set for the last two, is where the RSA keys of those twins come from. `file` is
 * set once the pod's directory exists.
 */
interface ExpectedTwins {
  names: string[];
  file?: string;
  keys?: RsaKeyStock;
  /** The keys given so far, in the file, and how many were asked of the stock. */
  rsaKeys?: string[];
  keysAsked?: number;
  /** The writes of the file, in order: each writes what is expected when it runs. */
  written?: Promise<void>;
}

/** How many RSA keys starting these twins makes (TwinDescriptor.rsaKeys). */
function rsaKeysFor(names: readonly string[]): number {
  return names.reduce((sum, name) => sum + (twinDescriptors.get(name)?.rsaKeys ?? 0), 0);
}

/**
 * Adds `more` to what `expected` names and writes the file. When `expected.keys` is set it then writes it
 * again, behind the caller's back, with the keys those twins make once the stock has them: a pod is never
 * spawned later for a key. Only a hint: a pod that read the file before a change starts those twins on its
 * startTwins as ever, and makes its own keys, so a failure to write changes nothing else.
 */
async function tellExpected(expected: ExpectedTwins, more: readonly string[] = []): Promise<void> {
  expected.names = [...new Set([...expected.names, ...more])];
  if (!expected.file || expected.names.length === 0) return;
  const written = writeExpected(expected);
  void giveKeys(expected);
  await written;
}

/** Asks the stock for the keys the expected twins make that were not asked for yet, and writes them. */
async function giveKeys(expected: ExpectedTwins): Promise<void> {
  const wanted = expected.keys ? rsaKeysFor(expected.names) - (expected.keysAsked ?? 0) : 0;
  if (wanted <= 0) return;
  expected.keysAsked = (expected.keysAsked ?? 0) + wanted;
  const given = await expected.keys!.take(wanted);
  if (given.length === 0) return;
  (expected.rsaKeys ??= []).push(...given);
  await writeExpected(expected);
}

/**
 * Writes the file (atomically: the pod never reads half of it), after the writes before it, with what is
 * expected by then: the last write is always the fullest. 0644 inside the pod's 0700 directory, as the
 * pod may run as another uid (a user namespace's); no one but Twinbox and the pod reads it.
 */
function writeExpected(expected: ExpectedTwins): Promise<void> {
  const file = expected.file!;
  const write = async () => {
    const body: ExpectedTwinsFile = { names: expected.names };
    if (expected.rsaKeys?.length) body.rsa_keys = expected.rsaKeys;
    const temp = `${file}.${randomUUID()}.tmp`;
    try {
      await writeFile(temp, JSON.stringify(body), { mode: 0o644 });
      await rename(temp, file);
    } catch {
      await rm(temp, { force: true }).catch(() => {});
    }
  };
  expected.written = (expected.written ?? Promise.resolve()).then(write);
  return expected.written;
}
