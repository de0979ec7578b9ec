import { createHash } from 'node:crypto';
import type { Server } from '@hapi/hapi';
import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import type { Store } from '../store/store.ts';
import type { SandboxLifecycle } from '../sandboxes/lifecycle.ts';
import type { AppLogReader } from '../sandboxes/routes.ts';
import type { SandboxEndpoints } from '../router/index.ts';
import type { SandboxRecord } from '../store/records.ts';
import { RunnerRegistry } from './registry.ts';
import { RunnerWatchdog } from './watchdog.ts';
import { SandboxLocator } from './locator.ts';
import { RoutedLogs } from './logs.ts';
import { RoutedTwins, type TwinSocketOf } from './twins.ts';
import { HeldSandboxReconciler } from './reconciler.ts';
import { runnerRoutes } from './routes.ts';

export { lostRunnerError } from './watchdog.ts';
export { RunnerRegistry } from './registry.ts';
export { localTwinReach, type TwinSocketOf } from './twins.ts';

/** What this process is, from TWINBOX_ROLE and the store (docs/scaling.md). */
export interface ProcessRole {
  /** Runs deploys and pods (`all` and `runner`). */
  runsSandboxes: boolean;
  /** Shares PostgreSQL with other processes: the registry, the watchdog and forwarding are on. */
  shared: boolean;
  /** This process's runner id, when it runs sandboxes on a shared database. */
  runnerId: string | undefined;
}

export function processRole(config: Config): ProcessRole {
  const shared = config.databaseUrl !== undefined;
  const runsSandboxes = config.role !== 'api';
  // Stable across restarts of one host (its data directory), so a restarted runner finds its sandboxes.
  const runnerId =
    shared && runsSandboxes
      ? (config.runnerId ??
        `runner-${createHash('sha256').update(config.dataDir).digest('hex').slice(0, 12)}`)
      : undefined;
  return { runsSandboxes, shared, runnerId };
}

/** An API process has no pod: the router finds every sandbox through the locator. */
export const NO_LOCAL_SANDBOXES: SandboxEndpoints = {
  socketFor: () => undefined,
  stateOf: () => ({ state: 'unknown' }),
};

/**
 * The parts that let processes share one PostgreSQL (docs/scaling.md, "Several hosts"): the runner
 * registry and this runner's heartbeat, the watchdog applying the policy on a runner's death, the
 * locator the router forwards with, logs and twins read wherever the sandbox runs, and, on a runner,
 * the reconciler that releases pods of sandboxes another process ended.
 */
export class Cluster {
  readonly registry: RunnerRegistry;
  readonly locator: SandboxLocator;
  readonly logs: RoutedLogs;
  /** The twin inspector's and the timeline's way to a twin (TwinAdminReach: `twins.reach`). */
  readonly twins: RoutedTwins;
  private readonly watchdog: RunnerWatchdog;
  private readonly reconciler: HeldSandboxReconciler | undefined;

  constructor(
    private readonly deps: {
      config: Config;
      role: ProcessRole;
      store: Store;
      logger: Logger;
      lifecycle: SandboxLifecycle;
      /** This process's deploy logs, when it runs sandboxes. */
      localLogs: AppLogReader | undefined;
      /** Where twins listen in this process's pods, when it runs sandboxes. */
      twinSocket?: TwinSocketOf;
      /** Stops a sandbox's pod here and tells the router (a runner); undefined on an API process. */
      local?: { release(sandbox: SandboxRecord): Promise<void>; observe(sandbox: SandboxRecord): void };
    },
  ) {
    const { config, role, store, logger, lifecycle } = deps;
    this.registry = new RunnerRegistry({ store, logger, staleMs: config.runnerStaleSeconds * 1000 });
    this.locator = new SandboxLocator({
      store,
      registry: this.registry,
      selfId: role.runnerId,
      keepEndedMs: config.endedPageMinutes * 60_000,
    });
    this.logs = new RoutedLogs({
      store,
      registry: this.registry,
      selfId: role.runnerId,
      local: deps.localLogs,
      // processRole's callers have a shared database, and config requires the token off `all`.
      adminToken: config.adminToken ?? '',
    });
    this.twins = new RoutedTwins({
      store,
      registry: this.registry,
      selfId: role.runnerId,
      socketOf: deps.twinSocket,
      adminToken: config.adminToken ?? '',
    });
    this.watchdog = new RunnerWatchdog({ store, registry: this.registry, lifecycle, logger });
    this.reconciler =
      role.runnerId && deps.local
        ? new HeldSandboxReconciler({
            store,
            selfId: role.runnerId,
            lifecycle,
            release: deps.local.release,
            observe: deps.local.observe,
            logger,
            intervalMs: 1000,
          })
        : undefined;
  }

  /**
   * Mounts the runner's internal routes and registers this runner once the server listens (its port
   * is known only then: PORT=0).
   */
  async attach(server: Server): Promise<void> {
    const { config, role, localLogs } = this.deps;
    const runnerId = role.runnerId;
    if (!runnerId) return;
    if (localLogs && config.adminToken)
      await server.register({ plugin: runnerRoutes, options: { logs: localLogs, twins: this.twins } });
    server.ext('onPostStart', async () => {
      const url = config.runnerUrl ?? `http://${config.publicHost}:${Number(server.info.port)}`;
      await this.registry.register(runnerId, url);
    });
  }

  /** Starts the watchdog and, on a runner, the reconciler. */
  async start(): Promise<void> {
    this.watchdog.start();
    await this.reconciler?.start();
  }

  /**
   * Stops the loops. The registry record stays: a runner restarted under its id resumes its
   * sandboxes; one that never comes back is declared lost once its heartbeat is stale.
   */
  async stop(): Promise<void> {
    this.registry.stop();
    await this.watchdog.stop();
    await this.reconciler?.stop();
  }
}
