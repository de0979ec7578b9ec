import Boom from '@hapi/boom';
import type { Logger } from 'pino';
import type { ProbotOctokit } from 'probot';
import type { Store } from '../server/store/store.ts';
import type {
  AccountRecord,
  GitHubInstallationRecord,
  GitHubPullRecord,
  SandboxRecord,
  SandboxStatus,
} from '../server/store/records.ts';
import type { SandboxService, CreateSandboxInput } from '../server/sandboxes/service.ts';
import type { SandboxLifecycle } from '../server/sandboxes/lifecycle.ts';
import { createSandboxSchema, TTL_MAX } from '../server/sandboxes/validation.ts';
import { MARKER, renderComment } from './comment.ts';
import { branchAllowed, fetchRepoConfigText, parseRepoConfig, RepoConfigError } from './config.ts';

export type GitHubClient = InstanceType<typeof ProbotOctokit>;

export interface PullDeps {
  store: Store;
  sandboxes: SandboxService;
  lifecycle: SandboxLifecycle;
  logger: Logger;
  /** Twinbox's public base URL (links in comments). */
  publicUrl: () => string;
  freeTtlCapMinutes: number;
  /** An Octokit authenticated as the installation (`undefined`: as the App itself, with its JWT). */
  auth: (installationId?: number) => Promise<GitHubClient>;
}

/** What a pull_request payload tells us, in the shape the rest of this module uses. */
export interface PullFacts {
  repoId: number;
  repo: string;
  number: number;
  htmlUrl: string;
  installationId: number;
  headSha: string;
  headRef: string;
  baseRef: string;
  fork: boolean;
  draft: boolean;
  state: 'open' | 'closed';
}

interface PullPayload {
  number: number;
  html_url: string;
  state: string;
  draft?: boolean;
  head: { sha: string; ref: string; repo: { full_name: string } | null };
  base: { ref: string; repo: { id: number; full_name: string } };
}

export function pullFacts(pr: PullPayload, installationId: number): PullFacts {
  return {
    repoId: pr.base.repo.id,
    repo: pr.base.repo.full_name,
    number: pr.number,
    htmlUrl: pr.html_url,
    installationId,
    headSha: pr.head.sha,
    headRef: pr.head.ref,
    baseRef: pr.base.ref,
    // A deleted fork has no repo: treat it as a fork, the cautious choice.
    fork: pr.head.repo?.full_name?.toLowerCase() !== pr.base.repo.full_name.toLowerCase(),
    draft: pr.draft === true,
    state: pr.state === 'closed' ? 'closed' : 'open',
  };
}

const WRITE_PERMISSIONS = new Set(['admin', 'maintain', 'write', 'push']);
const DEPLOYMENT_STATE: Record<SandboxStatus, string> = {
  queued: 'in_progress',
  building: 'in_progress',
  ready: 'success',
  failed: 'failure',
  expired: 'inactive',
  deleted: 'inactive',
};
const LIVE: ReadonlySet<SandboxStatus> = new Set(['queued', 'building', 'ready', 'failed']);
export const EXTEND_DEFAULT_MINUTES = 30;

/**
 * Everything the App does for pull requests: one sandbox per pull request (replaced on each push,
 * ended when it closes), one Deployment per sandbox, one comment kept up to date. All work on one pull
 * request runs under its lock, so events, commands and sandbox changes never interleave on it.
 */
export class PullRequests {
  private readonly locks = new Map<string, Promise<unknown>>();

  constructor(private readonly deps: PullDeps) {}

  /** Resolves once no pull request has work running. */
  async idle(): Promise<void> {
    while (this.locks.size) await Promise.all(this.locks.values());
  }

  // ---- events -------------------------------------------------------------------------------------------

