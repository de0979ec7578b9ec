import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import type { SandboxLifecycle } from '../sandboxes/lifecycle.ts';
import type { Store } from '../store/store.ts';
import type { TwinCatalog } from '../twins/catalog.ts';
import { TwinHost } from '../twins/host.ts';
import { probeIsolation } from './isolation.ts';
import { EndedPages } from './ended-pages.ts';
import { LocalDeployer } from './local-deployer.ts';
import { GitHubSource } from './source.ts';
import { githubWebHosts } from '../sandboxes/pull-request-url.ts';

export { LocalDeployer } from './local-deployer.ts';

/** The embedded deploy engine as the composition root sees it. */
export interface DeployEngine {
  deployer: LocalDeployer;
  twinHost: TwinHost;
  /** Points app crashes at the lifecycle (which needs the deployer first, hence not a constructor argument). */
  attach(lifecycle: SandboxLifecycle): void;
  /** Stops every app and twin instance (Twinbox shutdown). */
  close(): Promise<void>;
}

/**
 * Builds the deploy engine on the embedded defaults: a TwinHost under `<dataDir>/twins`, source from the
 * GitHub API, apps as local process groups isolated with bubblewrap when it works here. Kills whatever a
 * previous run left running before anything is recovered.
 */
export async function createDeployEngine(deps: {
  config: Config;
  logger: Logger;
  catalog: TwinCatalog;
  store: Store;
}): Promise<DeployEngine> {
  const { config, logger, catalog, store } = deps;
  const twinHost = new TwinHost({
    dataDir: join(config.dataDir, 'twins'),
    publicHost: config.publicHost,
    logger,
  });
  const { isolation, warning } = probeIsolation(config.sandboxIsolation);
  if (warning) logger.warn(warning);
  else logger.info({ isolation: isolation.name }, 'deployed apps are isolated');
  const deployer = new LocalDeployer({
    dataDir: config.dataDir,
    publicHost: config.publicHost,
    twins: twinHost,
    source: new GitHubSource({
      apiUrl: config.githubApiUrl,
      // In production each owner's own GitHub connection is the credential, never a server-wide token.
      token: config.env === 'production' ? undefined : config.githubToken,
      webHosts: githubWebHosts(config.githubWebUrl),
    }),
    isolation,
    logger,
    supportedTwin: (name) => catalog.has(name),
    // The seed was settled when the sandbox was accepted (scenario or planned prompt) and is on the record.
    seedsFor: async (sandbox) => sandbox.seed ?? undefined,
    healthTimeoutMs: config.deployHealthTimeoutMs,
    buildTimeoutMs: config.deployBuildTimeoutMs,
    memoryBytes: config.appMemoryMb * 1024 * 1024,
    logBytes: config.appLogBytes,
    endedPages: new EndedPages(config.endedPageMinutes * 60_000, logger),
  });
  await deployer.killLeftovers();
  return {
    deployer,
    twinHost,
    attach(lifecycle) {
      deployer.onCrash = (id, error) => {
        lifecycle
          .markFailed(id, error)
          .catch((err: unknown) => logger.error({ err, sandbox_id: id }, 'could not fail a crashed sandbox'));
      };
    },
    async close() {
      await deployer.close();
      await twinHost.close();
    },
  };
}
