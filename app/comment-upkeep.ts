import type { GitHubPullRecord } from '../server/store/records.ts';
import { MARKER, renderComment } from './comment.ts';
import type { AppDeps } from './deps.ts';
import { DEPLOYMENT_STATE, postDeploymentState } from './deployments.ts';
import { httpStatus } from './github.ts';
import { savePull } from './pull-records.ts';

/**
 * Brings the pull request's Deployment and its one comment in line with its record and its sandbox.
 * The comment is written only when its text would change (the text has no clock in it).
 *
 * Called under the pull request's lock (lock.ts, held across processes), and renders from the record
 * and the sandbox as they are read here, under it, never from what a caller saw before: a change
 * event's sandbox, or the record as a handler had it. So the last holder of the lock writes the newest
 * state, and an older state that is handled late (the API process's `queued` after the runner's
 * `ready`, say) finds the newer one in the store and changes nothing. The first comment is written once
 * for the same reason: a second process waits for the lock and then finds its id on the record.
 */
export async function syncPull(deps: AppDeps, rec: GitHubPullRecord): Promise<void> {
  // Gone (deleted meanwhile): the caller's copy is all there is to show.
  await bringUpToDate(deps, (await deps.store.githubPulls.get(rec.id)) ?? rec);
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
