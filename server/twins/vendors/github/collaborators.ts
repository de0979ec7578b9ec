/**
 * Collaborators as GitHub keeps them. Adding someone who is not yet a collaborator invites them (201 with a
 * repository invitation); they become a collaborator when they accept it (`PATCH
 * /user/repository_invitations/{id}`), or not when they decline (`DELETE`). Adding an existing collaborator
 * or a member of the owning organization changes their permission at once (204). The list of
 * collaborators has everyone with access: the owner, the organization's owners, members of teams that
 * have the repository, and direct collaborators, each with `permissions` and `role_name`.
 * (https://docs.github.com/rest/collaborators/collaborators, .../collaborators/invitations)
 */
import type { Engine, EngineRecord } from '../../engine/emulate.ts';
import { json } from '../../runtime/http.ts';
import {
  callerOf,
  collaboratorRecord,
  collections,
  githubError,
  isRepoAdmin,
  orgMembers,
  ownerLogin,
  paged,
  permissionOfRole,
  permissionsOf,
  repoNamed,
  roleOfPermission,
  roleOn,
  ROLES,
  userOf,
  validationFailed,
  type Role,
} from './access.ts';
import type { EngineCall } from './repo-files.ts';
import { fixOrganizationOwners, simpleUser } from './shape.ts';
import { findFolded } from '../../engine/folded-index.ts';

interface Invitation extends EngineRecord {
  repo_id: number;
  invitee_id: number;
  inviter_id: number;
  permissions: Role;
}

const COLLABORATORS = /^\/repos\/([^/]+)\/([^/]+)\/collaborators(?:\/([^/]+))?$/;
const REPO_INVITATIONS = /^\/repos\/([^/]+)\/([^/]+)\/invitations(?:\/(\d+))?$/;
const USER_INVITATIONS = /^\/user\/repository_invitations(?:\/(\d+))?$/;

export interface CollaboratorsContext {
  engine: Engine;
  call: EngineCall;
}

const invitationsOf = (engine: Engine) =>
  engine.store.collection<Invitation>('twinbox.repository_invitations', ['repo_id', 'invitee_id']);

const noContent = () => new Response(null, { status: 204 });

async function readBody(request: Request): Promise<Record<string, unknown> | Response> {
  const text = await request.text();
  if (!text.trim()) return {};
  try {
    const body = JSON.parse(text) as unknown;
    if (body && typeof body === 'object' && !Array.isArray(body)) return body as Record<string, unknown>;
  } catch {
    // Falls through to GitHub's answer for a body that is not a JSON object.
  }
  return githubError(400, 'Problems parsing JSON');
}

/** The answer when `request` is one of these routes, else undefined. */
export async function handleCollaborators(
  request: Request,
  ctx: CollaboratorsContext,
): Promise<Response | undefined> {
  const url = new URL(request.url);
  const collaborators = COLLABORATORS.exec(url.pathname);
  if (collaborators) {
    const [, owner, name, login] = collaborators;
    if (login === undefined)
      return request.method === 'GET' ? list(request, url, ctx, owner!, name!) : undefined;
    if (request.method === 'PUT') return add(request, url, ctx, owner!, name!, login);
    if (request.method === 'GET') return check(ctx.engine, owner!, name!, login);
    return undefined;
  }
  const repoInvitations = REPO_INVITATIONS.exec(url.pathname);
  if (repoInvitations) return repoInvitation(request, url, ctx, repoInvitations);
  const userInvitations = USER_INVITATIONS.exec(url.pathname);
  if (userInvitations) return userInvitation(request, url, ctx, userInvitations[1]);
  return undefined;
}

/**
 * Everyone `affiliation` names, with their role, by login: `all` is the owner (or the organization's
 * members, its owners among them) and every direct collaborator; `direct` the collaborators alone;
 * `outside` the collaborators who are not members of the owning organization.
 */
function withAccess(engine: Engine, repo: EngineRecord, affiliation: string): Array<[EngineRecord, Role]> {
  const { users, collaborators } = collections(engine);
  const members =
    repo.owner_type === 'Organization'
      ? orgMembers(engine, repo.owner_id as number)
      : new Map<number, string>();
  const ids = new Set<number>();
  if (affiliation === 'all') {
    if (repo.owner_type === 'User') ids.add(repo.owner_id as number);
    for (const id of members.keys()) ids.add(id);
  }
  for (const c of collaborators.findBy('repo_id', repo.id)) {
    if (affiliation !== 'outside' || !members.has(c.user_id as number)) ids.add(c.user_id as number);
  }
  return [...ids]
    .map((id) => users.get(id))
    .filter((u): u is EngineRecord => !!u)
    .map((u): [EngineRecord, Role] => [u, roleOn(engine, repo, u.id) ?? 'read'])
    .sort(([a], [b]) => String(a.login).localeCompare(String(b.login)));
}

function collaboratorJson(origin: string, user: EngineRecord, role: Role): Record<string, unknown> {
  return {
    ...simpleUser(origin, { login: String(user.login), id: user.id, node_id: user.node_id as string }),
    permissions: permissionsOf(role),
    role_name: role,
  };
}