  async pullRequestEvent(action: string, facts: PullFacts): Promise<void> {
    const key = `${facts.repoId}-${facts.number}`;
    await this.withLock(key, async () => {
      const previous = await this.deps.store.githubPulls.get(key);
      let rec = await this.remember(key, facts);
      if (action === 'closed') {
        await this.endCurrent(rec, 'closed');
        rec = await this.save(rec, {
          notice: rec.sandbox_id ? null : { kind: 'closed', text: 'The pull request was closed.' },
        });
        await this.sync(rec);
        return;
      }
      const pushed = previous !== undefined && previous.head_sha !== facts.headSha;
      if (pushed) rec = await this.supersede(rec);
      const live = rec.sandbox_id ? await this.liveSandbox(rec.sandbox_id) : undefined;
      // A repeated opened/ready_for_review for the commit already deployed changes nothing.
      if (live && !pushed) {
        await this.sync(rec);
        return;
      }
      await this.deploy(rec, facts, { byCommand: false });
    });
  }

  async installationCreated(installation: {
    id: number;
    account: { id: number; login: string; type?: string } | null;
    senderId: number | null;
  }): Promise<void> {
    const now = new Date().toISOString();
    const record: GitHubInstallationRecord = {
      id: String(installation.id),
      github_account_id: installation.account?.id ?? 0,
      github_account_login: installation.account?.login ?? '',
      github_account_type: installation.account?.type ?? 'User',
      installer_github_id: installation.senderId,
      created_at: now,
      updated_at: now,
    };
    const existing = await this.deps.store.githubInstallations.get(record.id);
    if (existing) {
      await this.deps.store.githubInstallations.update(record.id, (current) => ({
        ...record,
        created_at: current.created_at,
      }));
    } else {
      await this.deps.store.githubInstallations.insert(record);
    }
  }

  async installationDeleted(id: number): Promise<void> {
    await this.deps.store.githubInstallations.delete(String(id));
  }

  /** An issue comment on a pull request: `/twinbox deploy | extend [minutes] | stop` from writers. */
  async commentCommand(input: {
    octokit: GitHubClient;
    installationId: number;
    repoId: number;
    owner: string;
    repo: string;
    number: number;
    body: string;
    commenter: string;
    commenterIsBot: boolean;
    /** GitHub marks pull requests' issues with `issue.pull_request`; when absent we ask (some servers omit it). */
    isPullRequest: boolean;
  }): Promise<void> {
    const text = input.body.trim();
    if (input.commenterIsBot || text.includes(MARKER)) return;
    const match = /^\/twinbox\s+(\S+)(?:\s+(\S+))?\s*$/i.exec(text.split('\n')[0]!.trim());
    if (!/^\/twinbox\b/i.test(text)) return;
    const { octokit, owner, repo, number } = input;
    if (!input.isPullRequest && !(await this.isPull(octokit, owner, repo, number))) return;
    const reply = (body: string) =>
      octokit.rest.issues.createComment({ owner, repo, issue_number: number, body });
    if (!(await this.canWrite(octokit, owner, repo, input.commenter))) {
      await reply(
        `@${input.commenter} only people with write access to ${owner}/${repo} can run Twinbox commands; nothing was done.`,
      );
      return;
    }
    const command = match?.[1]?.toLowerCase();
    const argument = match?.[2];
    if (!command || !['deploy', 'extend', 'stop'].includes(command)) {
      await reply(
        `@${input.commenter} unknown Twinbox command. Use \`/twinbox deploy\`, \`/twinbox extend [minutes]\` or \`/twinbox stop\`.`,
      );
      return;
    }
    const key = `${input.repoId}-${number}`;
    await this.withLock(key, async () => {
      const { data: pr } = await octokit.rest.pulls.get({ owner, repo, pull_number: number });
      const facts = pullFacts(pr as PullPayload, input.installationId);
      let rec = await this.remember(key, facts);
      if (facts.state === 'closed') {
        await reply(`@${input.commenter} this pull request is closed; nothing was done.`);
        return;
      }
      if (command === 'deploy') {
        rec = await this.save(rec, { approved_sha: facts.headSha });
        rec = await this.supersede(rec);
        await this.deploy(rec, facts, { byCommand: true });
        return;
      }
      const sandbox = rec.sandbox_id ? await this.liveSandbox(rec.sandbox_id) : undefined;
      if (!sandbox) {
        await reply(`@${input.commenter} this pull request has no running sandbox; nothing was done.`);
        return;
      }
      if (command === 'stop') {
        rec = await this.save(rec, {
          notice: {
            kind: 'stopped',
            text: `Stopped by @${input.commenter}. Comment \`/twinbox deploy\` to start a new one.`,
          },
        });
        await this.deps.lifecycle.end(sandbox.id, 'deleted');
        await this.sync(rec);
        return;
      }
      const minutes = argument === undefined ? EXTEND_DEFAULT_MINUTES : Number(argument);
      if (!Number.isInteger(minutes) || minutes < 1 || minutes > TTL_MAX) {
        await reply(
          `@${input.commenter} \`/twinbox extend\` takes a whole number of minutes from 1 to ${TTL_MAX}.`,
        );
        return;
      }
      const refusal = await this.extend(sandbox, minutes);
      if (refusal) {
        await reply(`@${input.commenter} ${refusal}`);
        return;
      }
      await this.sync(rec);
    });
  }

