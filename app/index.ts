import PQueue from 'p-queue';
import type { Logger } from 'pino';
import { Probot, ProbotOctokit } from 'probot';
import type { EmitterWebhookEvent } from '@octokit/webhooks';
import type { Store } from '../server/store/store.ts';
import type { SandboxService } from '../server/sandboxes/service.ts';
import type { SandboxLifecycle } from '../server/sandboxes/lifecycle.ts';
import type { SandboxRecord } from '../server/store/records.ts';
import { InstallationCoverage } from './coverage.ts';
import type { AppDeps } from './deps.ts';
import { KeyedLock } from '../server/keyed-lock.ts';
import { onInstallationCreated, onInstallationDeleted } from './handlers/installation.ts';
import { onIssueComment } from './handlers/issue-comment.ts';
import { onPullRequest } from './handlers/pull-request.ts';
import { onSandboxChange } from './handlers/sandbox-change.ts';

export interface GitHubAppOptions {
  appId: string;
  privateKey: string;
  webhookSecret: string;
  /** GitHub's REST API (GITHUB_API_URL): api.github.com, GitHub Enterprise, or the GitHub twin in tests. */
  apiUrl: string;
  store: Store;
  sandboxes: SandboxService;
  lifecycle: SandboxLifecycle;
  logger: Logger;
  publicUrl: () => string;
  freeTtlCapMinutes: number;
  /** Webhook deliveries processed at once (events of one pull request are serialized anyway). */
  concurrency?: number;
  /** How long GitHub's "this installation covers that repository" answer is reused (default 60 s). */
  coverageTtlMs?: number;
}

/**
 * The GitHub App: a Probot app whose events come in through Twinbox's own hapi route (app/routes.ts),
 * which verifies the signature, answers at once and queues the event here. What each event does is in
 * app/handlers/, one file per event family.
 */
export class GitHubApp {
  readonly probot: Probot;
  private readonly deps: AppDeps;
  private readonly queue: PQueue;
  private readonly pending = new Set<Promise<unknown>>();
  private readonly sandboxChanged: (sandbox: SandboxRecord) => Promise<void>;
  private readonly onChange = (sandbox: SandboxRecord) => this.track(this.sandboxChanged(sandbox));
  private closed = false;

  constructor(private readonly options: GitHubAppOptions) {
    const log = options.logger.child({ component: 'github-app' });
    this.probot = new Probot({
      appId: options.appId,
      privateKey: options.privateKey,
      secret: options.webhookSecret,
      baseUrl: options.apiUrl,
      log,
      // Retries and throttling stay on (GitHub's secondary limits), but a failed call is not retried for
      // minutes: the comment is brought up to date again by the next change anyway.
      Octokit: ProbotOctokit.defaults({ retry: { retries: 1 }, throttle: { enabled: false } }),
    });
    this.queue = new PQueue({ concurrency: options.concurrency ?? 4 });
    const auth = (installationId?: number) => this.probot.auth(installationId);
    this.deps = {
      store: options.store,
      sandboxes: options.sandboxes,
      lifecycle: options.lifecycle,
      logger: log,
      publicUrl: options.publicUrl,
      freeTtlCapMinutes: options.freeTtlCapMinutes,
      auth,
      pullLocks: new KeyedLock(),
      coverage: new InstallationCoverage({ auth, logger: log, ttlMs: options.coverageTtlMs ?? 60_000 }),
    };
    this.sandboxChanged = onSandboxChange(this.deps);
    options.lifecycle.on('change', this.onChange);
  }

  /** Registers the event handlers; call once before the first event. */
  async load(): Promise<void> {
    await this.probot.load((app) => {
      app.on('pull_request', onPullRequest(this.deps));
      app.on('issue_comment.created', onIssueComment(this.deps));
      app.on('installation.created', onInstallationCreated(this.deps));
      app.on('installation.deleted', onInstallationDeleted(this.deps));
    });
  }

  /** True when `signature` (X-Hub-Signature-256) is the HMAC of `body` under the webhook secret. */
  verify(body: string, signature: string): Promise<boolean> {
    return this.probot.webhooks.verify(body, signature).catch(() => false);
  }

  /** Queues a verified event; errors are logged, never thrown back to the webhook sender. */
  enqueue(event: { id: string; name: string; payload: unknown }): void {
    if (this.closed) return;
    this.track(this.queue.add(() => this.probot.receive(event as EmitterWebhookEvent)));
  }

  /** Resolves once every queued event and every comment update has finished (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.pending.size || this.queue.size || this.queue.pending) {
      await Promise.all([...this.pending]);
      await this.queue.onIdle();
      await this.deps.pullLocks.idle();
    }
    await this.deps.pullLocks.idle();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.options.lifecycle.off('change', this.onChange);
    this.queue.clear();
    await this.idle();
  }

  private track(work: Promise<unknown>): void {
    const tracked = work.catch((error: unknown) => {
      this.options.logger.error({ err: error, component: 'github-app' }, 'GitHub App work failed');
    });
    this.pending.add(tracked);
    void tracked.finally(() => this.pending.delete(tracked));
  }
}

/** Builds and loads the App. */
export async function createGitHubApp(options: GitHubAppOptions): Promise<GitHubApp> {
  const app = new GitHubApp(options);
  await app.load();
  return app;
}