function list(request: Request, url: URL, ctx: CollaboratorsContext, owner: string, name: string): Response {
  const repo = repoNamed(ctx.engine, owner, name);
  if (!repo) return githubError(404, 'Not Found');
  // GitHub lists collaborators to those who can push; others get 403.
  const user = userOf(ctx.engine, callerOf(ctx.engine, request));
  const callerRole = user ? roleOn(ctx.engine, repo, user.id) : undefined;
  if (!callerRole || ROLES.indexOf(callerRole) < ROLES.indexOf('write')) {
    return githubError(403, 'Must have push access to view repository collaborators.');
  }
  const affiliation = url.searchParams.get('affiliation') ?? 'all';
  if (!['outside', 'direct', 'all'].includes(affiliation)) {
    return validationFailed([{ resource: 'Collaborator', code: 'invalid', field: 'affiliation' }]);
  }
  const wanted = url.searchParams.get('permission');
  const everyone = withAccess(ctx.engine, repo, affiliation).filter(
    ([, role]) => !wanted || roleOfPermission(wanted) === role,
  );
  const { page, headers } = paged(url, everyone);
  return json(
    200,
    page.map(([u, role]) => collaboratorJson(url.origin, u, role)),
    headers,
  );
}

/** `GET /repos/{o}/{r}/collaborators/{user}`: 204 when they have access as a collaborator, else 404. */
function check(engine: Engine, owner: string, name: string, login: string): Response {
  const repo = repoNamed(engine, owner, name);
  const user = findFolded(collections(engine).users, 'login', decodeURIComponent(login));
  if (!repo || !user || !roleOn(engine, repo, user.id)) return githubError(404, 'Not Found');
  return noContent();
}

async function add(
  request: Request,
  url: URL,
  ctx: CollaboratorsContext,
  owner: string,
  name: string,
  login: string,
): Promise<Response> {
  const { engine } = ctx;
  const repo = repoNamed(engine, owner, name);
  if (!repo) return githubError(404, 'Not Found');
  const caller = callerOf(engine, request);
  if (!isRepoAdmin(engine, repo, caller)) return githubError(403, 'Must have admin rights to Repository.');
  const target = findFolded(collections(engine).users, 'login', decodeURIComponent(login));
  if (!target) return githubError(404, 'Not Found');
  const body = await readBody(request);
  if (body instanceof Response) return body;
  const role = body.permission === undefined ? 'write' : roleOfPermission(body.permission);
  if (!role) {
    return validationFailed([{ resource: 'Repository', code: 'invalid', field: 'permission' }]);
  }
  if (repo.owner_type === 'User' && repo.owner_id === target.id) {
    return validationFailed([
      {
        resource: 'Repository',
        code: 'custom',
        field: 'collaborator',
        message: 'Repository owner cannot be a collaborator',
      },
    ]);
  }
  const { collaborators } = collections(engine);
  const existing = collaboratorRecord(engine, repo.id, target.id);
  const member =
    repo.owner_type === 'Organization' && orgMembers(engine, repo.owner_id as number).has(target.id);
  // An existing collaborator, or a member of the organization: their permission changes, no invitation.
  if (existing || member) {
    if (existing) collaborators.update(existing.id, { permission: permissionOfRole(role) });
    else collaborators.insert({ repo_id: repo.id, user_id: target.id, permission: permissionOfRole(role) });
    return noContent();
  }
  const invitations = invitationsOf(engine);
  const inviter = userOf(engine, caller)!;
  const pending = invitations.findBy('repo_id', repo.id).find((i) => i.invitee_id === target.id);
  const invitation = pending
    ? invitations.update(pending.id, { permissions: role, inviter_id: inviter.id })!
    : invitations.insert({
        repo_id: repo.id,
        invitee_id: target.id,
        inviter_id: inviter.id,
        permissions: role,
      });
  return json(201, await invitationJson(url.origin, ctx, invitation));
}

async function invitationJson(
  origin: string,
  ctx: CollaboratorsContext,
  invitation: Invitation,
): Promise<Record<string, unknown>> {
  const { users, repos } = collections(ctx.engine);
  const repo = repos.get(invitation.repo_id)!;
  const person = (id: number) => {
    const u = users.get(id);
    return u ? simpleUser(origin, { login: String(u.login), id: u.id, node_id: u.node_id as string }) : null;
  };
  // The repository as its owner reads it (the invitee may not see a private one yet).
  const repository = repositoryJson(
    origin,
    (await ctx.call(ownerLoginOrAdmin(ctx.engine, repo), 'GET', `/repos/${repo.full_name}`)).data,
  );
  return {
    id: invitation.id,
    node_id: Buffer.from(`0:RepositoryInvitation${invitation.id}`).toString('base64').replace(/=+$/, ''),
    repository,
    invitee: person(invitation.invitee_id),
    inviter: person(invitation.inviter_id),
    permissions: invitation.permissions,
    created_at: invitation.created_at,
    expired: false,
    url: `${origin}/user/repository_invitations/${invitation.id}`,
    html_url: `${origin}/${repo.full_name}/invitations`,
  };
}

