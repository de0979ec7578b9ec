import type { GitHubPullRecord, SandboxRecord } from '../server/store/records.ts';
import Boom from '@hapi/boom';
import type { AppDeps } from './deps.ts';
import { postDeploymentState } from './deployments.ts';
import { liveSandbox, savePull } from './pull-records.ts';

export { EXTEND_DEFAULT_MINUTES } from '../server/sandboxes/validation.ts';

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
 * Adds minutes to the sandbox's expiry, as long as its whole lifetime stays within the owner's plan cap
 * (SandboxService.extendRecord). Returns why not, or undefined when done.
 */
export async function extendSandbox(
  deps: AppDeps,
  sandbox: SandboxRecord,
  minutes: number,
): Promise<string | undefined> {
  const owner = await deps.store.accounts.get(sandbox.owner_id);
  if (!owner) return 'the sandbox has no owner account any more; nothing was done.';
  try {
    await deps.sandboxes.extendRecord(owner, sandbox, minutes);
    return undefined;
  } catch (error) {
    if (Boom.isBoom(error) && error.output.statusCode < 500) return error.message;
    throw error;
  }
}
