import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import type { SandboxLifecycle } from '../sandboxes/lifecycle.ts';
import type { Store } from '../store/store.ts';
import type { TwinCatalog } from '../twins/catalog.ts';
import { helper } from './helpers.ts';
import { probeIsolation } from './isolation.ts';
import { SandboxDirectory } from './endpoints.ts';
import { LocalDeployer, type SandboxUrls } from './local-deployer.ts';
import { NetworkNamespaces } from './netns.ts';
import { PodManager } from './pods.ts';
import { GitHubSource } from './source.ts';
import { githubWebHosts } from '../sandboxes/pull-request-url.ts';

export { LocalDeployer } from './local-deployer.ts';

/** The embedded deploy engine as the composition root sees it. */
export interface DeployEngine {
  deployer: LocalDeployer;
  /** Where the router finds each sandbox's app and twins. */
  directory: SandboxDirectory;
  /** Points app crashes at the lifecycle (which needs the deployer first, hence not a constructor argument). */
  attach(lifecycle: SandboxLifecycle): void;
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
}): Promise<DeployEngine> {
  const { config, logger, catalog } = deps;
  const { isolation, warnings } = probeIsolation(config.sandboxIsolation, {
    pids: config.sandboxPids,
    cpus: config.sandboxCpus,
    memoryBytes: config.appMemoryMb * 1024 * 1024,
    tmpBytes: config.sandboxTmpMb * 1024 * 1024,
  });
  for (const warning of warnings) logger.warn(warning);
  const namespaces = new NetworkNamespaces({
    ip: helper('ip'),
    nsenter: helper('nsenter'),
    sh: helper('sh'),
  });
  const netnsProblem = config.sandboxIsolation === 'off' ? 'isolation is off' : await namespaces.probe();
  if (netnsProblem)
    logger.warn({ reason: netnsProblem }, 'sandboxes get no network namespace: apps can reach this machine');
  const pods = new PodManager({
    dataDir: config.dataDir,
    isolation,
    namespaces: netnsProblem ? undefined : namespaces,
    installEgress: config.installEgress,
    memoryBytes: config.appMemoryMb * 1024 * 1024,
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
    logBytes: config.appLogBytes,
    logFileBytes: config.appLogFileBytes,
  });
  const directory = new SandboxDirectory(deployer, config.endedPageMinutes * 60_000);
  await deployer.killLeftovers();
  pods.warm();
  return {
    deployer,
    directory,
    attach(lifecycle) {
      lifecycle.on('change', (sandbox) => directory.observe(sandbox));
      deployer.onBlockedEgress = (id, blocked) => {
        lifecycle
          .recordBlockedEgress(id, blocked)
          .catch((err: unknown) => logger.error({ err, sandbox_id: id }, 'could not record blocked egress'));
      };
      deployer.onCrash = (id, error) => {
        lifecycle
          .markFailed(id, error)
          .catch((err: unknown) => logger.error({ err, sandbox_id: id }, 'could not fail a crashed sandbox'));
      };
    },
    async close() {
      directory.close();
      await deployer.close();
    },
  };
}
