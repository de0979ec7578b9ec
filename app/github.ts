import type { ProbotOctokit } from 'probot';

/** An Octokit as Probot builds it: authenticated as the App (JWT) or as one installation. */
export type GitHubClient = InstanceType<typeof ProbotOctokit>;

/** The HTTP status of an Octokit RequestError, without importing its class. */
export function httpStatus(error: unknown): number | undefined {
  return typeof error === 'object' && error !== null && 'status' in error
    ? Number((error as { status: unknown }).status)
    : undefined;
}

const WRITE_PERMISSIONS = new Set(['admin', 'maintain', 'write', 'push']);

/** True when `login` may push to the repository (admin, maintain or write); a non-collaborator may not. */
export async function canWrite(
  octokit: GitHubClient,
  owner: string,
  repo: string,
  login: string,
): Promise<boolean> {
  try {
    const { data } = await octokit.rest.repos.getCollaboratorPermissionLevel({
      owner,
      repo,
      username: login,
    });
    const role = (data as { role_name?: string }).role_name;
    return WRITE_PERMISSIONS.has(data.permission) || (role !== undefined && WRITE_PERMISSIONS.has(role));
  } catch (error) {
    // GitHub answers 404 for someone who is not a collaborator at all.
    if (httpStatus(error) === 404) return false;
    throw error;
  }
}

/** True when issue `number` is a pull request (for servers that omit `issue.pull_request`). */
export async function isPullRequest(
  octokit: GitHubClient,
  owner: string,
  repo: string,
  number: number,
): Promise<boolean> {
  try {
    await octokit.rest.pulls.get({ owner, repo, pull_number: number });
    return true;
  } catch (error) {
    if (httpStatus(error) === 404) return false;
    throw error;
  }
}
