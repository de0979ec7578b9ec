import type { GitHubPullRecord, SandboxRecord, SandboxStatus } from '../server/store/records.ts';
import type { AppDeps } from './deps.ts';
import type { GitHubClient } from './github.ts';
import type { PullFacts } from './pull-facts.ts';

export type DeploymentState = 'in_progress' | 'success' | 'failure' | 'inactive';

/** The GitHub Deployment state that reports a sandbox status. */
export const DEPLOYMENT_STATE: Record<SandboxStatus, DeploymentState> = {
  queued: 'in_progress',
  building: 'in_progress',
  ready: 'success',
  failed: 'failure',
  expired: 'inactive',
  deleted: 'inactive',
};

/**
 * One GitHub Deployment per sandbox, at the head commit, in a transient environment per pull request.
 * Null when GitHub refuses (e.g. a fork's commit it does not resolve): logged, and the sandbox goes on.
 */
export async function createDeployment(
  deps: AppDeps,
  octokit: GitHubClient,
  facts: PullFacts,
  sandbox: SandboxRecord,
): Promise<number | null> {
  const [owner, repo] = facts.repo.split('/') as [string, string];
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
    deps.logger.warn(
      { err: error, repo: facts.repo, pr: facts.number },
      'could not create a GitHub deployment',
    );
    return null;
  }
}

/** Posts a Deployment status; failures are logged (the next change posts again). */
export async function postDeploymentState(
  deps: AppDeps,
  rec: GitHubPullRecord,
  deploymentId: number,
  state: DeploymentState,
  sandbox: SandboxRecord | undefined,
): Promise<void> {
  const [owner, repo] = rec.repo.split('/') as [string, string];
  const octokit = await deps.auth(rec.installation_id);
  // The sandbox's dashboard page: live status, logs, twins and timeline (GitHub's "View logs" link).
  const logs = sandbox ? `${deps.publicUrl()}/dashboard/sandboxes/${sandbox.id}` : undefined;
  try {
    await octokit.rest.repos.createDeploymentStatus({
      owner,
      repo,
      deployment_id: deploymentId,
      state,
      ...(sandbox?.app_url && state === 'success' ? { environment_url: sandbox.app_url } : {}),
      ...(logs ? { log_url: logs } : {}),
      description: sandbox?.error?.slice(0, 140) ?? `Twinbox sandbox ${state.replace('_', ' ')}`,
      // One sandbox per pull request: other pull requests' environments are not ours to deactivate.
      auto_inactive: false,
    });
  } catch (error) {
    deps.logger.warn(
      { err: error, deployment_id: deploymentId, state },
      'could not post a deployment status',
    );
  }
}
