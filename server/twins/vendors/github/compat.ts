/**
 * GitHub's behaviour where the engine answers otherwise or not at all: the API root document (`GET /`),
 * Markdown rendering (`POST /markdown`, `POST /markdown/raw`), marking notifications read (`PUT
 * /notifications`, 205), the refs routes GitHub keeps for older clients (`GET /repos/{o}/{r}/git/refs`
 * and `git/refs/{ref}`, octokit.rb's `ref`) and the older team route `/teams/{id}/repos/{o}/{r}`, whether a
 * pull request was merged (`GET .../pulls/{n}/merge`), the nine labels of a new repository, one asset name
 * per release, collaborators and their invitations (collaborators.ts), and the old names of renamed
 * repositories (renames.ts). Routes that the engine has in another form are answered by it, so its access
 * checks apply unchanged.
 */
import { createHash } from 'node:crypto';
import type { Engine } from '../../engine/emulate.ts';
import { json } from '../../runtime/http.ts';
import {
  callerOf,
  collections,
  githubError,
  orgMembers,
  repoNamed,
  userOf,
  validationFailed,
} from './access.ts';
import { handleCollaborators } from './collaborators.ts';
import type { EngineCall } from './repo-files.ts';
import { rememberingRenames } from './renames.ts';
import { API_VERSIONS } from './versions.ts';

const REFS = /^\/repos\/([^/]+)\/([^/]+)\/git\/refs(?:\/(.+))?$/;
const PULL_MERGED = /^\/repos\/([^/]+)\/([^/]+)\/pulls\/(\d+)\/merge$/;
const LEGACY_TEAM_REPO = /^\/teams\/(\d+)\/repos\/([^/]+)\/([^/]+)$/;
const RELEASE_ASSETS = /^\/repos\/([^/]+)\/([^/]+)\/releases\/(\d+)\/assets$/;
const NEW_REPO = /^\/(user|orgs\/[^/]+)\/repos$/;
const MARKDOWN_MODES = ['markdown', 'gfm'];

export interface CompatContext {
  engine: Engine;
  /** The engine's API in-process as a login (reads on someone's behalf). */
  call: EngineCall;
  engineFetch: (request: Request) => Promise<Response>;
}

/** The answer for `request` when it is one of these routes, else undefined. */
export async function handleCompat(request: Request, ctx: CompatContext): Promise<Response | undefined> {
  const url = new URL(request.url);
  const { engine, engineFetch } = ctx;
  if (request.method === 'GET' && url.pathname === '/') return json(200, rootDocument(url.origin));
  if (request.method === 'GET' && url.pathname === '/versions') return json(200, API_VERSIONS);
  if (request.method === 'POST' && url.pathname === '/markdown') return markdown(request);
  if (request.method === 'POST' && url.pathname === '/markdown/raw') {
    return html(renderMarkdown(await request.text(), false));
  }
  // Every notification of the twin is read already: done at once, GitHub's 205 Reset Content.
  if (request.method === 'PUT' && url.pathname === '/notifications')
    return new Response(null, { status: 205 });
  const refs = request.method === 'GET' ? REFS.exec(url.pathname) : null;
  if (refs) return legacyRefs(request, url, refs, engineFetch);
  const merged = request.method === 'GET' ? PULL_MERGED.exec(url.pathname) : null;
  if (merged) return pullMerged(engine, merged);
  const team = LEGACY_TEAM_REPO.exec(url.pathname);
  if (team) return legacyTeamRepo(request, url, ctx, team);
  const assets = request.method === 'POST' ? RELEASE_ASSETS.exec(url.pathname) : null;
  if (assets) return assetNameTaken(engine, url, assets) ?? uploadAsset(engine, request, engineFetch);
  if (request.method === 'POST' && NEW_REPO.test(url.pathname)) {
    const created = await engineFetch(request);
    if (created.status === 201) await addDefaultLabels(engine, created);
    return created;
  }
  return (
    (await handleCollaborators(request, ctx)) ??
    (await rememberingRenames(engine, request, () => engineFetch(request)))
  );
}

