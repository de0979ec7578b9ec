import type { Logger } from 'pino';
import type { Store } from '../server/store/store.ts';
import type { SandboxService } from '../server/sandboxes/service.ts';
import type { SandboxLifecycle } from '../server/sandboxes/lifecycle.ts';
import type { InstallationCoverage } from './coverage.ts';
import type { GitHubClient } from './github.ts';
import type { PullLocks } from './lock.ts';

/** What the App's handlers and helpers work with; built once in index.ts. */
export interface AppDeps {
  store: Store;
  sandboxes: SandboxService;
  lifecycle: SandboxLifecycle;
  logger: Logger;
  /** Twinbox's public base URL (links in comments). */
  publicUrl: () => string;
  freeTtlCapMinutes: number;
  /** An Octokit authenticated as the installation (`undefined`: as the App itself, with its JWT). */
  auth: (installationId?: number) => Promise<GitHubClient>;
  /**
   * All work on one pull request (events, commands, sandbox changes) runs under its key, in order, in
   * every process sharing the store (lock.ts).
   */
  pullLocks: PullLocks;
  /** Whether a webhook's repository really belongs to its installation (GitHub asked, cached briefly). */
  coverage: InstallationCoverage;
}