  /** A sandbox changed state: bring its pull request's Deployment and comment up to date. */
  async sandboxChanged(sandbox: SandboxRecord): Promise<void> {
    const rec = await this.deps.store.githubPulls.findOneBy('sandbox_id', sandbox.id);
    if (!rec) return;
    await this.withLock(rec.id, async () => {
      const current = await this.deps.store.githubPulls.get(rec.id);
      // Superseded meanwhile: the pull request speaks about its new sandbox now.
      if (!current || current.sandbox_id !== sandbox.id) return;
      await this.sync(current);
    });
  }

  // ---- steps --------------------------------------------------------------------------------------------

  private async deploy(rec: GitHubPullRecord, facts: PullFacts, opts: { byCommand: boolean }): Promise<void> {
    const octokit = await this.deps.auth(facts.installationId);
    const account = await this.accountOf(facts.installationId);
    if (!account) {
      await this.noticeAndSync(rec, 'connect', await this.connectText(facts.installationId));
      return;
    }
    const [owner, name] = facts.repo.split('/') as [string, string];
    let config;
    try {
      config = parseRepoConfig(await fetchRepoConfigText(octokit, owner, name, facts.baseRef));
    } catch (error) {
      if (!(error instanceof RepoConfigError)) throw error;
      await this.noticeAndSync(
        rec,
        'config',
        `\`.github/twinbox.yml\` on \`${facts.baseRef}\` is not valid, so nothing was deployed: ${error.message}`,
      );
      return;
    }
    if (!branchAllowed(config, facts.baseRef)) {
      await this.noticeAndSync(
        rec,
        'branch',
        `Pull requests into \`${facts.baseRef}\` get no sandbox (\`branches\` in \`.github/twinbox.yml\`).`,
      );
      return;
    }
    if (facts.draft && !config.drafts && !opts.byCommand) {
      await this.noticeAndSync(
        rec,
        'draft',
        'Draft pull requests get a sandbox when marked ready for review (or set `drafts: true` in `.github/twinbox.yml`, or comment `/twinbox deploy`).',
      );
      return;
    }
    if (facts.fork && rec.approved_sha !== facts.headSha) {
      await this.noticeAndSync(
        rec,
        'approval',
        `This pull request comes from a fork, so it is deployed only after someone with write access to ${facts.repo} ` +
          `reviews commit \`${facts.headSha.slice(0, 7)}\` and comments \`/twinbox deploy\`.`,
      );
      return;
    }
    const input: CreateSandboxInput = {
      repo: facts.repo,
      pr_url: facts.htmlUrl,
      ...(config.twins ? { twins: config.twins } : {}),
      ...(config.scenario ? { scenario_id: config.scenario } : {}),
      ...(config.ttl_minutes ? { ttl_minutes: config.ttl_minutes } : {}),
      // A fork's code must not see the variables the repository's writers configured.
      ...(!facts.fork && Object.keys(config.env).length ? { env: config.env } : {}),
    };
    let sandbox: SandboxRecord;
    try {
      const { error } = createSandboxSchema.validate(input);
      if (error) throw Boom.badRequest(error.details.map((d) => d.message).join('; '));
      sandbox = await this.deps.sandboxes.create(account, input);
    } catch (error) {
      if (!Boom.isBoom(error)) throw error;
      await this.noticeAndSync(rec, 'refused', `Twinbox refused the sandbox: ${error.message}`);
      return;
    }
    rec = await this.save(rec, {
      sandbox_id: sandbox.id,
      notice: null,
      deployment_id: null,
      deployment_state: null,
    });
    const deploymentId = await this.createDeployment(octokit, owner, name, facts, sandbox);
    if (deploymentId !== null) rec = await this.save(rec, { deployment_id: deploymentId });
    await this.sync(rec);
  }