/** The engine's repository as GitHub's description has it (an organization owner as a simple-user). */
function repositoryJson(origin: string, repo: unknown): unknown {
  fixOrganizationOwners(repo, origin);
  return repo;
}

/** A login that can read `repo`: its owner, or for an organization's, one of its owners. */
function ownerLoginOrAdmin(engine: Engine, repo: EngineRecord): string {
  if (repo.owner_type === 'User') return ownerLogin(engine, repo);
  for (const [id, role] of orgMembers(engine, repo.owner_id as number)) {
    const user = collections(engine).users.get(id);
    if (role === 'admin' && user) return String(user.login);
  }
  return ownerLogin(engine, repo);
}

/** `GET /repos/{o}/{r}/invitations`, `PATCH` and `DELETE /repos/{o}/{r}/invitations/{id}`: the admins' side. */
async function repoInvitation(
  request: Request,
  url: URL,
  ctx: CollaboratorsContext,
  [, owner, name, id]: RegExpExecArray,
): Promise<Response | undefined> {
  const { engine } = ctx;
  if (id === undefined ? request.method !== 'GET' : !['PATCH', 'DELETE'].includes(request.method)) {
    return undefined;
  }
  const repo = repoNamed(engine, owner!, name!);
  if (!repo) return githubError(404, 'Not Found');
  if (!isRepoAdmin(engine, repo, callerOf(engine, request))) {
    return githubError(403, 'Must have admin rights to Repository.');
  }
  const invitations = invitationsOf(engine);
  if (id === undefined) {
    const all = invitations.findBy('repo_id', repo.id).sort((a, b) => a.id - b.id);
    const { page, headers } = paged(url, all);
    return json(200, await Promise.all(page.map((i) => invitationJson(url.origin, ctx, i))), headers);
  }
  const invitation = invitations.get(Number(id));
  if (!invitation || invitation.repo_id !== repo.id) return githubError(404, 'Not Found');
  if (request.method === 'DELETE') {
    invitations.delete(invitation.id);
    return noContent();
  }
  const body = await readBody(request);
  if (body instanceof Response) return body;
  if (body.permissions !== undefined) {
    const role = typeof body.permissions === 'string' ? ROLES.find((r) => r === body.permissions) : undefined;
    if (!role)
      return validationFailed([{ resource: 'RepositoryInvitation', code: 'invalid', field: 'permissions' }]);
    invitations.update(invitation.id, { permissions: role });
  }
  return json(200, await invitationJson(url.origin, ctx, invitations.get(invitation.id)!));
}

/** `GET /user/repository_invitations`, `PATCH` (accept) and `DELETE` (decline) one: the invitee's side. */
async function userInvitation(
  request: Request,
  url: URL,
  ctx: CollaboratorsContext,
  id: string | undefined,
): Promise<Response | undefined> {
  const { engine } = ctx;
  if (id === undefined ? request.method !== 'GET' : !['PATCH', 'DELETE'].includes(request.method)) {
    return undefined;
  }
  const caller = callerOf(engine, request);
  const user = userOf(engine, caller);
  if (!user) {
    return caller
      ? githubError(403, 'Resource not accessible by integration')
      : githubError(401, 'Requires authentication');
  }
  const invitations = invitationsOf(engine);
  if (id === undefined) {
    const mine = invitations.findBy('invitee_id', user.id).sort((a, b) => a.id - b.id);
    const { page, headers } = paged(url, mine);
    return json(200, await Promise.all(page.map((i) => invitationJson(url.origin, ctx, i))), headers);
  }
  const invitation = invitations.get(Number(id));
  if (!invitation || invitation.invitee_id !== user.id) return githubError(404, 'Not Found');
  invitations.delete(invitation.id);
  if (request.method === 'PATCH') await accept(url.origin, ctx, invitation, user);
  return noContent();
}

async function accept(origin: string, ctx: CollaboratorsContext, invitation: Invitation, user: EngineRecord) {
  const { engine } = ctx;
  const { collaborators, repos } = collections(engine);
  const repo = repos.get(invitation.repo_id);
  if (!repo) return;
  const permission = permissionOfRole(invitation.permissions);
  const existing = collaboratorRecord(engine, repo.id, user.id);
  if (existing) collaborators.update(existing.id, { permission });
  else collaborators.insert({ repo_id: repo.id, user_id: user.id, permission });
  const repository = repositoryJson(
    origin,
    (await ctx.call(String(user.login), 'GET', `/repos/${repo.full_name}`)).data,
  );
  const member = simpleUser(origin, {
    login: String(user.login),
    id: user.id,
    node_id: user.node_id as string,
  });
  // GitHub's `member` event tells the repository's hooks who joined and with what.
  await engine.webhooks.dispatch(
    'member',
    'added',
    {
      action: 'added',
      member,
      changes: { permission: { to: invitation.permissions } },
      repository,
      sender: member,
    },
    ownerLogin(engine, repo),
    String(repo.name),
  );
}
