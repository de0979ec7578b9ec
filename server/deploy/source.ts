import { Octokit } from '@octokit/rest';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join, normalize } from 'node:path';
import { parsePullRequestUrl } from '../sandboxes/pull-request-url.ts';
import { extractTarball } from './extract.ts';

export interface SourceRef {
  repo: string;
  branch: string | null;
  pr_url: string | null;
}

export interface ResolvedSource {
  owner: string;
  repo: string;
  /** The commit deployed: the branch head, or the pull request's head. */
  sha: string;
  /** How the commit was found, for the logs and error texts. */
  describe: string;
}

export interface SourceFetcher {
  resolve(ref: SourceRef, signal?: AbortSignal): Promise<ResolvedSource>;
  /** Writes the repository's files at `source.sha` into `dest`; returns how many files were written. */
  fetch(source: ResolvedSource, dest: string, signal?: AbortSignal): Promise<number>;
}

/** The status of an Octokit RequestError, without importing its class. */
function statusOf(error: unknown): number | undefined {
  return typeof error === 'object' && error && 'status' in error ? Number(error.status) : undefined;
}

/**
 * Fetches source through the GitHub REST API (real GitHub, GitHub Enterprise, or the GitHub twin): the
 * tarball endpoint first, because it is one request; git trees and blobs when a server does not offer it.
 */
export class GitHubSource implements SourceFetcher {
  private readonly octokit: Octokit;

  constructor(private readonly opts: { apiUrl: string; token?: string; webHosts: string[] }) {
    this.octokit = new Octokit({ baseUrl: opts.apiUrl, auth: opts.token, userAgent: 'twinbox-deploy' });
  }

  async resolve(ref: SourceRef, signal?: AbortSignal): Promise<ResolvedSource> {
    const [owner, repo] = ref.repo.split('/') as [string, string];
    try {
      if (ref.pr_url) {
        const pr = parsePullRequestUrl(ref.pr_url, this.opts.webHosts);
        if (!pr) throw new Error(`"${ref.pr_url}" is not a pull-request URL`);
        const { data } = await this.octokit.rest.pulls.get({
          owner,
          repo,
          pull_number: pr.number,
          request: { signal },
        });
        return { owner, repo, sha: data.head.sha, describe: `pull request #${pr.number} (${data.head.ref})` };
      }
      const branch = ref.branch!;
      const { data } = await this.octokit.rest.repos.getBranch({ owner, repo, branch, request: { signal } });
      return { owner, repo, sha: data.commit.sha, describe: `branch ${branch}` };
    } catch (error) {
      const what = ref.pr_url ? `pull request ${ref.pr_url}` : `branch "${ref.branch}" of ${ref.repo}`;
      if (statusOf(error) === 404)
        throw new Error(`Source fetch failed: ${what} was not found (or the token cannot read it).`);
      throw new Error(`Source fetch failed: could not resolve ${what}: ${(error as Error).message}`);
    }
  }

  async fetch(source: ResolvedSource, dest: string, signal?: AbortSignal): Promise<number> {
    const { owner, repo, sha } = source;
    let archive: Buffer | undefined;
    try {
      const response = await this.octokit.rest.repos.downloadTarballArchive({
        owner,
        repo,
        ref: sha,
        request: { signal },
      });
      archive = Buffer.from(response.data as ArrayBuffer);
    } catch (error) {
      const status = statusOf(error);
      // Servers without the tarball endpoint answer 404/501; anything else is a real failure.
      if (status !== 404 && status !== 501 && status !== 415) {
        throw new Error(
          `Source fetch failed: tarball of ${owner}/${repo}@${sha.slice(0, 7)}: ${(error as Error).message}`,
        );
      }
    }
    try {
      if (archive) return await extractTarball(archive, dest);
      return await this.fetchTree(source, dest, signal);
    } catch (error) {
      throw new Error(
        `Source fetch failed: ${owner}/${repo}@${sha.slice(0, 7)}: ${(error as Error).message}`,
      );
    }
  }

  /** The slow path: one request for the tree, one per blob. Links and submodules are skipped. */
  private async fetchTree(source: ResolvedSource, dest: string, signal?: AbortSignal): Promise<number> {
    const { owner, repo, sha } = source;
    const { data: commit } = await this.octokit.rest.git.getCommit({
      owner,
      repo,
      commit_sha: sha,
      request: { signal },
    });
    const { data: tree } = await this.octokit.rest.git.getTree({
      owner,
      repo,
      tree_sha: commit.tree.sha,
      recursive: 'true',
      request: { signal },
    });
    let files = 0;
    for (const item of tree.tree) {
      if (item.type !== 'blob' || !item.path || !item.sha || item.mode === '120000') continue;
      const clean = normalize(item.path);
      if (clean.startsWith('/') || clean.split('/').includes('..')) continue;
      const { data: blob } = await this.octokit.rest.git.getBlob({
        owner,
        repo,
        file_sha: item.sha,
        request: { signal },
      });
      const target = join(dest, clean);
      await mkdir(dirname(target), { recursive: true });
      await writeFile(target, Buffer.from(blob.content, blob.encoding === 'base64' ? 'base64' : 'utf8'), {
        mode: item.mode === '100755' ? 0o755 : 0o644,
      });
      files++;
    }
    return files;
  }
}
