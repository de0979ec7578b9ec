import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import type { GitHubPullRecord } from '../server/store/records.ts';
import { MARKER, renderComment } from './comment.ts';
import type { AppDeps } from './deps.ts';
import { DEPLOYMENT_STATE, postDeploymentState } from './deployments.ts';
import { httpStatus } from './github.ts';
import { savePull } from './pull-records.ts';

/** How long a process may take to write a pull request's first comment before another may (it died). */
const FIRST_COMMENT_CLAIM_MS = 30_000;

/**
 * Brings the pull request's Deployment and its one comment in line with the record and its sandbox.
 * The comment is written only when its text would change (the text has no clock in it).
 *
 * The first comment is written by one process, whichever claims it on the pull request's record: the
 * pull request's lock (`pullLocks`) is per process, so with several processes the one that made the
 * sandbox and the runner that takes its deploy (its `building` change) could otherwise both find no
 * comment and each write one. A process that finds the claim taken waits for the comment, then edits
 * it with the state as it is then.
 */
export async function syncPull(deps: AppDeps, rec: GitHubPullRecord): Promise<void> {
  if (rec.comment_id !== null) return bringUpToDate(deps, rec);
  const claim = await claimFirstComment(deps, rec);
  if (!claim.mine) return bringUpToDate(deps, claim.rec);
  try {
    await bringUpToDate(deps, claim.rec);
  } finally {
    await deps.store.githubPulls.update(rec.id, (current) =>
      current.comment_claim?.by === claim.token ? { ...current, comment_claim: null } : current,
    );
  }
}

/**
 * Claims the writing of the first comment on the record (read-modify-write, serialized across
 * processes): mine when no comment is recorded and no live claim of another process is; otherwise
 * waits until the comment is recorded or the other claim has expired.
 */
async function claimFirstComment(
  deps: AppDeps,
  rec: GitHubPullRecord,
): Promise<{ mine: boolean; rec: GitHubPullRecord; token: string }> {
  const token = randomUUID();
  for (;;) {
    const now = Date.now();
    const current = await deps.store.githubPulls.update(rec.id, (pull) =>
      pull.comment_id !== null || (pull.comment_claim && Date.parse(pull.comment_claim.until) > now)
        ? pull
        : {
            ...pull,
            comment_claim: { by: token, until: new Date(now + FIRST_COMMENT_CLAIM_MS).toISOString() },
          },
    );
    // Gone (never stored, or deleted): nothing to race with.
    if (!current) return { mine: true, rec, token };
    if (current.comment_id !== null) return { mine: false, rec: current, token };
    if (current.comment_claim?.by === token) return { mine: true, rec: current, token };
    await delay(100);
  }
}

async function bringUpToDate(deps: AppDeps, rec: GitHubPullRecord): Promise<void> {
  const sandbox = rec.sandbox_id ? await deps.store.sandboxes.get(rec.sandbox_id) : undefined;
  if (sandbox && rec.deployment_id !== null) {
    const desired = DEPLOYMENT_STATE[sandbox.status];
    if (desired !== rec.deployment_state) {
      await postDeploymentState(deps, rec, rec.deployment_id, desired, sandbox);
      rec = await savePull(deps.store, rec, { deployment_state: desired });
    }
  }
  const body = renderComment({
    headSha: rec.head_sha,
    prState: rec.state,
    notice: rec.notice,
    sandbox: sandbox ?? null,
    publicUrl: deps.publicUrl(),
  });
  if (body === rec.comment_body) return;
  const commentId = await upsertComment(deps, rec, body);
  await savePull(deps.store, rec, { comment_id: commentId, comment_body: body });
}

/** Records why there is no sandbox (or what happened to it) and brings the comment up to date. */
export async function noticeAndSync(
  deps: AppDeps,
  rec: GitHubPullRecord,
  kind: string,
  text: string,
): Promise<void> {
  await syncPull(deps, await savePull(deps.store, rec, { notice: { kind, text } }));
}

/** Edits the App's comment in place; finds it by its marker, or writes it, when the known id is gone. */
async function upsertComment(deps: AppDeps, rec: GitHubPullRecord, body: string): Promise<number> {
  const [owner, repo] = rec.repo.split('/') as [string, string];
  const octokit = await deps.auth(rec.installation_id);
  if (rec.comment_id !== null) {
    try {
      await octokit.rest.issues.updateComment({ owner, repo, comment_id: rec.comment_id, body });
      return rec.comment_id;
    } catch (error) {
      if (httpStatus(error) !== 404) throw error;
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