/** What api.github.com answers at its root, on this twin's origin (the web pages' URLs too: it serves both). */
function rootDocument(origin: string): Record<string, string> {
  const search = (kind: string, extra = '{&page,per_page,sort,order}') =>
    `${origin}/search/${kind}?q={query}${extra}`;
  return {
    current_user_url: `${origin}/user`,
    current_user_authorizations_html_url: `${origin}/settings/connections/applications{/client_id}`,
    authorizations_url: `${origin}/authorizations`,
    code_search_url: search('code'),
    commit_search_url: search('commits'),
    emails_url: `${origin}/user/emails`,
    emojis_url: `${origin}/emojis`,
    events_url: `${origin}/events`,
    feeds_url: `${origin}/feeds`,
    followers_url: `${origin}/user/followers`,
    following_url: `${origin}/user/following{/target}`,
    gists_url: `${origin}/gists{/gist_id}`,
    issue_search_url: search('issues'),
    issues_url: `${origin}/issues`,
    keys_url: `${origin}/user/keys`,
    label_search_url: search('labels', '&repository_id={repository_id}{&page,per_page}'),
    notifications_url: `${origin}/notifications`,
    organization_url: `${origin}/orgs/{org}`,
    organization_repositories_url: `${origin}/orgs/{org}/repos{?type,page,per_page,sort}`,
    organization_teams_url: `${origin}/orgs/{org}/teams`,
    public_gists_url: `${origin}/gists/public`,
    rate_limit_url: `${origin}/rate_limit`,
    repository_url: `${origin}/repos/{owner}/{repo}`,
    repository_search_url: search('repositories'),
    current_user_repositories_url: `${origin}/user/repos{?type,page,per_page,sort}`,
    starred_url: `${origin}/user/starred{/owner}{/repo}`,
    starred_gists_url: `${origin}/gists/starred`,
    topic_search_url: search('topics', '{&page,per_page}'),
    user_url: `${origin}/users/{user}`,
    user_organizations_url: `${origin}/user/orgs`,
    user_repositories_url: `${origin}/users/{user}/repos{?type,page,per_page,sort}`,
    user_search_url: search('users'),
  };
}

async function markdown(request: Request): Promise<Response> {
  let body: unknown;
  try {
    body = await request.json();
  } catch {
    return githubError(400, 'Problems parsing JSON');
  }
  const { text, mode } = (body ?? {}) as { text?: unknown; mode?: unknown };
  if (typeof text !== 'string') return githubError(422, 'Invalid request.\n\n"text" wasn\'t supplied.');
  if (mode !== undefined && !MARKDOWN_MODES.includes(mode as string)) {
    return githubError(422, `Invalid request.\n\n${JSON.stringify(mode)} is not a valid mode.`);
  }
  return html(renderMarkdown(text, mode === 'gfm'));
}

/** 204 once the pull request is merged, 404 before (and for one that does not exist). */
function pullMerged(engine: Engine, [, owner, name, number]: RegExpExecArray): Response {
  const repo = repoNamed(engine, owner!, name!);
  const pull = repo
    ? engine.store
        .collection('github.pull_requests', ['repo_id', 'number'])
        .findBy('repo_id', repo.id)
        .find((p) => p.number === Number(number))
    : undefined;
  return pull?.merged ? new Response(null, { status: 204 }) : githubError(404, 'Not Found');
}

/**
 * `/teams/{team_id}/repos/{o}/{r}`, the team routes by id that GitHub deprecated for
 * `/orgs/{org}/teams/{slug}/...` and still serves (https://docs.github.com/rest/teams/teams#add-or-update-team-repository-permissions-legacy):
 * PUT and DELETE are the engine's slug routes; GET is 204 when the team has the repository (200 with the
 * repository and the team's permissions when asked for `application/vnd.github.v3.repository+json`).
 */
