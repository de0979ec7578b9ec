/**
 * What the twin's own GitHub routes (compat.ts, collaborators.ts, renames.ts) need to know about a request
 * before the engine sees it: who is calling, which repository a path names (names are case-insensitive on
 * GitHub), the role a user holds on a repository, and GitHub's answers for errors and pages.
 */
import type { Engine, EngineRecord, EngineTokenUser } from '../../engine/emulate.ts';
import { findFolded } from '../../engine/folded-index.ts';
import { presentedToken } from '../../runtime/secrets.ts';
import { json } from '../../runtime/http.ts';

export const DOCS = 'https://docs.github.com/rest';

export const githubError = (status: number, message: string, documentationUrl = DOCS) =>
  json(status, { message, documentation_url: documentationUrl, status: String(status) });

/** One entry of a 422's `errors` array, as GitHub's `validation-error` documents it. */
export interface ValidationItem {
  resource: string;
  code: 'missing' | 'missing_field' | 'invalid' | 'already_exists' | 'unprocessable' | 'custom';
  field?: string;
  message?: string;
}

/** GitHub's 422: "Validation Failed" with what failed, where, and why. */
export const validationFailed = (items: ValidationItem[], message = 'Validation Failed') =>
  json(422, { message, errors: items, documentation_url: DOCS, status: '422' });

/** A repository role, GitHub's names (`role_name`), weakest first. */
export const ROLES = ['read', 'triage', 'write', 'maintain', 'admin'] as const;
export type Role = (typeof ROLES)[number];

/** The engine keeps collaborators' permissions under the API's older names (pull, push). */
const FROM_PERMISSION: Record<string, Role> = {
  pull: 'read',
  read: 'read',
  triage: 'triage',
  push: 'write',
  write: 'write',
  maintain: 'maintain',
  admin: 'admin',
};
export const roleOfPermission = (permission: unknown): Role | undefined =>
  typeof permission === 'string' ? FROM_PERMISSION[permission] : undefined;
export const permissionOfRole = (role: Role): string =>
  role === 'read' ? 'pull' : role === 'write' ? 'push' : role;

/** `{pull, triage, push, maintain, admin}` as GitHub's collaborator and repository answers carry it. */
export function permissionsOf(role: Role | undefined): Record<string, boolean> {
  const rank = role === undefined ? -1 : ROLES.indexOf(role);
  return { admin: rank >= 4, maintain: rank >= 3, push: rank >= 2, triage: rank >= 1, pull: rank >= 0 };
}

export interface Caller extends EngineTokenUser {
  installation?: unknown;
}

/** The user a verified token acts as (the twin checked it before), or undefined when anonymous. */
export function callerOf(engine: Engine, request: Request): Caller | undefined {
  const presented = presentedToken(request.headers.get('authorization'));
  if (!presented || presented.token.startsWith('eyJ')) return undefined;
  return engine.tokenMap.get(presented.token) as Caller | undefined;
}

/**
 * The engine's GitHub collections, each looked up when read: a request reads one or two of them, several
 * times, and each lookup checks its index fields (sorted and compared), so all seven each time cost more
 * than the reads. Not kept between calls: a restore may replace a collection. The engine makes all of them
 * at its start (its getGitHubStore), so reading fewer creates none less.
 */
export const collections = (engine: Engine) => ({
  get users() {
    return engine.store.collection('github.users', ['login']);
  },
  get orgs() {
    return engine.store.collection('github.orgs', ['login']);
  },
  get repos() {
    return engine.store.collection('github.repos', ['owner_id', 'full_name']);
  },
  get collaborators() {
    return engine.store.collection('github.collaborators', ['repo_id', 'user_id']);
  },
  get teams() {
    return engine.store.collection('github.teams', ['org_id', 'slug']);
  },
  get teamMembers() {
    return engine.store.collection('github.team_members', ['team_id', 'user_id']);
  },
  get teamRepos() {
    return engine.store.collection('github.team_repos', ['team_id', 'repo_id']);
  },
});

export function userOf(engine: Engine, caller: Caller | undefined): EngineRecord | undefined {
  if (!caller || caller.installation) return undefined;
  return findFolded(collections(engine).users, 'login', caller.login);
}

/** A repository by `owner/name` from a path (percent-escapes read, case folded), or undefined. */
export function repoNamed(engine: Engine, owner: string, name: string): EngineRecord | undefined {
  let fullName: string;
  try {
    fullName = `${decodeURIComponent(owner)}/${decodeURIComponent(name)}`;
  } catch {
    return undefined;
  }
  return findFolded(collections(engine).repos, 'full_name', fullName);
}

