import { existsSync, mkdirSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import type { DeployEvents } from '../sandboxes/deploy-events.ts';
import type { Store } from '../store/store.ts';
import type { TwinCatalog } from '../twins/catalog.ts';
import { Cgroups } from './confinement/cgroups.ts';
import { trustedExecutables } from './confinement/trusted-executables.ts';
import { HostRegistry, instanceOf } from './confinement/leftovers.ts';
import { probeIsolation, type Isolation } from './confinement/isolation.ts';
import { machineRegistries } from './steps/npm-registries.ts';
import { EndpointDirectory } from './endpoints.ts';
import { LocalDeployer, type SandboxUrls } from './local-deployer.ts';
import { NetworkNamespaces } from './confinement/netns.ts';
import { PodManager } from './pods/pods.ts';
import { bundlePod } from './pods/pod-bundle.ts';
import { GitHubSource } from './steps/source.ts';
import type { SourceCredentials } from './steps/source-credentials.ts';
import { githubWebHosts } from '../sandboxes/pull-request-url.ts';

export { LocalDeployer } from './local-deployer.ts';

/** Production was asked to start where sandboxes cannot be isolated. */
export class IsolationError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'IsolationError';
  }
}

/** What of process, file-system and network isolation does not hold here, each with how to get it. */
function isolationGaps(isolation: Isolation, netnsProblem: string | undefined): string[] {
  const gaps: string[] = [];
  const caps = isolation.capabilities;
  if (!caps.processes || !caps.filesystem)
    gaps.push(
      'process and file-system isolation (bubblewrap that can create namespaces: apt-get install bubblewrap)',
    );
  if (caps.cgroups === 'none') gaps.push('per-sandbox limits (a writable cgroup file system, v2 or v1)');
  if (netnsProblem) gaps.push(`network isolation (${netnsProblem})`);
  return gaps;
}

/** The embedded deploy engine as the composition root sees it. */
export interface DeployEngine {
  deployer: LocalDeployer;
  /** Where the router finds each sandbox's app and twins. */
  directory: EndpointDirectory;
  /** Stops every app and twin instance (Twinbox shutdown). */
  close(): Promise<void>;
}

/**
 * Builds the deploy engine on the embedded defaults: a pod per sandbox (its twins, out of Twinbox's
 * process) in the sandbox's own network namespace when the host allows it, source from the GitHub API,
 * apps as process groups confined by bubblewrap. Kills whatever a previous run left running before
 * anything is recovered.
 */
