import type { Logger } from 'pino';
import { Probot, ProbotOctokit } from 'probot';
import type { EmitterWebhookEvent } from '@octokit/webhooks';
import type { Store } from '../server/store/store.ts';
import type { SandboxService } from '../server/sandboxes/service.ts';
import type { SandboxLifecycle } from '../server/sandboxes/lifecycle.ts';
import type { SandboxRecord } from '../server/store/records.ts';
import { QUEUES, type Job, type JobQueue, type SendResult } from '../server/jobs/queue.ts';
import { InstallationCoverage } from './coverage.ts';
import type { AppDeps } from './deps.ts';
import { PullLocks } from './lock.ts';
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
  /** Where verified deliveries wait to be processed, durably (server/jobs/). */
  jobs: JobQueue;
  /** Webhook deliveries processed at once in this process (events of one pull request are serialized anyway). */
  concurrency?: number;
  /** How long GitHub's "this installation covers that repository" answer is reused (default 60 s). */
  coverageTtlMs?: number;
}

/**
 * The GitHub App: a Probot app whose events come in through Twinbox's own hapi route (app/routes.ts),
 * which verifies the signature, has the event queued here durably, and only then answers 202. What each
 * event does is in app/handlers/, one file per event family.
 *
 * Deliveries are jobs of the job queue (QUEUES.githubDelivery), keyed by X-GitHub-Delivery: a redelivery
 * adds nothing, and a delivery acknowledged before a crash is processed after the restart (or by another
 * process). A delivery whose processing a crash cut off is processed again, which the handlers bear:
 * a pull request's sandbox is created under the pull request's lock only when its record has none for
 * that head (pull-records.ts), and the comment and Deployment are brought to the current state rather
 * than added to (comment-upkeep.ts). docs/jobs.md says what "exactly once" means here.
 */
export class GitHubApp {
  readonly probot: Probot;
  private readonly deps: AppDeps;
  private readonly pending = new Set<Promise<unknown>>();
  private readonly sandboxChanged: (sandbox: SandboxRecord) => Promise<void>;
  private readonly onChange = (sandbox: SandboxRecord) => this.track(this.sandboxChanged(sandbox));
  private working = false;

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
    const auth = (installationId?: number) => this.probot.auth(installationId);
    this.deps = {
      store: options.store,
      sandboxes: options.sandboxes,
      lifecycle: options.lifecycle,
      logger: log,
      publicUrl: options.publicUrl,
      freeTtlCapMinutes: options.freeTtlCapMinutes,
      auth,
      pullLocks: new PullLocks(options.store),
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

  /**
   * A token of installation `id`, for the deploy engine's source fetch (server/deploy/steps/source-credentials.ts),
   * minted with the App's JWT at the configured API URL; it is never stored. Asked of the App's own
   * client: `octokit.auth({ type: 'installation' })` on a process that had not used the installation
   * yet minted it at api.github.com whatever GITHUB_API_URL said (a runner, in test/e2e/multi-host).
   */
  async installationToken(id: number): Promise<string> {
    const app = await this.probot.auth();
    const { data } = await app.request('POST /app/installations/{installation_id}/access_tokens', {
      installation_id: id,
    });
    return data.token;
  }

  /** True when `signature` (X-Hub-Signature-256) is the HMAC of `body` under the webhook secret. */
  verify(body: string, signature: string): Promise<boolean> {
    return this.probot.webhooks.verify(body, signature).catch(() => false);
  }

  /**
   * Queues a verified event durably, keyed by its delivery id; resolves once it is committed, with
   * `duplicate` true when that delivery was queued before (a redelivery: it adds nothing).
   */
  enqueue(event: { id: string; name: string; payload: unknown }): Promise<SendResult> {
    return this.options.jobs.send<DeliveryJob>(
      QUEUES.githubDelivery,
      { id: event.id, name: event.name, payload: event.payload },
      { key: event.id },
    );
  }

  /** Starts processing queued deliveries in this process (after Twinbox's recovery, see twinbox.ts). */
  async startWorking(): Promise<void> {
    await this.options.jobs.work<DeliveryJob>(
      QUEUES.githubDelivery,
      { concurrency: this.options.concurrency ?? 4 },
      (job) => this.process(job),
    );
    this.working = true;
  }

  /**
   * Resolves once every queued delivery (on PostgreSQL, in any process) and every comment update has
   * finished (tests). Waits forever for deliveries while no process works them.
   */
  async idle(): Promise<void> {
    do {
      if (this.working) await this.options.jobs.idle(QUEUES.githubDelivery);
      await Promise.all([...this.pending]);
      await this.deps.pullLocks.idle();
    } while (this.pending.size);
  }

  /** Stops following sandbox changes and waits for comment updates under way (after the job queue stopped). */
  async close(): Promise<void> {
    this.options.lifecycle.off('change', this.onChange);
    while (this.pending.size) await Promise.all([...this.pending]);
    await this.deps.pullLocks.idle();
  }

  /** One delivery: Probot routes it to app/handlers/; a handler's error fails the job and is logged. */
  private async process(job: Job<DeliveryJob>): Promise<void> {
    await this.probot.receive({
      id: job.data.id,
      name: job.data.name,
      payload: job.data.payload,
    } as EmitterWebhookEvent);
  }

  private track(work: Promise<unknown>): void {
    const tracked = work.catch((error: unknown) => {
      this.options.logger.error({ err: error, component: 'github-app' }, 'GitHub App work failed');
    });
    this.pending.add(tracked);
    void tracked.finally(() => this.pending.delete(tracked));
  }
}

/** A delivery job (QUEUES.githubDelivery): X-GitHub-Delivery, X-GitHub-Event and the parsed body. */
interface DeliveryJob {
  [key: string]: unknown;
  id: string;
  name: string;
  payload: unknown;
}

/** Builds and loads the App. */
export async function createGitHubApp(options: GitHubAppOptions): Promise<GitHubApp> {
  const app = new GitHubApp(options);
  await app.load();
  return app;
}
