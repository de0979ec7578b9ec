import type { GitHubPullRecord, SandboxRecord } from '../server/store/records.ts';
import { TTL_MAX } from '../server/sandboxes/validation.ts';
import type { AppDeps } from './deps.ts';
import { postDeploymentState } from './deployments.ts';
import { isLive, liveSandbox, savePull } from './pull-records.ts';

export const EXTEND_DEFAULT_MINUTES = 30;

/**
 * Ends the pull request's current sandbox because a newer commit (or `/twinbox deploy`) replaces it:
 * detached first, so its own change events no longer touch the pull request, then deleted, and its
 * Deployment marked inactive.
 */
export async function supersede(deps: AppDeps, rec: GitHubPullRecord): Promise<GitHubPullRecord> {
  if (!rec.sandbox_id) return rec;
  const old = { sandbox: rec.sandbox_id, deployment: rec.deployment_id, state: rec.deployment_state };
  rec = await savePull(deps.store, rec, { sandbox_id: null, deployment_id: null, deployment_state: null });
  await deps.lifecycle.end(old.sandbox, 'deleted');
  if (old.deployment !== null && old.state !== 'inactive') {
    await postDeploymentState(deps, rec, old.deployment, 'inactive', undefined);
  }
  return rec;
}

/** Deletes the pull request's sandbox, if it is still live (the record keeps pointing at it). */
export async function endSandbox(
  deps: AppDeps,
  rec: GitHubPullRecord,
  why: 'closed' | 'stopped',
): Promise<void> {
  const sandbox = await liveSandbox(deps.store, rec.sandbox_id);
  if (!sandbox) return;
  await deps.lifecycle.end(sandbox.id, 'deleted');
  deps.logger.info({ sandbox_id: sandbox.id, pr: rec.html_url, why }, 'pull request sandbox ended');
}

/**
 * Adds minutes to the sandbox's expiry, as long as its whole lifetime stays within the owner's plan cap.
 * Returns why not, or undefined when done.
 */
export async function extendSandbox(
  deps: AppDeps,
  sandbox: SandboxRecord,
  minutes: number,
): Promise<string | undefined> {
  const owner = await deps.store.accounts.get(sandbox.owner_id);
  const cap = owner?.plan === 'pro' ? TTL_MAX : Math.min(deps.freeTtlCapMinutes, TTL_MAX);
  const from = Math.max(Date.now(), Date.parse(sandbox.expires_at));
  const expires = new Date(from + minutes * 60_000);
  const lifetime = Math.ceil((expires.getTime() - Date.parse(sandbox.created_at)) / 60_000);
  if (lifetime > cap) {
    return (
      `extending by ${minutes} minutes would make the sandbox live ${lifetime} minutes, above the ` +
      `${owner?.plan ?? 'free'} plan's cap of ${cap} minutes; nothing was done.`
    );
  }
  await deps.store.sandboxes.update(sandbox.id, (current) =>
    isLive(current.status)
      ? { ...current, expires_at: expires.toISOString(), updated_at: new Date().toISOString() }
      : current,
  );
  return undefined;
}