  private async createDeployment(
    octokit: GitHubClient,
    owner: string,
    repo: string,
    facts: PullFacts,
    sandbox: SandboxRecord,
  ): Promise<number | null> {
    try {
      const { data } = await octokit.rest.repos.createDeployment({
        owner,
        repo,
        ref: facts.headSha,
        environment: `twinbox/pr-${facts.number}`,
        transient_environment: true,
        production_environment: false,
        auto_merge: false,
        required_contexts: [],
        description: `Twinbox sandbox ${sandbox.id}`,
        payload: { sandbox_id: sandbox.id },
      });
      return 'id' in data ? data.id : null;
    } catch (error) {
      // The comment still tells the story; a missing Deployment must not stop the sandbox.
      this.deps.logger.warn(
        { err: error, repo: facts.repo, pr: facts.number },
        'could not create a GitHub deployment',
      );
      return null;
    }
  }

  /** Ends the pull request's current sandbox because a newer commit (or a command) replaces it. */
  private async supersede(rec: GitHubPullRecord): Promise<GitHubPullRecord> {
    if (!rec.sandbox_id) return rec;
    const old = { sandbox: rec.sandbox_id, deployment: rec.deployment_id, state: rec.deployment_state };
    // Detach first, so the ended sandbox's own change events no longer touch this pull request.
    rec = await this.save(rec, { sandbox_id: null, deployment_id: null, deployment_state: null });
    await this.deps.lifecycle.end(old.sandbox, 'deleted');
    if (old.deployment !== null && old.state !== 'inactive') {
      await this.postDeploymentState(rec, old.deployment, 'inactive', undefined);
    }
    return rec;
  }

  private async endCurrent(rec: GitHubPullRecord, why: 'closed'): Promise<void> {
    if (!rec.sandbox_id) return;
    const sandbox = await this.liveSandbox(rec.sandbox_id);
    if (sandbox) await this.deps.lifecycle.end(sandbox.id, 'deleted');
    this.deps.logger.info(
      { sandbox_id: rec.sandbox_id, pr: rec.html_url, why },
      'pull request sandbox ended',
    );
  }

  /** Minutes added to the expiry, as long as the whole lifetime stays within the account's plan. */
  private async extend(sandbox: SandboxRecord, minutes: number): Promise<string | undefined> {
    const owner = await this.deps.store.accounts.get(sandbox.owner_id);
    const cap = owner?.plan === 'pro' ? TTL_MAX : Math.min(this.deps.freeTtlCapMinutes, TTL_MAX);
    const from = Math.max(Date.now(), Date.parse(sandbox.expires_at));
    const expires = new Date(from + minutes * 60_000);
    const lifetime = Math.ceil((expires.getTime() - Date.parse(sandbox.created_at)) / 60_000);
    if (lifetime > cap) {
      return (
        `extending by ${minutes} minutes would make the sandbox live ${lifetime} minutes, above the ` +
        `${owner?.plan ?? 'free'} plan's cap of ${cap} minutes; nothing was done.`
      );
    }
    await this.deps.store.sandboxes.update(sandbox.id, (current) =>
      LIVE.has(current.status)
        ? { ...current, expires_at: expires.toISOString(), updated_at: new Date().toISOString() }
        : current,
    );
    return undefined;
  }

