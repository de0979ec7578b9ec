import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { TwinAdminClient } from '../server/twins/kit/admin-client.ts';
import { TwinHost } from '../server/twins/runtime/host.ts';
import { randomToken } from '../server/twins/runtime/secrets.ts';
import type { FileContent, GitHubSeed } from '../server/twins/vendors/github/seed.ts';
import type { PushFiles } from '../server/twins/vendors/github/repo-files.ts';
import { twinFactories } from '../server/twins/registry.ts';

export type { GitHubSeed, FileContent } from '../server/twins/vendors/github/seed.ts';

/** Admin client with the GitHub twin's own routes (repositories with files, OAuth auto-approve). */
export class GitHubTwinAdmin extends TwinAdminClient {
  /** Creates a repository (and its owner user if missing) with files on the default branch. */
  createRepo(repo: {
    owner: string;
    name: string;
    private?: boolean;
    default_branch?: string;
    files?: Record<string, FileContent>;
    branches?: Record<string, Record<string, FileContent>>;
  }): Promise<{ full_name: string; default_branch: string; [key: string]: unknown }> {
    return this.request('POST', '/repos', repo);
  }
  /** Commits files onto a branch (created from the default branch when missing). */
  pushFiles(push: PushFiles): Promise<{ branch: string; commit_sha: string }> {
    return this.request('POST', '/repos/files', push);
  }
  /** The expiring user tokens of `login` lapse now, as 8 hours passing would make them. */
  expireUserTokens(login: string): Promise<{ expired: number }> {
    return this.request('POST', '/oauth/expire-user-tokens', { login });
  }
  /** When set, /login/oauth/authorize redirects at once with a code for this login. */
  setOAuthAutoApprove(login: string | null): Promise<unknown> {
    return this.request('PUT', '/oauth', { auto_approve: login });
  }
}

export interface StandaloneGitHubTwin {
  baseUrl: string;
  adminUrl: string;
  /** GITHUB_TOKEN of the twin (authenticates as the seed's first user). */
  token: string;
  webhookSecret: string;
  env: Record<string, string>;
  admin: GitHubTwinAdmin;
  createRepo: GitHubTwinAdmin['createRepo'];
  pushFiles: GitHubTwinAdmin['pushFiles'];
  /** Points every webhook of this twin at `url`, signed with `secret` (default: GITHUB_WEBHOOK_SECRET). */
  setWebhookTarget(target: { url: string; secret?: string; events?: string[] }): Promise<unknown>;
  /** Delivers an arbitrary event signed with X-Hub-Signature-256 to the configured target. */
  deliverWebhook: GitHubTwinAdmin['deliverWebhook'];
  close(): Promise<void>;
}

/**
 * A GitHub twin outside any sandbox, for our own tests (deploy engine source fetch, GitHub App webhooks,
 * OAuth sign-in). Everything goes through the same host and admin API a sandbox's twin uses.
 */
export async function startGitHubTwin(
  opts: { seed?: GitHubSeed; publicHost?: string } = {},
): Promise<StandaloneGitHubTwin> {
  const dataDir = await mkdtemp(join(tmpdir(), 'twinbox-github-twin-'));
  const host = new TwinHost({
    factories: twinFactories,
    dataDir,
    publicHost: opts.publicHost ?? '127.0.0.1',
  });
  const adminToken = randomToken('twinbox_admin_');
  const sandboxId = `standalone-${randomUUID()}`;
  try {
    const { github } = await host.start(sandboxId, ['github'], {
      adminToken,
      seeds: opts.seed ? { github: opts.seed } : {},
    });
    const entry = github!;
    const admin = new GitHubTwinAdmin(entry.admin_url, adminToken);
    return {
      baseUrl: entry.base_url,
      adminUrl: entry.admin_url,
      token: entry.env_vars.GITHUB_TOKEN!,
      webhookSecret: entry.env_vars.GITHUB_WEBHOOK_SECRET!,
      env: entry.env_vars,
      admin,
      createRepo: (repo) => admin.createRepo(repo),
      pushFiles: (push) => admin.pushFiles(push),
      setWebhookTarget: (target) => admin.setWebhookTarget(target),
      deliverWebhook: (event, payload) => admin.deliverWebhook(event, payload),
      async close() {
        await host.stop(sandboxId, { purge: true });
        await rm(dataDir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await host.close();
    await rm(dataDir, { recursive: true, force: true });
    throw error;
  }
}
