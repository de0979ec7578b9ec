import type { Store } from '../store/store.ts';
import { TwinAdminClient, type TwinAdminReach } from '../twins/kit/admin-client.ts';
import type { RunnerRegistry } from './registry.ts';
import { runnerTwinAdminUrl, type HeldTwins } from './routes.ts';

/** Where a sandbox's twin listens in this process's pod (its Unix socket); undefined when not here. */
export type TwinSocketOf = (sandboxId: string, twin: string) => string | undefined;

/** Twins in this process's own pods only: one process on its own, with no other runner to ask. */
export function localTwinReach(socketOf: TwinSocketOf | undefined): TwinAdminReach {
  return async (sandbox, twin, options) => {
    const socket = socketOf?.(sandbox.id, twin);
    return socket
      ? TwinAdminClient.overSocket(socket, sandbox.twin_admin_token, options?.timeoutMs)
      : undefined;
  };
}

/**
 * The admin API of a sandbox's twins wherever the sandbox runs, as RoutedLogs does for deploy logs:
 * over the pod's socket when this process holds the sandbox, else through the runner holding it
 * (RUNNER_TWIN_ADMIN_PATH in ./routes.ts, with the admin token), which passes each call on to the twin in its pod.
 * A sandbox whose runner is lost has its twins on that host only: there is nothing to reach.
 */
export class RoutedTwins implements HeldTwins {
  private readonly local: TwinAdminReach;

  constructor(
    private readonly deps: {
      store: Store;
      registry: RunnerRegistry;
      selfId: string | undefined;
      /** This process's pods (a runner, or `all`); undefined on an API process. */
      socketOf: TwinSocketOf | undefined;
      adminToken: string;
    },
  ) {
    this.local = localTwinReach(deps.socketOf);
  }

  readonly reach: TwinAdminReach = async (sandbox, twin, options) => {
    const here = await this.local(sandbox, twin, options);
    if (here) return here;
    const { store, registry, selfId, adminToken } = this.deps;
    const runnerId =
      sandbox.runner_id !== undefined
        ? sandbox.runner_id
        : (await store.sandboxes.get(sandbox.id))?.runner_id;
    if (!runnerId || runnerId === selfId) return undefined;
    const url = await registry.urlOf(runnerId);
    if (!url) return undefined;
    return new TwinAdminClient(runnerTwinAdminUrl(url, sandbox.id, twin), adminToken, {
      timeoutMs: options?.timeoutMs,
    });
  };

  /** For the runner's route: the twin in this process's pod, with the token from the sandbox's record. */
  async here(
    sandboxId: string,
    twin: string,
  ): Promise<TwinAdminClient | 'no-sandbox' | 'no-twin' | 'not-here'> {
    const sandbox = await this.deps.store.sandboxes.get(sandboxId);
    if (!sandbox) return 'no-sandbox';
    // The pod names a socket for any name: the record says which twins the sandbox has.
    if (!(twin in sandbox.twins) && !sandbox.twin_names.includes(twin)) return 'no-twin';
    return (await this.local(sandbox, twin)) ?? 'not-here';
  }
}