  /** Brings the Deployment and the one comment in line with the record and its sandbox. */
  private async sync(rec: GitHubPullRecord): Promise<void> {
    const sandbox = rec.sandbox_id ? await this.deps.store.sandboxes.get(rec.sandbox_id) : undefined;
    if (sandbox && rec.deployment_id !== null) {
      const desired = DEPLOYMENT_STATE[sandbox.status];
      if (desired !== rec.deployment_state) {
        await this.postDeploymentState(rec, rec.deployment_id, desired, sandbox);
        rec = await this.save(rec, { deployment_state: desired });
      }
    }
    const body = renderComment({
      headSha: rec.head_sha,
      prState: rec.state,
      notice: rec.notice,
      sandbox: sandbox ?? null,
      publicUrl: this.deps.publicUrl(),
    });
    if (body === rec.comment_body) return;
    const commentId = await this.upsertComment(rec, body);
    await this.save(rec, { comment_id: commentId, comment_body: body });
  }

  private async postDeploymentState(
    rec: GitHubPullRecord,
    deploymentId: number,
    state: string,
    sandbox: SandboxRecord | undefined,
  ): Promise<void> {
    const [owner, repo] = rec.repo.split('/') as [string, string];
    const octokit = await this.deps.auth(rec.installation_id);
    const logs = sandbox ? `${this.deps.publicUrl()}/sandboxes/${sandbox.id}/logs` : undefined;
    try {
      await octokit.rest.repos.createDeploymentStatus({
        owner,
        repo,
        deployment_id: deploymentId,
        state: state as 'in_progress' | 'success' | 'failure' | 'inactive',
        ...(sandbox?.app_url && state === 'success' ? { environment_url: sandbox.app_url } : {}),
        ...(logs ? { log_url: logs } : {}),
        description: sandbox?.error?.slice(0, 140) ?? `Twinbox sandbox ${state.replace('_', ' ')}`,
        // One sandbox per pull request: other pull requests' environments are not ours to deactivate.
        auto_inactive: false,
      });
    } catch (error) {
      this.deps.logger.warn(
        { err: error, deployment_id: deploymentId, state },
        'could not post a deployment status',
      );
    }
  }

  private async upsertComment(rec: GitHubPullRecord, body: string): Promise<number> {
    const [owner, repo] = rec.repo.split('/') as [string, string];
    const octokit = await this.deps.auth(rec.installation_id);
    if (rec.comment_id !== null) {
      try {
        await octokit.rest.issues.updateComment({ owner, repo, comment_id: rec.comment_id, body });
        return rec.comment_id;
      } catch (error) {
        if ((error as { status?: number }).status !== 404) throw error;
        // Someone deleted it: find another with the marker, or write a new one.
      }
    }
    const comments = await octokit.paginate(octokit.rest.issues.listComments, {
      owner,
      repo,
      issue_number: rec.number,
      per_page: 100,
    });
    const existing = comments.find((c) => c.body?.includes(MARKER));
    if (existing) {
      if (existing.body !== body) {
        await octokit.rest.issues.updateComment({ owner, repo, comment_id: existing.id, body });
      }
      return existing.id;
    }
    const { data } = await octokit.rest.issues.createComment({ owner, repo, issue_number: rec.number, body });
    return data.id;
  }

  private async isPull(octokit: GitHubClient, owner: string, repo: string, number: number): Promise<boolean> {
    try {
      await octokit.rest.pulls.get({ owner, repo, pull_number: number });
      return true;
    } catch (error) {
      if ((error as { status?: number }).status === 404) return false;
      throw error;
    }
  }

  private async canWrite(
    octokit: GitHubClient,
    owner: string,
    repo: string,
    login: string,
  ): Promise<boolean> {
    try {
      const { data } = await octokit.rest.repos.getCollaboratorPermissionLevel({
        owner,
        repo,
        username: login,
      });
      const role = (data as { role_name?: string }).role_name;
      return WRITE_PERMISSIONS.has(data.permission) || (role !== undefined && WRITE_PERMISSIONS.has(role));
    } catch (error) {
      // GitHub answers 404 for someone who is not a collaborator at all.
      if ((error as { status?: number }).status === 404) return false;
      throw error;
    }
  }

  // ---- accounts -----------------------------------------------------------------------------------------

