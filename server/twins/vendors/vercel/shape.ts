/**
 * The engine's answers in the shape @vercel/sdk validates, checked against Vercel's description in
 * test/twins/vercel.test.ts: fields its schemas require that the engine leaves out, fields the engine
 * writes as null where Vercel leaves them out, and env var creates answered as Vercel answers them.
 */
import { json } from '../../runtime/http.ts';

/** A project's env vars (`/v10/projects/{id}/env` and one of them). */
export const ENV_PATH = /^\/v10\/projects\/[^/]+\/env(\/[^/]+)?$/;

const PROJECT_PATH = /^\/v(9|11)\/projects(\/[^/]+)?$/;

/**
 * A successful JSON answer of the engine to `method pathname`, reshaped where Vercel's differs; `batch`
 * says several env vars were posted at once (Vercel answers `created: [...]` then, else `created: {...}`).
 */
export async function toVercelResponse(
  method: string,
  pathname: string,
  response: Response,
  batch: boolean,
): Promise<Response> {
  const isEnv = ENV_PATH.test(pathname);
  const isProjectList = method === 'GET' && pathname === '/v10/projects';
  const isProject = PROJECT_PATH.test(pathname) && method !== 'DELETE';
  const isTeam = method === 'GET' && /^\/v2\/teams\/[^/]+$/.test(pathname);
  const isTeamList = method === 'GET' && pathname === '/v2/teams';
  const isUser = method === 'GET' && pathname === '/v2/user';
  const isDeployment =
    (method === 'POST' && pathname === '/v13/deployments') ||
    (method === 'GET' && /^\/v13\/deployments\/[^/]+$/.test(pathname));
  const isDeploymentList = method === 'GET' && pathname === '/v7/deployments';
  if (
    !isEnv &&
    !isProjectList &&
    !isProject &&
    !isTeam &&
    !isTeamList &&
    !isUser &&
    !isDeployment &&
    !isDeploymentList
  )
    return response;
  const body = (await response.json()) as Record<string, unknown>;
  if (isDeployment) return json(response.status, fixDeployment(body));
  if (isDeploymentList && Array.isArray(body.deployments)) {
    for (const d of body.deployments as Array<Record<string, unknown>>) {
      d.createdAt ??= d.created;
      d.inspectorUrl ??= null;
    }
    return json(response.status, body);
  }
  if (isUser && body.user && typeof body.user === 'object') {
    // Vercel's description requires it of a full (not limited) user; the engine leaves it out.
    (body.user as Record<string, unknown>).hasTrialAvailable ??= false;
    return json(200, body);
  }
  if (isTeamList && Array.isArray(body.teams)) {
    body.teams = (body.teams as Array<Record<string, unknown>>).map(fixTeam);
    return json(200, body);
  }
  if (isTeam && body.team && typeof body.team === 'object') {
    return json(200, fixTeam(body.team as Record<string, unknown>));
  }
  if (isProjectList && Array.isArray(body.projects))
    body.projects = (body.projects as Array<Record<string, unknown>>).map(fixProject);
  if (isProject) fixProject(body);
  if (isEnv) {
    const envs = Array.isArray(body.envs) ? (body.envs as Array<Record<string, unknown>>) : [body];
    for (const env of envs) {
      env.securityIssues ??= [];
      // Vercel leaves gitBranch out when the variable applies to every branch.
      if (env.gitBranch === null) delete env.gitBranch;
    }
    if (method === 'POST') return json(201, { created: batch ? envs : envs[0], failed: [] });
  }
  return json(response.status, body);
}

/**
 * A deployment with the fields Vercel's description requires that the engine leaves out. Deployments on
 * the twin are not built (they go straight to READY), so the build-related ones say so: no build
 * environment, not queued, `buildSkipped` false as Vercel reports for a deployment it accepted.
 */
function fixDeployment(d: Record<string, unknown>): Record<string, unknown> {
  const creator = d.creator as { uid?: unknown } | undefined;
  const team = d.team as { id?: unknown } | undefined;
  d.build ??= { env: [] };
  d.buildSkipped ??= false;
  d.createdIn ??= Array.isArray(d.regions) && typeof d.regions[0] === 'string' ? d.regions[0] : 'iad1';
  d.env ??= [];
  d.isInConcurrentBuildsQueue ??= false;
  d.isInSystemBuildsQueue ??= false;
  d.ownerId ??= typeof team?.id === 'string' ? team.id : creator?.uid;
  d.projectSettings ??= {};
  d.public ??= false;
  d.status ??= d.readyState;
  d.version ??= 2;
  d.inspectorUrl ??= null;
  // Unset on Vercel means absent: the description types these without null.
  for (const field of ['canceledAt', 'errorCode', 'gitSource', 'readySubstate']) {
    if (d[field] === null) delete d[field];
  }
  return d;
}

/** A team's membership says when it began (`created`, `createdAt`), as Vercel's description requires. */
function fixTeam(team: Record<string, unknown>): Record<string, unknown> {
  const membership = team.membership as Record<string, unknown> | undefined;
  if (membership && typeof membership === 'object') {
    const since = membership.createdAt ?? membership.created ?? team.createdAt ?? Date.now();
    membership.created ??= since;
    membership.createdAt ??= since;
  }
  return team;
}

/**
 * Project fields the engine writes as null when unset, where Vercel's description has them absent (their
 * schemas are objects or strings, not nullable).
 */
const UNSET_PROJECT_FIELDS = [
  'autoAssignCustomDomainsUpdatedBy',
  'link',
  'oidcTokenConfig',
  'serverlessFunctionRegion',
  'speedInsights',
  'webAnalytics',
];

/** Fields @vercel/sdk's project schema requires that the engine leaves out; `tier` is null or a paid tier. */
function fixProject(project: Record<string, unknown>): Record<string, unknown> {
  for (const field of UNSET_PROJECT_FIELDS) if (project[field] === null) delete project[field];
  project.alias ??= [];
  project.defaultResourceConfig ??= { functionDefaultRegions: ['iad1'] };
  project.resourceConfig ??= { functionDefaultRegions: ['iad1'] };
  project.deploymentExpiration ??= { expirationDays: 180, expirationDaysProduction: 365 };
  if (project.tier === 'hobby') delete project.tier;
  return project;
}
