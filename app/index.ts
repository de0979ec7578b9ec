import PQueue from 'p-queue';
import type { Logger } from 'pino';
import { Probot, ProbotOctokit, type Context } from 'probot';
import type { EmitterWebhookEvent } from '@octokit/webhooks';
import type { Store } from '../server/store/store.ts';
import type { SandboxService } from '../server/sandboxes/service.ts';
import type { SandboxLifecycle } from '../server/sandboxes/lifecycle.ts';
import type { SandboxRecord } from '../server/store/records.ts';
import { PullRequests, pullFacts } from './pulls.ts';

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
}

const PULL_ACTIONS = new Set(['opened', 'reopened', 'synchronize', 'ready_for_review', 'closed']);

/**
 * The GitHub App: a Probot app whose events come in through Twinbox's own hapi route
 * (app/routes.ts), which verifies the signature, answers at once and queues the event here.
 */
export class GitHubApp {
  readonly probot: Probot;
  readonly pulls: PullRequests;
  private readonly queue: PQueue;
  private readonly pending = new Set<Promise<unknown>>();
  private readonly onChange = (sandbox: SandboxRecord) => this.track(this.pulls.sandboxChanged(sandbox));
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
    this.pulls = new PullRequests({
      store: options.store,
      sandboxes: options.sandboxes,
      lifecycle: options.lifecycle,
      logger: log,
      publicUrl: options.publicUrl,
      freeTtlCapMinutes: options.freeTtlCapMinutes,
      auth: (installationId) => this.probot.auth(installationId),
    });
    options.lifecycle.on('change', this.onChange);
  }

  /** Registers the event handlers; call once before the first event. */
  async load(): Promise<void> {
    await this.probot.load((app) => {
      app.on('pull_request', (context) => this.pullRequest(context));
      app.on('issue_comment.created', (context) => this.issueComment(context));
      app.on('installation.created', (context) =>
        this.pulls.installationCreated({
          id: context.payload.installation.id,
          account: accountOf(context.payload.installation.account),
          senderId: context.payload.sender.id,
        }),
      );
      app.on('installation.deleted', (context) =>
        this.pulls.installationDeleted(context.payload.installation.id),
      );
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
      await this.pulls.idle();
    }
    await this.pulls.idle();
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

  private async pullRequest(context: Context<'pull_request'>): Promise<void> {
    const { payload } = context;
    if (!PULL_ACTIONS.has(payload.action)) return;
    const installationId = 'installation' in payload ? payload.installation?.id : undefined;
    if (installationId === undefined) return;
    await this.pulls.pullRequestEvent(payload.action, pullFacts(payload.pull_request, installationId));
  }

  private async issueComment(context: Context<'issue_comment.created'>): Promise<void> {
    const { payload } = context;
    const installationId = payload.installation?.id;
    if (installationId === undefined) return;
    await this.pulls.commentCommand({
      octokit: context.octokit,
      installationId,
      repoId: payload.repository.id,
      owner: payload.repository.owner.login,
      repo: payload.repository.name,
      number: payload.issue.number,
      body: payload.comment.body,
      commenter: payload.comment.user?.login ?? 'ghost',
      commenterIsBot: payload.comment.user?.type === 'Bot',
      isPullRequest: payload.issue.pull_request !== undefined,
    });
  }
}

function accountOf(
  account: { id: number; login?: string; slug?: string; type?: string } | null | undefined,
): { id: number; login: string; type: string } | null {
  if (!account) return null;
  return { id: account.id, login: account.login ?? account.slug ?? '', type: account.type ?? 'User' };
}

/** Builds and loads the App. */
export async function createGitHubApp(options: GitHubAppOptions): Promise<GitHubApp> {
  const app = new GitHubApp(options);
  await app.load();
  return app;
}
