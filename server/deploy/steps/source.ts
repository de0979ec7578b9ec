import { Octokit } from '@octokit/rest';
import { mkdir } from 'node:fs/promises';
import { resolve } from 'node:path';
import { Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { parsePullRequestUrl } from '../../sandboxes/pull-request-url.ts';
import {
  DEFAULT_SOURCE_LIMITS,
  extractTarball,
  fileMode,
  safeTarget,
  SourceBudget,
  tooLarge,
  writeSourceFile,
  type SourceLimits,
} from './extract.ts';
import type { SourceCredentials, SourceOwner } from './source-credentials.ts';

export interface SourceRef extends SourceOwner {
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
  /**
   * Asks for the repository at `source.sha` without writing anything: the download begins (the tarball's
   * response, read as `unpack` writes it), so it need not wait for the workspace. Pass it to `unpack`, or
   * `discard` it.
   */
  download(source: ResolvedSource, signal?: AbortSignal): Promise<SourceDownload>;
  /** Writes a download's files into `dest`; returns how many files were written. */
  unpack(download: SourceDownload, dest: string): Promise<number>;
  /** `download`, then `unpack` into `dest`. */
  fetch(source: ResolvedSource, dest: string, signal?: AbortSignal): Promise<number>;
}

/** A repository's download under way (SourceFetcher.download). */
export interface SourceDownload {
  readonly source: ResolvedSource;
  /** The deploy's signal with the download's time limit. */
  readonly signal: AbortSignal;
  /**
   * The tarball's body, being read ahead (EARLY_READ_BYTES) while it waits for `unpack`; none when the host
   * has no tarball endpoint (the tree is fetched instead).
   */
  readonly archive?: Readable;
  /** Drops a download that will not be unpacked (its deploy failed first), freeing its connection. */
  discard(): void;
}

/** The status of an Octokit RequestError, without importing its class. */
function statusOf(error: unknown): number | undefined {
  return typeof error === 'object' && error && 'status' in error ? Number(error.status) : undefined;
}

/**
 * How long GitHub has to answer the credential request and the branch / pull request lookup together: a
 * GitHub that does not answer fails the sandbox instead of holding its deploy forever.
 */
const RESOLVE_TIMEOUT_MS = 60_000;
/**
 * How much of a tarball is read ahead of its unpacking, while the workspace is made: a response left
 * unread is one the server may end (the GitHub twin's server drops a connection kept idle for 5 s with the
 * rest of its answer unsent, and the unpack then failed with "unexpected end of file" or "terminated" on a
 * loaded machine). A larger tarball waits in the socket for the rest, as before.
 */
const EARLY_READ_BYTES = 16 * 1024 * 1024;

/** How long the whole download of a repository may take. */
const FETCH_TIMEOUT_MS = 10 * 60_000;

/** `signal` (the deploy's) and a timer, whichever fires first. */
function within(ms: number, signal?: AbortSignal): AbortSignal {
  const timer = AbortSignal.timeout(ms);
  return signal ? AbortSignal.any([signal, timer]) : timer;
}

/** The text of a step GitHub did not finish in time, or undefined when `signal` did not time out. */
function timedOut(signal: AbortSignal, what: string): string | undefined {
  const reason = signal.reason as { name?: string } | undefined;
  return signal.aborted && reason?.name === 'TimeoutError'
    ? `Source fetch failed: GitHub did not answer in time (${what}).`
    : undefined;
}

/** Blobs fetched at once on the trees path: enough to hide latency, few enough to stay polite. */
const BLOB_CONCURRENCY = 8;

/** GitHub's raw media type for blobs: the bytes themselves, streamed, instead of base64 inside JSON. */
const RAW_BLOB = 'application/vnd.github.raw+json';

/** GitHub's own limit on a blob served by the API. */
const MAX_BLOB_BYTES = 100 * 1024 * 1024;

/** A JSON answer to a raw-blob request: a server that ignores the media type (the GitHub twin does). */
const JSON_TYPE = /^application\/(json|vnd\.github(\.v3)?\+json)\s*(;|$)/i;

/** Reads a whole body as text, refusing it past `limit` bytes without reading further. */
async function readText(body: Readable, limit: number, tooBig: () => Error): Promise<string> {
  const chunks: Buffer[] = [];
  let length = 0;
  for await (const chunk of body) {
    length += (chunk as Buffer).length;
    if (length > limit) {
      body.destroy();
      throw tooBig();
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * Fetches source through the GitHub REST API (real GitHub, GitHub Enterprise, or the GitHub twin): the
 * tarball endpoint first, because it is one request; git trees and blobs when a server does not offer it.
 * Both paths stream to disk and stop at the caps (`maxBytes` of content, `maxFiles` files and
 * directories) the moment one is passed, so a hostile repository costs bounded memory and disk.
 */
export class GitHubSource implements SourceFetcher {
  /** The client without credentials (public repositories), or with the server's development token. */
  private readonly anonymous: Octokit;
  /** The client each resolved source is fetched with: the one its credentials were minted for. */
  private readonly clients = new WeakMap<ResolvedSource, Octokit>();
  readonly limits: SourceLimits;

  constructor(
    private readonly opts: {
      apiUrl: string;
      /** Without `credentials`: the one token of every fetch (development's GITHUB_TOKEN). */
      token?: string;
      /** Each sandbox's own token (its installation's, or its owner's GitHub connection). */
      credentials?: SourceCredentials;
      webHosts: string[];
      /** Defaults: 60 s for the token and the branch / pull request lookup, 10 min for the download. */
      resolveTimeoutMs?: number;
      fetchTimeoutMs?: number;
      maxBytes?: number;
      maxFiles?: number;
    },
  ) {
    this.anonymous = this.client(opts.token);
    this.limits = {
      maxBytes: opts.maxBytes ?? DEFAULT_SOURCE_LIMITS.maxBytes,
      maxFiles: opts.maxFiles ?? DEFAULT_SOURCE_LIMITS.maxFiles,
    };
  }

  private client(token: string | undefined): Octokit {
    return new Octokit({
      baseUrl: this.opts.apiUrl,
      auth: token,
      userAgent: 'twinbox-deploy',
      // A failed request becomes the sandbox's `error`; Octokit's own line for it would go to stderr.
      log: { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} },
    });
  }

  private octokitOf(source: ResolvedSource): Octokit {
    return this.clients.get(source) ?? this.anonymous;
  }

  async resolve(ref: SourceRef, deploySignal?: AbortSignal): Promise<ResolvedSource> {
    const [owner, repo] = ref.repo.split('/') as [string, string];
    const signal = within(this.opts.resolveTimeoutMs ?? RESOLVE_TIMEOUT_MS, deploySignal);
    const aborted = new Promise<never>((_, reject) =>
      signal.addEventListener('abort', () => reject(signal.reason as Error), { once: true }),
    );
    aborted.catch(() => {});
    const credential = this.opts.credentials
      ? await Promise.race([this.opts.credentials.tokenFor(ref), aborted]).catch((error: Error) => {
          throw new Error(
            timedOut(signal, `a GitHub token for ${ref.repo}`) ??
              `Source fetch failed: could not get a GitHub token for ${ref.repo}: ${error.message}`,
          );
        })
      : undefined;
    const octokit = credential ? this.client(credential.token) : this.anonymous;
    const resolved = await this.resolveWith(octokit, ref, owner, repo, signal).catch((error: Error) => {
      throw new Error(timedOut(signal, `the branch or pull request of ${ref.repo}`) ?? error.message);
    });
    this.clients.set(resolved, octokit);
    return resolved;
  }

  private async resolveWith(
    octokit: Octokit,
    ref: SourceRef,
    owner: string,
    repo: string,
    signal?: AbortSignal,
  ): Promise<ResolvedSource> {
    try {
      if (ref.pr_url) {
        const pr = parsePullRequestUrl(ref.pr_url, this.opts.webHosts);
        if (!pr) throw new Error(`"${ref.pr_url}" is not a pull-request URL`);
        const { data } = await octokit.rest.pulls.get({
          owner,
          repo,
          pull_number: pr.number,
          request: { signal },
        });
        return { owner, repo, sha: data.head.sha, describe: `pull request #${pr.number} (${data.head.ref})` };
      }
      const branch = ref.branch!;
      const { data } = await octokit.rest.repos.getBranch({ owner, repo, branch, request: { signal } });
      return { owner, repo, sha: data.commit.sha, describe: `branch ${branch}` };
    } catch (error) {
      const what = ref.pr_url ? `pull request ${ref.pr_url}` : `branch "${ref.branch}" of ${ref.repo}`;
      const status = statusOf(error);
      if (status === 404 || status === 401 || status === 403) {
        // GitHub hides a private repository behind 404: ask for the repository itself to tell a missing
        // branch or pull request from a repository these credentials cannot read.
        const readable = await octokit.rest.repos
          .get({ owner, repo, request: { signal } })
          .then(() => true)
          .catch(() => false);
        if (readable && status === 404) throw new Error(`Source fetch failed: ${what} was not found.`);
        if (!readable) throw new Error(unreadable(ref.repo, status!));
      }
      throw new Error(`Source fetch failed: could not resolve ${what}: ${(error as Error).message}`);
    }
  }

  async download(source: ResolvedSource, deploySignal?: AbortSignal): Promise<SourceDownload> {
    const { owner, repo, sha } = source;
    const signal = within(this.opts.fetchTimeoutMs ?? FETCH_TIMEOUT_MS, deploySignal);
    let archive: Readable | undefined;
    try {
      // The body stays a stream (Octokit would buffer it whole): it is inflated and counted as it arrives.
      const response = await this.octokitOf(source).rest.repos.downloadTarballArchive({
        owner,
        repo,
        ref: sha,
        request: { signal, parseSuccessResponseBody: false },
      });
      archive = Readable.fromWeb(response.data as unknown as WebReadableStream<Uint8Array>, {
        // Never more than the source's cap could take: a larger download fails at the cap anyway.
        highWaterMark: Math.min(EARLY_READ_BYTES, this.limits.maxBytes),
      });
      // Kept until unpack's pipeline reports it; an error with no listener would end the process.
      archive.on('error', () => {});
      // Starts reading now, up to the high-water mark, rather than when unpack asks.
      archive.read(0);
    } catch (error) {
      const status = statusOf(error);
      // Servers without the tarball endpoint answer 404/501; anything else is a real failure.
      if (status !== 404 && status !== 501 && status !== 415) {
        throw new Error(
          timedOut(signal, `the download of ${owner}/${repo}`) ??
            `Source fetch failed: tarball of ${owner}/${repo}@${sha.slice(0, 7)}: ${(error as Error).message}`,
        );
      }
    }
    return {
      source,
      signal,
      archive,
      discard: () => void archive?.destroy(),
    };
  }

  async unpack(download: SourceDownload, dest: string): Promise<number> {
    const { source, signal, archive } = download;
    const { owner, repo, sha } = source;
    try {
      if (archive) return await extractTarball(archive, dest, { ...this.limits, signal });
      return await this.fetchTree(source, dest, signal);
    } catch (error) {
      throw new Error(
        timedOut(signal, `the download of ${owner}/${repo}`) ??
          `Source fetch failed: ${owner}/${repo}@${sha.slice(0, 7)}: ${(error as Error).message}`,
      );
    }
  }

  async fetch(source: ResolvedSource, dest: string, deploySignal?: AbortSignal): Promise<number> {
    return this.unpack(await this.download(source, deploySignal), dest);
  }

  /**
   * The slow path: one request for the tree, one per blob. The listing is checked against the caps before
   * any blob is fetched; blobs then stream to disk as raw bytes, charged as they flow. Links and
   * submodules are skipped.
   */
  private async fetchTree(source: ResolvedSource, dest: string, signal?: AbortSignal): Promise<number> {
    const { owner, repo, sha } = source;
    const budget = new SourceBudget(this.limits);
    const octokit = this.octokitOf(source);
    const { data: commit } = await octokit.rest.git.getCommit({
      owner,
      repo,
      commit_sha: sha,
      request: { signal },
    });
    const { data: tree } = await octokit.rest.git.getTree({
      owner,
      repo,
      tree_sha: commit.tree.sha,
      recursive: 'true',
      request: { signal },
    });
    if (tree.truncated) {
      throw new Error(
        'the repository has too many files for the API to list them all (truncated tree), and no tarball',
      );
    }
    budget.addEntries(tree.tree.length);
    const root = resolve(dest);
    const blobs = tree.tree.flatMap((item) => {
      if (item.type !== 'blob' || !item.path || !item.sha || item.mode === '120000') return [];
      const target = safeTarget(root, item.path, 0);
      const mode = fileMode(item.mode === '100755' ? 0o755 : 0o644);
      return target ? [{ sha: item.sha, path: item.path, target, mode }] : [];
    });
    // What the listing declares is checked up front; what actually arrives is charged as it flows.
    const declared = tree.tree.reduce((sum, item) => sum + (item.type === 'blob' ? (item.size ?? 0) : 0), 0);
    if (declared > this.limits.maxBytes) throw tooLarge(this.limits);
    await mkdir(root, { recursive: true });

    // The first failure stops the other workers; it, not their aborts, is the reason given.
    const stop = new AbortController();
    const combined = signal ? AbortSignal.any([signal, stop.signal]) : stop.signal;
    // A blob answered as JSON is held whole while decoded: one such blob in memory at a time.
    let jsonQueue = Promise.resolve();
    const oneAtATime = <T>(work: () => Promise<T>): Promise<T> => {
      const run = jsonQueue.then(work);
      jsonQueue = run.then(
        () => undefined,
        () => undefined,
      );
      return run;
    };
    let next = 0;
    const worker = async () => {
      try {
        while (next < blobs.length && !combined.aborted) {
          const blob = blobs[next++]!;
          await this.fetchBlob(octokit, owner, repo, blob, budget, combined, oneAtATime);
        }
      } catch (error) {
        if (!stop.signal.aborted) stop.abort(error);
      }
    };
    await Promise.all(Array.from({ length: Math.min(BLOB_CONCURRENCY, blobs.length) }, worker));
    if (stop.signal.aborted) throw stop.signal.reason;
    return blobs.length;
  }

  private async fetchBlob(
    octokit: Octokit,
    owner: string,
    repo: string,
    blob: { sha: string; path: string; target: string; mode: number },
    budget: SourceBudget,
    signal: AbortSignal,
    oneAtATime: <T>(work: () => Promise<T>) => Promise<T>,
  ): Promise<void> {
    const response = await octokit.rest.git
      .getBlob({
        owner,
        repo,
        file_sha: blob.sha,
        headers: { accept: RAW_BLOB },
        request: { signal, parseSuccessResponseBody: false },
      })
      .catch((error: Error) => {
        throw signal.aborted ? error : new Error(`${blob.path}: ${error.message}`);
      });
    const body = Readable.fromWeb(response.data as unknown as WebReadableStream<Uint8Array>);
    if (!JSON_TYPE.test(String(response.headers['content-type'] ?? ''))) {
      await writeSourceFile(blob.target, body, blob.mode, signal, budget.meter());
      return;
    }
    await oneAtATime(async () => {
      // Base64 inside JSON (with GitHub's line breaks) is at most ~1.4 times the bytes, plus the envelope.
      const allowed = Math.min(budget.remainingBytes, MAX_BLOB_BYTES);
      const text = await readText(body, Math.ceil(allowed * 1.4) + 64 * 1024, () =>
        allowed < MAX_BLOB_BYTES
          ? tooLarge(budget.limits)
          : new Error(`${blob.path} is over 100 MiB, the most the blob API serves`),
      );
      // Native JSON.parse: Octokit's own parser overflows its stack on strings over ~5 MiB.
      const json = JSON.parse(text) as { content?: unknown; encoding?: unknown };
      if (typeof json.content !== 'string') throw new Error(`the blob of ${blob.path} has no content`);
      const bytes = Buffer.from(json.content, json.encoding === 'base64' ? 'base64' : 'utf8');
      budget.addBytes(bytes.length);
      await writeSourceFile(blob.target, Readable.from([bytes]), blob.mode, signal);
    });
  }
}

/**
 * The error of a repository GitHub will not show: 404 (missing, or private and unreadable with these
 * credentials; GitHub does not say which), 401 (credentials refused), 403 (forbidden).
 */
function unreadable(repo: string, status: number): string {
  return (
    `GitHub answered ${status} for ${repo}: the repository does not exist or the GitHub connection of this ` +
    'account cannot read it. Connect GitHub with access to it, or install the Twinbox GitHub App on it.'
  );
}
