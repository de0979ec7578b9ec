import Boom from '@hapi/boom';
import type { GitHubPullRecord, SandboxRecord } from '../server/store/records.ts';
import type { CreateSandboxInput } from '../server/sandboxes/service.ts';
import { createSandboxSchema } from '../server/sandboxes/validation.ts';
import { accountOfInstallation, connectText } from './accounts.ts';
import { noticeAndSync, syncPull } from './comment-upkeep.ts';
import {
  branchAllowed,
  fetchRepoConfigText,
  parseRepoConfig,
  RepoConfigError,
  type RepoConfig,
} from './config.ts';
import type { AppDeps } from './deps.ts';
import { createDeployment } from './deployments.ts';
import type { GitHubClient } from './github.ts';
import type { PullFacts } from './pull-facts.ts';
import { savePull } from './pull-records.ts';

/**
 * Makes the pull request's sandbox, or says in the comment why not: no Twinbox account behind the
 * installation, an invalid configuration, a base branch or draft the configuration leaves out, a fork
 * commit nobody with write access approved, or Twinbox's refusal (plan limits, quota). The sandbox is
 * created through SandboxService.create, so it gets the same validation and plan limits as
 * `POST /sandboxes`. Then one Deployment for it, and the comment.
 */
export async function createPullSandbox(
  deps: AppDeps,
  rec: GitHubPullRecord,
  facts: PullFacts,
  opts: { byCommand: boolean },
): Promise<void> {
  const octokit = await deps.auth(facts.installationId);
  const account = await accountOfInstallation(deps, facts.installationId);
  if (!account) {
    await noticeAndSync(deps, rec, 'connect', await connectText(deps, facts.installationId));
    return;
  }
  let config: RepoConfig;
  try {
    config = await baseConfig(octokit, facts);
  } catch (error) {
    if (!(error instanceof RepoConfigError)) throw error;
    await noticeAndSync(
      deps,
      rec,
      'config',
      `\`.github/twinbox.yml\` on \`${facts.baseRef}\` is not valid, so nothing was deployed: ${error.message}`,
    );
    return;
  }
  if (!branchAllowed(config, facts.baseRef)) {
    await noticeAndSync(
      deps,
      rec,
      'branch',
      `Pull requests into \`${facts.baseRef}\` get no sandbox (\`branches\` in \`.github/twinbox.yml\`).`,
    );
    return;
  }
  if (facts.draft && !config.drafts && !opts.byCommand) {
    await noticeAndSync(
      deps,
      rec,
      'draft',
      'Draft pull requests get a sandbox when marked ready for review (or set `drafts: true` in `.github/twinbox.yml`, or comment `/twinbox deploy`).',
    );
    return;
  }
  if (facts.fork && rec.approved_sha !== facts.headSha) {
    await noticeAndSync(
      deps,
      rec,
      'approval',
      `This pull request comes from a fork, so it is deployed only after someone with write access to ${facts.repo} ` +
        `reviews commit \`${facts.headSha.slice(0, 7)}\` and comments \`/twinbox deploy\`.`,
    );
    return;
  }
  let sandbox: SandboxRecord;
  try {
    const input = sandboxInput(config, facts);
    const { error } = createSandboxSchema.validate(input);
    if (error) throw Boom.badRequest(error.details.map((d) => d.message).join('; '));
    // The installation's token fetches the source: the App is installed on the repository, so it can
    // read it even when the account's own GitHub connection cannot.
    sandbox = await deps.sandboxes.create(account, input, { installationId: facts.installationId });
  } catch (error) {
    if (!Boom.isBoom(error)) throw error;
    await noticeAndSync(deps, rec, 'refused', refusalText(error));
    return;
  }
  rec = await savePull(deps.store, rec, {
    sandbox_id: sandbox.id,
    notice: null,
    deployment_id: null,
    deployment_state: null,
  });
  const deploymentId = await createDeployment(deps, octokit, facts, sandbox);
  if (deploymentId !== null) rec = await savePull(deps.store, rec, { deployment_id: deploymentId });
  await syncPull(deps, rec);
}

/**
 * `.github/twinbox.yml` of the BASE repository at the base branch: never the head, which the pull
 * request's author controls (for a fork, anyone). The base is what the repository's writers accepted.
 */
function baseConfig(octokit: GitHubClient, facts: PullFacts): Promise<RepoConfig> {
  const [owner, name] = facts.repo.split('/') as [string, string];
  return fetchRepoConfigText(octokit, owner, name, facts.baseRef).then(parseRepoConfig);
}

/** The `POST /sandboxes` body for the pull request: its URL, and the base configuration's choices. */
export function sandboxInput(config: RepoConfig, facts: Pick<PullFacts, 'repo' | 'htmlUrl' | 'fork'>) {
  const input: CreateSandboxInput = {
    repo: facts.repo,
    pr_url: facts.htmlUrl,
    ...(config.twins ? { twins: config.twins } : {}),
    ...(config.scenario ? { scenario_id: config.scenario } : {}),
    ...(config.ttl_minutes ? { ttl_minutes: config.ttl_minutes } : {}),
    // A fork's code must not see the variables the repository's writers configured.
    ...(!facts.fork && Object.keys(config.env).length ? { env: config.env } : {}),
  };
  return input;
}

function refusalText(error: Boom.Boom): string {
  const code = (error.data as { code?: unknown } | null | undefined)?.code;
  const retry =
    code === 'plan_limit_exceeded'
      ? ' Once the account is within its plan again, push a commit or comment `/twinbox deploy`.'
      : '';
  return `Twinbox refused the sandbox: ${error.message}${retry}`;
}