/** The login of a repository's owner (a user or an organization). */
export function ownerLogin(engine: Engine, repo: EngineRecord): string {
  const { users, orgs } = collections(engine);
  const owner =
    repo.owner_type === 'Organization'
      ? orgs.get(repo.owner_id as number)
      : users.get(repo.owner_id as number);
  return String(owner?.login ?? String(repo.full_name).split('/')[0]);
}

/** Members of an organization and whether each is an owner (the engine: a maintainer of any of its teams). */
export function orgMembers(engine: Engine, orgId: number): Map<number, 'admin' | 'member'> {
  const { teams, teamMembers } = collections(engine);
  const members = new Map<number, 'admin' | 'member'>();
  for (const team of teams.findBy('org_id', orgId)) {
    for (const m of teamMembers.findBy('team_id', team.id)) {
      const role = m.role === 'maintainer' ? 'admin' : 'member';
      if (members.get(m.user_id as number) !== 'admin') members.set(m.user_id as number, role);
    }
  }
  return members;
}

/** The direct collaborator record of `userId` on `repo`, if any. */
export function collaboratorRecord(engine: Engine, repoId: number, userId: number): EngineRecord | undefined {
  return collections(engine)
    .collaborators.findBy('repo_id', repoId)
    .find((c) => c.user_id === userId);
}

/**
 * The role `userId` holds on `repo`, the strongest of: owning it (a user's repository), owning its
 * organization, a team of the organization that has the repository, and being a direct collaborator.
 * Organization members without any of those hold the organization's base permission (read).
 */
export function roleOn(engine: Engine, repo: EngineRecord, userId: number): Role | undefined {
  const roles: Role[] = [];
  if (repo.owner_type === 'User' && repo.owner_id === userId) return 'admin';
  if (repo.owner_type === 'Organization') {
    const member = orgMembers(engine, repo.owner_id as number).get(userId);
    if (member === 'admin') return 'admin';
    if (member) roles.push('read');
    const { teams, teamMembers, teamRepos } = collections(engine);
    for (const link of teamRepos.findBy('repo_id', repo.id)) {
      const team = teams.get(link.team_id as number);
      if (!team || !teamMembers.findBy('team_id', team.id).some((m) => m.user_id === userId)) continue;
      const role = roleOfPermission(link.permission ?? team.permission);
      if (role) roles.push(role);
    }
  }
  const direct = roleOfPermission(collaboratorRecord(engine, repo.id, userId)?.permission);
  if (direct) roles.push(direct);
  if (!roles.length) return undefined;
  return roles.reduce((a, b) => (ROLES.indexOf(a) >= ROLES.indexOf(b) ? a : b));
}

/** Whether the caller may administer `repo` (as the engine decides for its own admin routes). */
export function isRepoAdmin(engine: Engine, repo: EngineRecord, caller: Caller | undefined): boolean {
  const user = userOf(engine, caller);
  return !!user && roleOn(engine, repo, user.id) === 'admin';
}

/**
 * One page of `items` as GitHub pages lists: `page` and `per_page` (at most 100, default 30) from the
 * query, and a `Link` header with `next`, `last`, `first` and `prev` where they apply.
 */
export function paged<T>(url: URL, items: T[]): { page: T[]; headers: Record<string, string> } {
  const read = (name: string, fallback: number) => {
    const n = Number.parseInt(url.searchParams.get(name) ?? '', 10);
    return Number.isFinite(n) && n > 0 ? n : fallback;
  };
  const perPage = Math.min(read('per_page', 30), 100);
  const page = read('page', 1);
  const last = Math.max(1, Math.ceil(items.length / perPage));
  const link = (n: number, rel: string) => {
    const target = new URL(url);
    target.searchParams.set('page', String(n));
    target.searchParams.set('per_page', String(perPage));
    return `<${target.href}>; rel="${rel}"`;
  };
  const links: string[] = [];
  if (page < last) links.push(link(page + 1, 'next'), link(last, 'last'));
  if (page > 1) links.push(link(1, 'first'), link(Math.min(page - 1, last), 'prev'));
  return {
    page: items.slice((page - 1) * perPage, page * perPage),
    headers: links.length ? { link: links.join(', ') } : {},
  };
}