  /**
   * The Twinbox account an installation belongs to: the account whose connected GitHub identity
   * installed it (the `sender` of `installation.created`), or, for an installation on a user account, that
   * user. Looked up on every event, so connecting GitHub later takes effect at the next push or command.
   */
  async accountOf(installationId: number): Promise<AccountRecord | undefined> {
    const installation = await this.installation(installationId);
    if (!installation) return undefined;
    const candidates = [
      installation.installer_github_id,
      installation.github_account_type === 'User' ? installation.github_account_id : null,
    ].filter((id): id is number => typeof id === 'number' && id > 0);
    for (const githubId of candidates) {
      const identity = await this.deps.store.identities.findOneBy('provider_key', `github:${githubId}`);
      const account = identity && (await this.deps.store.accounts.get(identity.account_id));
      if (account) return account;
    }
    return undefined;
  }

  private async installation(id: number): Promise<GitHubInstallationRecord | undefined> {
    const known = await this.deps.store.githubInstallations.get(String(id));
    if (known) return known;
    // Installed before Twinbox listened (or the event was lost): ask GitHub, as the App.
    try {
      const app = await this.deps.auth();
      const { data } = await app.rest.apps.getInstallation({ installation_id: id });
      const account = data.account as { id: number; login?: string; slug?: string; type?: string } | null;
      await this.installationCreated({
        id,
        account: account
          ? { id: account.id, login: account.login ?? account.slug ?? '', type: account.type ?? 'User' }
          : null,
        senderId: null,
      });
    } catch (error) {
      this.deps.logger.warn({ err: error, installation_id: id }, 'could not read the installation');
      return undefined;
    }
    return this.deps.store.githubInstallations.get(String(id));
  }

  private async connectText(installationId: number): Promise<string> {
    const installation = await this.deps.store.githubInstallations.get(String(installationId));
    const who = installation?.github_account_login
      ? ` (installed on @${installation.github_account_login})`
      : '';
    return (
      `This GitHub App installation${who} is not linked to a Twinbox account, so no sandbox was created. ` +
      `Whoever installed the app: sign in to Twinbox and connect GitHub at ${this.deps.publicUrl()}/auth/github/connect, ` +
      'then push a commit or comment `/twinbox deploy`.'
    );
  }

  // ---- records ------------------------------------------------------------------------------------------

  private async remember(key: string, facts: PullFacts): Promise<GitHubPullRecord> {
    const now = new Date().toISOString();
    const fields = {
      repo: facts.repo,
      number: facts.number,
      html_url: facts.htmlUrl,
      installation_id: facts.installationId,
      head_sha: facts.headSha,
      head_ref: facts.headRef,
      fork: facts.fork,
      state: facts.state,
      updated_at: now,
    };
    if (await this.deps.store.githubPulls.get(key)) {
      const updated = await this.deps.store.githubPulls.update(key, (current) => ({ ...current, ...fields }));
      if (updated) return updated;
    }
    return this.deps.store.githubPulls.insert({
      id: key,
      ...fields,
      sandbox_id: null,
      deployment_id: null,
      deployment_state: null,
      comment_id: null,
      comment_body: null,
      approved_sha: null,
      notice: null,
      created_at: now,
    });
  }

  private async save(rec: GitHubPullRecord, patch: Partial<GitHubPullRecord>): Promise<GitHubPullRecord> {
    const updated = await this.deps.store.githubPulls.update(rec.id, (current) => ({
      ...current,
      ...patch,
      updated_at: new Date().toISOString(),
    }));
    return updated ?? { ...rec, ...patch };
  }

  private async noticeAndSync(rec: GitHubPullRecord, kind: string, text: string): Promise<void> {
    await this.sync(await this.save(rec, { notice: { kind, text } }));
  }

  private async liveSandbox(id: string): Promise<SandboxRecord | undefined> {
    const sandbox = await this.deps.store.sandboxes.get(id);
    return sandbox && LIVE.has(sandbox.status) ? sandbox : undefined;
  }

  private withLock<T>(key: string, task: () => Promise<T>): Promise<T> {
    const previous = this.locks.get(key) ?? Promise.resolve();
    const run = previous.then(task, task);
    const settled = run.then(
      () => undefined,
      () => undefined,
    );
    this.locks.set(key, settled);
    void settled.then(() => {
      if (this.locks.get(key) === settled) this.locks.delete(key);
    });
    return run;
  }
}