async function legacyTeamRepo(
  request: Request,
  url: URL,
  ctx: CompatContext,
  [, teamId, owner, name]: RegExpExecArray,
): Promise<Response | undefined> {
  const { engine } = ctx;
  const { teams, orgs, teamRepos } = collections(engine);
  const team = teams.get(Number(teamId));
  const org = team ? orgs.get(team.org_id as number) : undefined;
  if (!team || !org) return githubError(404, 'Not Found');
  const repo = repoNamed(engine, owner!, name!);
  if (request.method === 'GET') {
    const link = repo ? teamRepos.findBy('team_id', team.id).find((l) => l.repo_id === repo.id) : undefined;
    if (!repo || !link) return githubError(404, 'Not Found');
    if (!/application\/vnd\.github\.v3\.repository(\+json)?\b/.test(request.headers.get('accept') ?? '')) {
      return new Response(null, { status: 204 });
    }
    const read = await ctx.engineFetch(
      new Request(new URL(`/repos/${String(repo.full_name)}`, url), request),
    );
    if (read.status !== 200) return read;
    const permission = String(link.permission ?? team.permission ?? 'pull');
    const role = permission === 'pull' ? 'read' : permission === 'push' ? 'write' : permission;
    const levels = ['pull', 'triage', 'push', 'maintain', 'admin'];
    const rank = levels.indexOf(permission);
    const permissions = Object.fromEntries(levels.map((l, i) => [l, i <= rank]));
    return json(200, { ...((await read.json()) as object), permissions, role_name: role });
  }
  if (request.method !== 'PUT' && request.method !== 'DELETE') return undefined;
  // Managing a team's repositories takes an owner of its organization, as on GitHub.
  const user = userOf(engine, callerOf(engine, request));
  if (!user || orgMembers(engine, org.id).get(user.id) !== 'admin') {
    return githubError(403, 'You must be an organization owner or team maintainer to add a repository.');
  }
  const text = request.method === 'PUT' ? await request.text() : '';
  let permission: unknown;
  try {
    permission = text.trim() ? (JSON.parse(text) as { permission?: unknown }).permission : undefined;
  } catch {
    return githubError(400, 'Problems parsing JSON');
  }
  if (permission !== undefined && !['pull', 'push', 'admin'].includes(permission as string)) {
    return validationFailed([{ resource: 'TeamRepository', code: 'invalid', field: 'permission' }]);
  }
  const path = `/orgs/${String(org.login)}/teams/${String(team.slug)}/repos/${owner}/${name}`;
  const response = await ctx.engineFetch(
    new Request(new URL(path, url), {
      method: request.method,
      headers: request.headers,
      ...(text ? { body: text } : {}),
    }),
  );
  const link = repo && teamRepos.findBy('team_id', team.id).find((l) => l.repo_id === repo.id);
  if (request.method === 'PUT' && response.status === 204 && link && typeof permission === 'string') {
    teamRepos.update(link.id, { permission });
  }
  return response;
}

/** A release holds one asset of a name: a second upload of it is GitHub's 422 `already_exists`. */
function assetNameTaken(
  engine: Engine,
  url: URL,
  [, owner, name, releaseId]: RegExpExecArray,
): Response | undefined {
  const repo = repoNamed(engine, owner!, name!);
  const assetName = url.searchParams.get('name')?.trim();
  if (!repo || !assetName) return undefined;
  const taken = engine.store
    .collection('github.release_assets', ['release_id', 'repo_id'])
    .findBy('release_id', Number(releaseId))
    .some((a) => a.repo_id === repo.id && a.name === assetName);
  return taken
    ? validationFailed([{ resource: 'ReleaseAsset', code: 'already_exists', field: 'name' }])
    : undefined;
}