export async function createDeployEngine(deps: {
  config: Config;
  logger: Logger;
  catalog: TwinCatalog;
  store: Store;
  /** Public URLs of apps and twins; read at deploy time (the port is known once Twinbox listens). */
  urls: SandboxUrls;
  /** Each sandbox's GitHub token (its installation's or its owner's connection); absent: `token` below. */
  sourceCredentials?: SourceCredentials;
  /** Told what happens to sandboxes as it happens (made before the engine: see deploy-events.ts). */
  events: DeployEvents;
}): Promise<DeployEngine> {
  const { config, logger, catalog, events } = deps;
  // The registries npm is configured with on this machine, read once (`npm config list` takes about half
  // a second): an install step in its own namespace may reach them (and the repository's .npmrc's, and
  // TWINBOX_INSTALL_EGRESS), nothing else. Asked now, so it runs while the probes below do.
  // Settled here, never rejected: a start that fails before it is awaited leaves no unhandled rejection.
  const npmRegistries = machineRegistries().then(
    (found) => ({ ...found, problem: undefined }),
    (error: Error) => ({
      registry: undefined,
      hosts: [] as { host: string; port: number }[],
      problem: error.message,
    }),
  );
  mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  // The pod's bundle (pod-bundle.ts), made while npm and the host are probed; a failure stops the start
  // (a PodBundleError) rather than every deploy after it.
  const bundleStarted = Date.now();
  const program = bundlePod(config.podBundleDir ?? join(config.dataDir, 'pod-bundle'), {
    shared: config.podBundleDir !== undefined,
  });
  program.catch(() => {});
  // Names this Twinbox's cgroups and network namespaces: several Twinboxes can share a host (tests do).
  const instance = instanceOf(config.dataDir);
  const limits = {
    pids: config.sandboxPids,
    cpus: config.sandboxCpus,
    memoryBytes: config.appMemoryMb * 1024 * 1024,
    tmpBytes: config.sandboxTmpMb * 1024 * 1024,
  };
  // Cgroups are grouped per data directory, so starting one Twinbox never sweeps another's sandboxes.
  const cgroups = Cgroups.open(limits, { instance });
  // Before this Twinbox makes any namespace: what Twinboxes of removed data directories left goes, and
  // this one is recorded so that a later start can do the same for it (leftovers.ts).
  const host = new HostRegistry({
    instance,
    dataDir: realpathSync(config.dataDir),
    cgroups: cgroups.version === 'none' ? [] : cgroups.parents,
    logger,
  });
  await host.start();
  const { isolation, warnings } = probeIsolation(
    config.sandboxIsolation,
    limits,
    // No sandbox command sees the data directory beyond its own paths in it (its secrets, the store),
    // wherever it lies: inside the checkout a pod reads, under /usr, under /tmp.
    { instance, cgroups, hidden: [...new Set([config.dataDir, realpathSync(config.dataDir)])] },
  );
  const tools = trustedExecutables();
  const namespaces =
    tools.ip && tools.nsenter && tools.sh
      ? new NetworkNamespaces({ ip: tools.ip, nsenter: tools.nsenter, sh: tools.sh }, instance)
      : undefined;
  const netnsProblem =
    config.sandboxIsolation === 'off'
      ? 'isolation is off (TWINBOX_SANDBOX_ISOLATION=off)'
      : namespaces
        ? await namespaces.probe()
        : '`ip` (iproute2) or `nsenter` (util-linux) is not installed';
  if (netnsProblem)
    warnings.push(
      `sandboxes get no network namespace (${netnsProblem}): apps can reach this machine and each other`,
    );
  const npm = await npmRegistries;
  if (npm.problem)
    warnings.push(
      `could not read npm's registries (${npm.problem}): installs reach only TWINBOX_INSTALL_EGRESS and the repository's .npmrc registries`,
    );
  const missing = isolationGaps(isolation, netnsProblem);
  if (missing.length && config.env === 'production')
    throw new IsolationError(
      `Twinbox will not run sandboxes unisolated in production. Missing:\n${missing.map((m) => `  - ${m}`).join('\n')}\n` +
        'Run Twinbox as root on Linux with bubblewrap, iproute2 and a writable cgroup file system (docs/security.md).',
    );
  for (const warning of warnings) logger.warn(warning);
  if (missing.length)
    process.stderr.write(
      `\n*** WARNING: sandboxes are NOT isolated here. Deployed code can read this machine's files and reach its network.\n` +
        `*** Missing: ${missing.join('; ')}. Every sandbox records isolation: "none". Never run this in production.\n\n`,
    );
  const pods = new PodManager({
    dataDir: config.dataDir,
    program,
    isolation,
    namespaces: netnsProblem ? undefined : namespaces,
    installEgress: [...npm.hosts, ...config.installEgress],
    twinBodyBytes: config.twinBodyBytes,
    memoryBytes: config.appMemoryMb * 1024 * 1024,
    readyTimeoutMs: config.podStartTimeoutMs,
    logger,
  });
  const deployer = new LocalDeployer({
    dataDir: config.dataDir,
    pods,
    urls: deps.urls,
    source: new GitHubSource({
      apiUrl: config.githubApiUrl,
      // In production each owner's own GitHub connection is the credential, never a server-wide token.
      token: config.env === 'production' ? undefined : config.githubToken,
      credentials: deps.sourceCredentials,
      webHosts: githubWebHosts(config.githubWebUrl),
      maxBytes: config.sourceMaxBytes,
      maxFiles: config.sourceMaxFiles,
    }),
    isolation,
    logger,
    supportedTwin: (name) => catalog.has(name),
    // The seed was settled when the sandbox was accepted (scenario or planned prompt) and is on the record.
    seedsFor: async (sandbox) => sandbox.seed ?? undefined,
    healthTimeoutMs: config.deployHealthTimeoutMs,
    buildTimeoutMs: config.deployBuildTimeoutMs,
    memoryBytes: config.appMemoryMb * 1024 * 1024,
    diskBytes: config.sandboxDiskMb * 1024 * 1024,
    npmRegistry: npm.registry,
    logBytes: config.appLogBytes,
    logFileBytes: config.appLogFileBytes,
    onStep: (id, ...step) => events.emit('step', id, ...step),
    onCrash: (id, error) => events.emit('crash', id, error),
    onBlockedEgress: (id, blocked) => events.emit('blockedEgress', id, blocked),
    // The directory reads the deployer's pods and hears of a resume (which starts once both exist) here.
    onResuming: (sandbox) => events.emit('resuming', sandbox),
  });
  const directory = new EndpointDirectory(deployer, config.endedPageMinutes * 60_000, events);
  // Ready sandboxes keep their workspace and twin state: recover() resumes them (docs/sandboxes.md).
  const ready = await deps.store.sandboxes.findBy('status', 'ready');
  await deployer.killLeftovers(new Set(ready.map((sandbox) => sandbox.id)));
  // The first spares warm what the sandboxes to resume use (none on a fresh start: the first deploy tells).
  for (const sandbox of ready) pods.expect(sandbox.twin_names);
  pods.warm();
  const engine = {
    deployer,
    directory,
    async close() {
      directory.close();
      await deployer.close();
      // Idempotent after deployer.close(); ensures no pod is revived once this Twinbox is stopping.
      await pods.close();
      // Nothing of this Twinbox stays on the host (docs/deploy.md, "Teardown, shutdown and restart"):
      // no `twinbox/<instance>` cgroup, no namespace; what a resume needs is in the data directory.
      await cgroups.close();
      for (const name of (await namespaces?.list()) ?? []) await namespaces?.remove(name);
      if (!((await namespaces?.list()) ?? []).length && cgroups.parents.every((dir) => !existsSync(dir)))
        await host.unregister();
      else logger.warn('this stop left namespaces or cgroups behind: the next start sweeps them');
    },
  };
  // The bundle is awaited last: the sweep of what an earlier run left runs while esbuild bundles (a fresh
  // data directory's first start: 0.7-1.3 s on 2 cores), and the first spare pod is made as soon as its
  // bundle is there. A bundle that fails still fails the start, with nothing left.
  try {
    const { built, key } = await program;
    logger.info(
      { key, ms: Date.now() - bundleStarted },
      built ? 'sandbox pod bundled' : 'sandbox pod bundle reused',
    );
  } catch (error) {
    await engine.close().catch(() => {});
    throw error;
  }
  return engine;
}
