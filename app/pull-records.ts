import { UniqueViolationError, type Store } from '../server/store/store.ts';
import type { GitHubPullRecord, SandboxRecord, SandboxStatus } from '../server/store/records.ts';
import { pullKey, type PullFacts } from './pull-facts.ts';

/** Statuses of a sandbox that a pull request still speaks about (and may extend or stop). */
const LIVE: ReadonlySet<SandboxStatus> = new Set(['queued', 'building', 'ready', 'failed']);

/**
 * The pull request's record (`github_pulls`), created or brought up to date with `facts`. A read, then
 * an insert or update: callers hold the pull request's lock (lock.ts), which makes the pair atomic
 * across processes. Should an insert still meet a record (written by a process without the lock), it
 * updates that one rather than failing the delivery.
 */
export async function rememberPull(store: Store, facts: PullFacts): Promise<GitHubPullRecord> {
  const key = pullKey(facts.repoId, facts.number);
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
  if (await store.githubPulls.get(key)) {
    const updated = await store.githubPulls.update(key, (current) => ({ ...current, ...fields }));
    if (updated) return updated;
  }
  try {
    return await store.githubPulls.insert({
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
  } catch (error) {
    if (!(error instanceof UniqueViolationError)) throw error;
    const updated = await store.githubPulls.update(key, (current) => ({ ...current, ...fields }));
    if (!updated) throw error;
    return updated;
  }
}

export async function savePull(
  store: Store,
  rec: GitHubPullRecord,
  patch: Partial<GitHubPullRecord>,
): Promise<GitHubPullRecord> {
  const updated = await store.githubPulls.update(rec.id, (current) => ({
    ...current,
    ...patch,
    updated_at: new Date().toISOString(),
  }));
  return updated ?? { ...rec, ...patch };
}

/** The sandbox, unless it has ended (expired or deleted). */
export async function liveSandbox(store: Store, id: string | null): Promise<SandboxRecord | undefined> {
  if (!id) return undefined;
  const sandbox = await store.sandboxes.get(id);
  return sandbox && LIVE.has(sandbox.status) ? sandbox : undefined;
}

export function isLive(status: SandboxStatus): boolean {
  return LIVE.has(status);
}
