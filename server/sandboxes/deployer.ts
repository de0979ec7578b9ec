import type { SandboxRecord, TwinEntry } from '../store/records.ts';

/** What a finished deploy hands back: the spec's connection details of a `ready` sandbox. */
export interface DeployResult {
  /** Null for a twin set, which has no app. */
  app_url: string | null;
  twins: Record<string, TwinEntry>;
  env_vars: Record<string, string>;
  /** `full`: own network namespace, bubblewrap and limits; `none`: the app shares the machine (dev only). */
  isolation: 'full' | 'none';
}

/**
 * A deploy that failed because of what was deployed (its source, profile, install, build or the app
 * itself), not because of Twinbox. Its message is the sandbox's `error`; Twinbox's log gets one line
 * without a stack, which would only point into Twinbox and mislead. Any other error is Twinbox's own.
 */
export class DeployFailure extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'DeployFailure';
  }
}

/**
 * The seam between the sandbox lifecycle and whatever really runs a sandbox (twins, source, app).
 * `deploy` must stop early and release what it started when `signal` aborts; `teardown` must be
 * idempotent, since it is also called for sandboxes that never got far. `teardown` may resolve once the
 * app is being stopped (DELETE answers then) and finish its cleanup after, as long as its own shutdown
 * waits for that cleanup.
 */
export interface Deployer {
  deploy(sandbox: SandboxRecord, signal: AbortSignal): Promise<DeployResult>;
  teardown(sandbox: SandboxRecord): Promise<void>;
  /** Brings a `ready` sandbox back after a Twinbox restart; without it such sandboxes are failed. */
  resume?(sandbox: SandboxRecord): Promise<void>;
  /**
   * Told once a deploy's outcome (`ready`, `failed`, or cut off) is recorded in the store: work the
   * deployer put off so as not to compete with the deploy (refilling a pool of spares) may run now.
   */
  settled?(sandboxId: string): void;
}