/** An upload, with the SHA-256 `digest` GitHub gives every asset (kept on the engine's record). */
async function uploadAsset(
  engine: Engine,
  request: Request,
  engineFetch: (request: Request) => Promise<Response>,
): Promise<Response> {
  const bytes = Buffer.from(await request.arrayBuffer());
  const response = await engineFetch(
    new Request(request.url, { method: 'POST', headers: request.headers, body: bytes }),
  );
  if (response.status !== 201) return response;
  const asset = (await response.json()) as Record<string, unknown>;
  const digest = `sha256:${createHash('sha256').update(bytes).digest('hex')}`;
  engine.store
    .collection('github.release_assets', ['release_id', 'repo_id'])
    .update(asset.id as number, { digest });
  return json(201, { ...asset, digest });
}

/** The labels GitHub gives every new repository (https://docs.github.com/issues/using-labels-and-milestones-to-track-work/managing-labels#about-default-labels). */
export const DEFAULT_LABELS: ReadonlyArray<{ name: string; color: string; description: string }> = [
  { name: 'bug', color: 'd73a4a', description: "Something isn't working" },
  { name: 'documentation', color: '0075ca', description: 'Improvements or additions to documentation' },
  { name: 'duplicate', color: 'cfd3d7', description: 'This issue or pull request already exists' },
  { name: 'enhancement', color: 'a2eeef', description: 'New feature or request' },
  { name: 'good first issue', color: '7057ff', description: 'Good for newcomers' },
  { name: 'help wanted', color: '008672', description: 'Extra attention is needed' },
  { name: 'invalid', color: 'e4e669', description: "This doesn't seem right" },
  { name: 'question', color: 'd876e3', description: 'Further information is requested' },
  { name: 'wontfix', color: 'ffffff', description: 'This will not be worked on' },
];

async function addDefaultLabels(engine: Engine, created: Response): Promise<void> {
  const { id } = (await created.clone().json()) as { id: number };
  const labels = engine.store.collection('github.labels', ['repo_id']);
  const existing = new Set(labels.findBy('repo_id', id).map((l) => l.name));
  for (const label of DEFAULT_LABELS) {
    if (existing.has(label.name)) continue;
    const row = labels.insert({ node_id: '', repo_id: id, ...label, default: true });
    labels.update(row.id, { node_id: Buffer.from(`0:Label${row.id}`).toString('base64').replace(/=+$/, '') });
  }
}

const html = (body: string) =>
  new Response(body, { status: 200, headers: { 'content-type': 'text/html;charset=utf-8' } });

const escapeHtml = (text: string) =>
  text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/**
 * A deliberately small, safe subset of GitHub's renderer: every character is HTML-escaped (no tag the
 * author wrote reaches the page), blank lines separate paragraphs (`<p>...</p>`), and in `gfm` mode a
 * single newline inside a paragraph is a `<br>`, as GitHub renders comments. No other Markdown syntax.
 */
export function renderMarkdown(text: string, gfm: boolean): string {
  const paragraphs = text
    .replace(/\r\n?/g, '\n')
    .split(/\n[ \t]*\n/)
    .map((p) => p.trim())
    .filter((p) => p !== '');
  return paragraphs.map((p) => `<p>${escapeHtml(p).replace(/\n/g, gfm ? '<br>\n' : '\n')}</p>\n`).join('');
}

/**
 * `git/refs`: every ref, as `git/matching-refs/` with an empty prefix answers. `git/refs/{ref}`: the ref
 * itself when it exists; otherwise the refs that start with it, as an array; none is 404, as GitHub's
 * older "Get a reference" documented it.
 */
async function legacyRefs(
  request: Request,
  url: URL,
  [, owner, repo, ref]: RegExpExecArray,
  engineFetch: (request: Request) => Promise<Response>,
): Promise<Response> {
  const at = (path: string) =>
    engineFetch(new Request(new URL(`/repos/${owner}/${repo}/git/${path}${url.search}`, url), request));
  if (ref !== undefined) {
    const exact = await at(`ref/${ref}`);
    if (exact.status !== 404) return exact;
  }
  const matching = await at(`matching-refs/${ref ?? 'refs/'}`);
  if (matching.status !== 200) return matching;
  const list = (await matching.clone().json()) as unknown[];
  return list.length ? matching : githubError(404, 'Not Found');
}
