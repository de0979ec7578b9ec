/**
 * Brings the engine's answers to the shape GitHub documents (its REST description, vendored in
 * `vendor-schema/`; the twin tests check every response against it). The engine's routes stay as shipped;
 * this layer adjusts what goes in (an empty body where GitHub takes none) and what comes out (fields the
 * engine leaves out or types differently), per operation.
 */
import type { Engine, EngineRecord } from '../../engine/emulate.ts';
import { bytesAnswer } from '../../runtime/http.ts';
import {
  callerOf,
  collections,
  DOCS,
  orgMembers,
  permissionsOf,
  repoNamed,
  roleOn,
  userOf,
  type Role,
} from './access.ts';
import { validationItems } from './validation.ts';
import { API_VERSIONS } from './versions.ts';

type Json = Record<string, unknown>;

/** A user as GitHub's `simple-user` lists it, from what the engine keeps of an account. */
export function simpleUser(
  baseUrl: string,
  account: { login: string; id: number; node_id?: string; type?: string },
): Json {
  const login = encodeURIComponent(account.login);
  const api = `${baseUrl}/users/${login}`;
  return {
    login: account.login,
    id: account.id,
    node_id: account.node_id ?? Buffer.from(`04:User${account.id}`).toString('base64'),
    avatar_url: `${baseUrl}/avatars/u/${login}`,
    gravatar_id: '',
    url: api,
    html_url: `${baseUrl}/${login}`,
    followers_url: `${api}/followers`,
    following_url: `${api}/following{/other_user}`,
    gists_url: `${api}/gists{/gist_id}`,
    starred_url: `${api}/starred{/owner}{/repo}`,
    subscriptions_url: `${api}/subscriptions`,
    organizations_url: `${api}/orgs`,
    repos_url: `${api}/repos`,
    events_url: `${api}/events{/privacy}`,
    received_events_url: `${api}/received_events`,
    type: account.type ?? 'User',
    site_admin: false,
  };
}

const isObject = (v: unknown): v is Json => !!v && typeof v === 'object' && !Array.isArray(v);

/**
 * URLs of the twin that name a login with brackets (an app's bot user, `name[bot]`): GitHub percent-encodes
 * them (`/users/name%5Bbot%5D`), and a URL with raw brackets is not a valid URI.
 */
function encodeBrackets(node: unknown, baseUrl: string): unknown {
  if (typeof node === 'string') {
    return node.startsWith(baseUrl) && /[[\]]/.test(node)
      ? node.replace(/\[/g, '%5B').replace(/\]/g, '%5D')
      : node;
  }
  if (Array.isArray(node)) return node.map((n) => encodeBrackets(n, baseUrl));
  if (isObject(node)) {
    for (const [key, value] of Object.entries(node)) node[key] = encodeBrackets(value, baseUrl);
  }
  return node;
}

/** An `owner` that is an organization, in the engine's brief form, as GitHub's simple-user (nested anywhere). */
export function fixOrganizationOwners(node: unknown, baseUrl: string): void {
  if (Array.isArray(node)) {
    for (const n of node) fixOrganizationOwners(n, baseUrl);
    return;
  }
  if (!isObject(node)) return;
  for (const [key, value] of Object.entries(node)) {
    if (
      key === 'owner' &&
      isObject(value) &&
      value.type === 'Organization' &&
      typeof value.login === 'string' &&
      !('followers_url' in value)
    ) {
      node.owner = simpleUser(baseUrl, {
        login: value.login,
        id: value.id as number,
        node_id: value.node_id as string,
        type: 'Organization',
      });
    } else if (value && typeof value === 'object') fixOrganizationOwners(value, baseUrl);
  }
}

/**
 * Whose permissions a repository answer carries: `set` to the caller's role on it (undefined: none), `drop`
 * them for an anonymous caller, `keep` the engine's where the twin knows no better (an installation's
 * token, or a repository the store does not hold). Read apart from the answer's body so that a finished
 * answer can be reused for the same body and the same access (GitHubShape's `repositories`).
 */
type RepoAccess = { kind: 'set'; role: Role | undefined } | { kind: 'drop' } | { kind: 'keep' };

function repositoryAccess(engine: Engine, request: Request, id: unknown): RepoAccess {
  const record = typeof id === 'number' ? collections(engine).repos.get(id) : undefined;
  if (!record) return { kind: 'keep' };
  const caller = callerOf(engine, request);
  const user = userOf(engine, caller);
  if (user)
    return { kind: 'set', role: roleOn(engine, record, user.id) ?? (record.private ? undefined : 'read') };
  return caller ? { kind: 'keep' } : { kind: 'drop' };
}

const accessKey = (access: RepoAccess) => (access.kind === 'set' ? `set:${access.role ?? ''}` : access.kind);

/**
 * The repository GitHub's full-repository documents: counts the engine does not keep, a push time, the
 * owning organization, the merge settings GitHub shows beside the engine's (at their defaults: the engine
 * keeps none of them), and `permissions` as the caller holds them (the engine says admin to everyone).
 `context.access`, when given, is the caller's access as read before (repositoryAccess).
 */
function fixRepository(
  repo: unknown,
  engine: Engine,
  request: Request,
  baseUrl: string,
  context: FixContext,
): void {
  if (!isObject(repo)) return;
  // Before `organization` is made from it: the engine's brief form of an organization owner won't do.
  // Without an organization named in the text there is none to fix, and the walk is spared.
  if (mayNameOrganization(context.text)) fixOrganizationOwners(repo, baseUrl);
  // Without forks the network is the repository alone; the owner watches what they create.
  repo.network_count ??= typeof repo.forks_count === 'number' ? repo.forks_count : 0;
  repo.subscribers_count ??= 1;
  // Every repository of the twin starts with a README commit, pushed when it was created.
  if (repo.pushed_at === null) repo.pushed_at = repo.created_at;
  if (isObject(repo.owner) && repo.owner.type === 'Organization') repo.organization ??= { ...repo.owner };
  // No temporary clone token is issued: the twin serves no git protocol to clone with one.
  repo.temp_clone_token ??= null;
  repo.web_commit_signoff_required ??= false;
  repo.allow_update_branch ??= false;
  repo.use_squash_pr_title_as_default ??= false;
  repo.squash_merge_commit_title ??= 'COMMIT_OR_PR_TITLE';
  repo.squash_merge_commit_message ??= 'COMMIT_MESSAGES';
  repo.merge_commit_title ??= 'MERGE_MESSAGE';
  repo.merge_commit_message ??= 'PR_TITLE';
  const access = context.access ?? repositoryAccess(engine, request, repo.id);
  if (access.kind === 'set') repo.permissions = permissionsOf(access.role);
  else if (access.kind === 'drop') delete repo.permissions;
}

/**
 * Whether an answer's JSON text may hold an object of `type: "Organization"`. False means none: the word
 * in quotes is not there, and the text has no `\u` escape that could spell it otherwise (the engine's
 * answers are JSON.stringify's, which escapes only control characters and lone surrogates that way).
 */
const mayNameOrganization = (text: string) => text.includes('"Organization"') || text.includes('\\u');

/** Owner-only keys of an organization (GitHub shows them to its owners; the engine to anyone). */
const ORG_OWNER_KEYS = ['billing_email', 'default_repository_permission', 'members_can_create_repositories'];

/**
 * An organization as GitHub answers it: to its owners with the settings and counts only they see (`plan`,
 * `total_private_repos`, `members_can_create_*`...), to anyone else without them.
 */
function fixOrganization(org: unknown, engine: Engine, request: Request): void {
  if (!isObject(org) || typeof org.id !== 'number') return;
  org.archived_at ??= null;
  // Profile fields never set: GitHub's description types them as strings (a blog as a URI), so unset
  // ones are left out rather than sent as null or "".
  for (const key of ['name', 'company', 'blog', 'location', 'email']) {
    if (org[key] === null || org[key] === '') delete org[key];
  }
  const record = collections(engine).orgs.get(org.id);
  const user = userOf(engine, callerOf(engine, request));
  const members = orgMembers(engine, org.id);
  if (!record || !user || members.get(user.id) !== 'admin') {
    for (const key of ORG_OWNER_KEYS) delete org[key];
    return;
  }
  const repos = collections(engine)
    .repos.findBy('owner_id', org.id)
    .filter((r) => r.owner_type === 'Organization');
  const privateRepos = repos.filter((r) => r.private).length;
  const outside = new Set<number>();
  for (const repo of repos) {
    for (const c of collections(engine).collaborators.findBy('repo_id', repo.id)) {
      if (!members.has(c.user_id as number)) outside.add(c.user_id as number);
    }
  }
  const canCreate = org.members_can_create_repositories !== false;
  Object.assign(org, {
    total_private_repos: privateRepos,
    owned_private_repos: privateRepos,
    private_gists: 0,
    disk_usage: repos.reduce((sum, r) => sum + (typeof r.size === 'number' ? r.size : 0), 0),
    collaborators: outside.size,
    billing_email: org.billing_email ?? null,
    default_repository_permission: org.default_repository_permission ?? 'read',
    members_can_create_repositories: canCreate,
    two_factor_requirement_enabled: false,
    members_allowed_repository_creation_type: canCreate ? 'all' : 'none',
    members_can_create_public_repositories: canCreate,
    members_can_create_private_repositories: canCreate,
    members_can_create_internal_repositories: false,
    members_can_create_pages: true,
    members_can_create_public_pages: true,
    members_can_create_private_pages: true,
    members_can_fork_private_repositories: false,
    web_commit_signoff_required: false,
    // The free plan: unlimited private repositories, a seat per member.
    plan: {
      name: 'free',
      space: 976562499,
      private_repos: 10000,
      filled_seats: members.size,
      seats: members.size,
    },
  });
}

/** The flags of branch protection the engine does not keep, each `{enabled}` as GitHub answers them. */
const PROTECTION_FLAGS = [
  'required_linear_history',
  'allow_force_pushes',
  'allow_deletions',
  'block_creations',
  'required_conversation_resolution',
  'lock_branch',
  'allow_fork_syncing',
] as const;

function fixCheckRun(run: unknown): void {
  if (!isObject(run) || typeof run.url !== 'string') return;
  const output = isObject(run.output) ? run.output : (run.output = {});
  output.title ??= null;
  output.summary ??= null;
  output.text ??= null;
  output.annotations_count ??= 0;
  output.annotations_url ??= `${run.url}/annotations`;
}

/** Git commit objects in commit lists link their tree, as GitHub's `commit.tree.url`. */
function fixCommit(commit: unknown, repoApi: string): void {
  if (!isObject(commit) || !isObject(commit.commit) || !isObject(commit.commit.tree)) return;
  const tree = commit.commit.tree;
  if (typeof tree.sha === 'string') tree.url ??= `${repoApi}/git/trees/${tree.sha}`;
}

/** Review comments: `_links` as GitHub sends them; fields the engine sets to null that GitHub leaves out. */
function fixReviewComment(comment: unknown): void {
  if (!isObject(comment)) return;
  if (typeof comment.url === 'string' && typeof comment.pull_request_url === 'string') {
    comment._links ??= {
      self: { href: comment.url },
      html: { href: comment.html_url },
      pull_request: { href: comment.pull_request_url },
    };
  }
  // Not a reply, a file-level comment (no line), a comment on a line outside the diff's positions.
  for (const key of ['in_reply_to_id', 'position', 'original_position', 'line', 'original_line']) {
    if (comment[key] === null) delete comment[key];
  }
}

function fixInstallation(inst: unknown, baseUrl: string): void {
  if (!isObject(inst) || !isObject(inst.account)) return;
  const account = inst.account as { login: string; id: number; node_id?: string; type?: string };
  inst.account = simpleUser(baseUrl, account);
  inst.target_id ??= account.id;
}

/** GitHub names the API version that answered in every response (versions.ts: one). */
function withSelectedVersion(response: Response): Response {
  try {
    response.headers.set('x-github-api-version-selected', API_VERSIONS[0]!);
    return response;
  } catch {
    // Headers of a fetched response are immutable: the same response, its headers copied.
    const headers = new Headers(response.headers);
    headers.set('x-github-api-version-selected', API_VERSIONS[0]!);
    return new Response(response.body, { status: response.status, statusText: response.statusText, headers });
  }
}

interface Route {
  method: string;
  pattern: RegExp;
  fix: (
    body: unknown,
    m: RegExpExecArray,
    request: Request,
    context: FixContext,
  ) => unknown | Promise<unknown>;
  /** The status GitHub answers with, when the engine's differs. */
  status?: (status: number, body: unknown) => number;
  /**
   * The fixed 200 answer depends on nothing but the engine's text and the caller's access to the repository
   * it describes (`repositoryAccess`), so it is kept and reused for the same two (GitHubShape's `repositories`).
   */
  byAccess?: true;
}

interface FixContext {
  /** The engine's answer as it came, for cheap checks that spare a walk of the body. */
  text: string;
  /** For a `byAccess` route: the caller's access, read before the fix, as the kept answer is keyed. */
  access?: RepoAccess;
}

/** A repository answer the engine gave (its `id`) and what the twin made of it, per caller's access. */
interface FinishedRepository {
  id: unknown;
  answers: Map<string, Buffer>;
}

/** Engine answers whose finished forms are kept: a few repositories an app reads over and over. */
const FINISHED_REPOSITORIES_MAX = 16;

export class GitHubShape {
  private readonly routes: Route[];
  /** Bodies of requests in flight, by request (prepare to finish). */
  private readonly sent = new WeakMap<Request, string>();
  /** A JSON string that starts with the twin's URL and has `[` or `]` in it (a bot's login). */
  private readonly bracketedUrl: RegExp;
  /**
   * Finished answers of `byAccess` routes (repos.get), by the engine's text: parsing the engine's answer,
   * fixing it and writing it out again cost about as much as the engine's own work for a repository, and
   * an app that polls one gets the same text each time until the repository changes (`updated_at` is in
   * it). Most recently used last; at most FINISHED_REPOSITORIES_MAX.
   */
  private readonly repositories = new Map<string, FinishedRepository>();

  constructor(
    private readonly engine: Engine,
    private readonly baseUrl: string,
  ) {
    // A string token of the JSON text: up to its closing quote, escapes (`\"`) read as pairs.
    this.bracketedUrl = new RegExp(
      `"${baseUrl.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?:[^"\\\\\\[\\]]|\\\\.)*[[\\]]`,
    );
    const repoApi = (m: RegExpExecArray) => `${baseUrl}/repos/${m[1]}/${m[2]}`;
    const R = (method: string, path: string, fix: Route['fix'], status?: Route['status']): Route => ({
      method,
      pattern: new RegExp(`^${path.replace(/\{[a-z_]+\}/g, '([^/]+)').replace(/\{[a-z_]+\+\}/g, '(.+)')}$`),
      fix,
      status,
    });
    const eachCommit = (body: unknown, m: RegExpExecArray) => {
      for (const c of Array.isArray(body) ? body : []) fixCommit(c, repoApi(m));
      return body;
    };
    this.routes = [
      // Before the branch route, which would take `{branch}/protection` for a branch name.
      R('GET', '/repos/{o}/{r}/branches/{branch+}/protection', (b, m) => this.protection(b, m)),
      R('PUT', '/repos/{o}/{r}/branches/{branch+}/protection', (b, m, req) => this.protection(b, m, req)),
      {
        ...R('GET', '/repos/{o}/{r}', (b, _m, req, c) => (fixRepository(b, engine, req, baseUrl, c), b)),
        byAccess: true,
      },
      R('PATCH', '/repos/{o}/{r}', (b, _m, req, c) => (fixRepository(b, engine, req, baseUrl, c), b)),
      R('POST', '/user/repos', (b, _m, req, c) => (fixRepository(b, engine, req, baseUrl, c), b)),
      R('POST', '/orgs/{org}/repos', (b, _m, req, c) => (fixRepository(b, engine, req, baseUrl, c), b)),
      R('GET', '/orgs/{org}', (b, _m, req) => (fixOrganization(b, engine, req), b)),
      R('POST', '/orgs/{org}/teams', (b, m, req) => this.team(b, m, req)),
      R('GET', '/orgs/{org}/teams/{slug}', (b, m, req) => this.team(b, m, req)),
      R('PATCH', '/orgs/{org}/teams/{slug}', (b, m, req) => this.team(b, m, req)),
      R('GET', '/repos/{o}/{r}/releases/{id}/assets', (b) => this.assets(b)),
      R('GET', '/repos/{o}/{r}/releases/assets/{id}', (b) => this.assets(b)),
      R('PATCH', '/repos/{o}/{r}/releases/assets/{id}', (b) => this.assets(b)),
      R('GET', '/repos/{o}/{r}/collaborators/{u}/permission', (b, m) => this.collaboratorPermission(b, m)),
      R('PATCH', '/orgs/{org}', (b, _m, req) => (fixOrganization(b, engine, req), b)),
      R('GET', '/repos/{o}/{r}/branches/{branch+}', (b, m, req) => this.branch(b, m, req)),
      R('POST', '/repos/{o}/{r}/check-runs', (b) => (fixCheckRun(b), b)),
      R('GET', '/repos/{o}/{r}/check-runs/{id}', (b) => (fixCheckRun(b), b)),
      R('PATCH', '/repos/{o}/{r}/check-runs/{id}', (b) => (fixCheckRun(b), b)),
      R('GET', '/repos/{o}/{r}/commits/{ref+}/check-runs', (b) => this.checkRuns(b)),
      R('GET', '/repos/{o}/{r}/check-suites/{id}/check-runs', (b) => this.checkRuns(b)),
      // GitHub lists annotations as an array; the engine wraps them in an object.
      R('GET', '/repos/{o}/{r}/check-runs/{id}/annotations', (b) =>
        isObject(b) && Array.isArray(b.check_annotations) ? b.check_annotations : b,
      ),
      R('GET', '/repos/{o}/{r}/commits', eachCommit),
      R('GET', '/repos/{o}/{r}/pulls/{n}/commits', eachCommit),
      R('GET', '/repos/{o}/{r}/compare/{basehead+}', (b, m) => {
        if (isObject(b)) for (const c of Array.isArray(b.commits) ? b.commits : []) fixCommit(c, repoApi(m));
        return b;
      }),
      // A review is created with 200, as GitHub documents.
      R(
        'POST',
        '/repos/{o}/{r}/pulls/{n}/reviews',
        (b) => b,
        (s) => (s === 201 ? 200 : s),
      ),
      // A pull request that cannot be merged (already merged or closed) is 405, GitHub's answer.
      R(
        'PUT',
        '/repos/{o}/{r}/pulls/{n}/merge',
        (b) => b,
        (s, b) => (s === 422 && isObject(b) && b.message === 'Pull Request is not mergeable' ? 405 : s),
      ),
      ...['/repos/{o}/{r}/pulls/{n}/comments', '/repos/{o}/{r}/pulls/comments'].map((path) =>
        R('GET', path, (b) => {
          for (const c of Array.isArray(b) ? b : []) fixReviewComment(c);
          return b;
        }),
      ),
      R('POST', '/repos/{o}/{r}/pulls/{n}/comments', (b) => (fixReviewComment(b), b)),
      R('GET', '/repos/{o}/{r}/pulls/comments/{id}', (b) => (fixReviewComment(b), b)),
      R('PATCH', '/repos/{o}/{r}/pulls/comments/{id}', (b) => (fixReviewComment(b), b)),
      ...['/repos/{o}/{r}/installation', '/orgs/{org}/installation', '/users/{u}/installation'].map((p) =>
        R('GET', p, (b) => (fixInstallation(b, baseUrl), b)),
      ),
      R('GET', '/app/installations/{id}', (b) => (fixInstallation(b, baseUrl), b)),
      R('GET', '/app/installations', (b) => {
        for (const i of Array.isArray(b) ? b : []) fixInstallation(i, baseUrl);
        return b;
      }),
      R('GET', '/app', (b) => this.app(b)),
    ];
  }

  /**
   * GitHub takes a PUT, POST or PATCH without a body (Octokit sends none for `pulls.merge()` without
   * options, or a lock without a reason) as an empty object; the engine would answer 400.
   */
  async prepare(request: Request): Promise<Request> {
    if (!['PUT', 'POST', 'PATCH'].includes(request.method)) return request;
    // The OAuth web flow's forms are not the API.
    if (/^\/(login|settings)\//.test(new URL(request.url).pathname)) return request;
    const body = await request.clone().arrayBuffer();
    if (body.byteLength > 0) {
      // Kept for finish(): a 422's `errors` and branch protection's flags read what was sent.
      if (body.byteLength <= 1 << 20) this.sent.set(request, Buffer.from(body).toString('utf8'));
      return request;
    }
    const headers = new Headers(request.headers);
    headers.set('content-type', 'application/json');
    return new Request(request, { headers, body: '{}' });
  }

  /** The JSON object a request sent (see prepare), or undefined. */
  private sentBody(request: Request): Json | undefined {
    const text = this.sent.get(request);
    if (text === undefined) return undefined;
    try {
      const body = JSON.parse(text) as unknown;
      return isObject(body) ? body : undefined;
    } catch {
      return undefined;
    }
  }

  /** The response GitHub would give for `request`, from the engine's. */
  async finish(request: Request, response: Response): Promise<Response> {
    return withSelectedVersion(await this.reshape(request, response));
  }

  private async reshape(request: Request, response: Response): Promise<Response> {
    if (!/json/i.test(response.headers.get('content-type') ?? '')) return response;
    const path = new URL(request.url).pathname;
    const route = this.routes.find((r) => r.method === request.method && r.pattern.test(path));
    // Reading the body costs more than all the rest: only when there may be something to change. Bot
    // logins (brackets) exist only once a GitHub App has acted, organization owners once there is one.
    if (!route && response.status < 400 && !this.hasBots() && !this.hasOrgs()) return response;
    const text = await response.text();
    // Answered as bytes (runtime/http.ts): a Response made from text wraps it in a stream to be read back.
    // The engine's headers but its length, copied once, by the answer itself.
    const answer = (bytes: Buffer, status: number) => {
      const made = bytesAnswer(bytes, { status, headers: response.headers });
      made.headers.delete('content-length');
      return made;
    };
    const orgOwner = mayNameOrganization(text);
    const brackets = this.mayHaveBracketedUrl(text);
    // Most answers need nothing: no fix for the operation, no error, no bracketed login in a URL, no
    // organization as an owner.
    if (!route && response.status < 400 && !brackets && !orgOwner) {
      return answer(Buffer.from(text), response.status);
    }
    const byAccess = route?.byAccess === true && response.status === 200;
    const finished = byAccess ? this.repositories.get(text) : undefined;
    let access = finished && repositoryAccess(this.engine, request, finished.id);
    const kept = finished && access && finished.answers.get(accessKey(access));
    if (finished && kept) {
      // Most recently used last, so that the oldest is the one dropped.
      this.repositories.delete(text);
      this.repositories.set(text, finished);
      return answer(kept, 200);
    }
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      return answer(Buffer.from(text), response.status);
    }
    const id = isObject(body) ? body.id : undefined;
    // Read once, before the fix, and given to it: the answer kept below is the one made for this access.
    if (byAccess) access ??= repositoryAccess(this.engine, request, id);
    let status = response.status;
    if (route && status < 300)
      body = await route.fix(body, route.pattern.exec(path)!, request, { text, access });
    if (route?.status) status = route.status(status, body);
    // GitHub's 422s say what failed, in `errors`.
    if (status === 422 && isObject(body) && typeof body.message === 'string' && !Array.isArray(body.errors)) {
      body.errors = validationItems(this.engine, request.method, path, body.message, this.sentBody(request));
      if (body.message === 'Validation failed') body.message = 'Validation Failed';
    }
    // GitHub's errors: its own documentation link and the status as a string.
    if (status >= 400 && isObject(body) && typeof body.message === 'string') {
      if (
        typeof body.documentation_url !== 'string' ||
        !body.documentation_url.startsWith('https://docs.github.com')
      ) {
        body.documentation_url = DOCS;
      }
      body.status ??= String(status);
    }
    if (orgOwner) fixOrganizationOwners(body, this.baseUrl);
    if (brackets) body = encodeBrackets(body, this.baseUrl);
    const bytes = Buffer.from(JSON.stringify(body));
    if (byAccess && access && status === 200) this.keepRepository(text, id, accessKey(access), bytes);
    return answer(bytes, status);
  }

  /** Keeps a finished repository answer (see `repositories`). */
  private keepRepository(text: string, id: unknown, access: string, bytes: Buffer): void {
    let finished = this.repositories.get(text);
    if (!finished) {
      if (this.repositories.size >= FINISHED_REPOSITORIES_MAX) {
        this.repositories.delete(this.repositories.keys().next().value!);
      }
      finished = { id, answers: new Map() };
      this.repositories.set(text, finished);
    }
    finished.answers.set(access, bytes);
  }

  /**
   * Whether an answer's JSON text may hold a string that starts with the twin's URL and has a bracket in
   * it (`encodeBrackets` changes only those). False means none: no such string token, and no escape
   * (`\/`, `\u`) that could spell a slash or bracket otherwise (JSON.stringify, which writes the engine's
   * answers, writes them as themselves).
   */
  private mayHaveBracketedUrl(text: string): boolean {
    return this.bracketedUrl.test(text) || text.includes('\\/') || text.includes('\\u');
  }

  private hasOrgs(): boolean {
    return this.engine.store.collection('github.orgs', ['login']).all().length > 0;
  }

  private hasBots(): boolean {
    // Only bot users have bracketed logins; every twin has an app (app.ts), few have used it.
    return this.engine.store
      .collection('github.users', ['login'])
      .all()
      .some((u) => u.type === 'Bot');
  }

  private checkRuns(body: unknown): unknown {
    if (isObject(body) && Array.isArray(body.check_runs)) for (const run of body.check_runs) fixCheckRun(run);
    return body;
  }

  /** The branch with its head commit in full, `_links` and `protection`, as GitHub's branch-with-protection. */
  private async branch(body: unknown, m: RegExpExecArray, request: Request): Promise<unknown> {
    if (!isObject(body) || !isObject(body.commit) || typeof body.commit.sha !== 'string') return body;
    const repoApi = `${this.baseUrl}/repos/${m[1]}/${m[2]}`;
    const name = String(body.name);
    const commit = await this.engine.app.fetch(
      // As the same caller, so the engine's read checks apply.
      new Request(`${repoApi}/commits/${body.commit.sha}`, { headers: request.headers }),
    );
    if (commit.status === 200) {
      // GitHub's branch answer carries the commit without its diff (`files`, `stats`): with them, a branch
      // whose head adds a 20 MiB file would answer 20 MiB.
      const { files: _files, stats: _stats, ...full } = (await commit.json()) as Record<string, unknown>;
      body.commit = full;
    }
    body._links ??= {
      self: `${repoApi}/branches/${encodeURIComponent(name)}`,
      html: `${this.baseUrl}/${m[1]}/${m[2]}/tree/${encodeURIComponent(name)}`,
    };
    body.protection ??= {
      enabled: false,
      required_status_checks: { enforcement_level: 'off', contexts: [], checks: [] },
    };
    return body;
  }

  /** Release assets with the digest kept at upload (compat.ts), null for those uploaded before it. */
  private assets(body: unknown): unknown {
    const records = this.engine.store.collection('github.release_assets', ['release_id', 'repo_id']);
    for (const asset of Array.isArray(body) ? body : [body]) {
      if (isObject(asset) && typeof asset.id === 'number')
        asset.digest ??= records.get(asset.id)?.digest ?? null;
    }
    return body;
  }

  /** A team as GitHub's team-full: its kind, times, counts and organization (the engine's brief form lacks them). */
  private async team(body: unknown, m: RegExpExecArray, request: Request): Promise<unknown> {
    if (!isObject(body) || typeof body.id !== 'number') return body;
    const { teams, teamMembers, teamRepos } = collections(this.engine);
    const record = teams.get(body.id);
    if (!record) return body;
    const org = await this.engine.app.fetch(
      new Request(`${this.baseUrl}/orgs/${m[1]}`, { headers: request.headers }),
    );
    if (org.status !== 200) return body;
    const organization = (await org.json()) as Json;
    fixOrganization(organization, this.engine, request);
    body.type ??= 'organization';
    body.created_at ??= record.created_at;
    body.updated_at ??= record.updated_at;
    body.members_count ??= teamMembers.findBy('team_id', record.id).length;
    body.repos_count ??= teamRepos.findBy('team_id', record.id).length;
    body.organization ??= organization;
    return body;
  }

  /**
   * A collaborator's permission: GitHub's older `permission` name (admin, write, read) beside the role, and
   * the user as a collaborator, with the role the twin grants (collaborators.ts reads roles the same way).
   */
  private collaboratorPermission(body: unknown, m: RegExpExecArray): unknown {
    if (!isObject(body) || !isObject(body.user)) return body;
    const repo = repoNamed(this.engine, m[1]!, m[2]!);
    const role =
      repo && typeof body.user.id === 'number' ? roleOn(this.engine, repo, body.user.id) : undefined;
    if (!role) return body;
    body.role_name = role;
    body.permission = role === 'admin' ? 'admin' : role === 'maintain' || role === 'write' ? 'write' : 'read';
    body.user = { ...body.user, permissions: permissionsOf(role), role_name: role };
    return body;
  }

  /**
   * Branch protection with the flags GitHub answers beside the engine's rules: what a PUT set (kept on the
   * engine's record), else off.
   */
  private protection(body: unknown, m: RegExpExecArray, request?: Request): unknown {
    if (!isObject(body)) return body;
    const repo = repoNamed(this.engine, m[1]!, m[2]!);
    const branch = decodeURIComponent(m[3]!);
    const protections = this.engine.store.collection('github.branch_protections', ['repo_id']);
    const record: EngineRecord | undefined = repo
      ? protections.findBy('repo_id', repo.id).find((p) => p.branch_name === branch)
      : undefined;
    if (record && request) {
      const sent = this.sentBody(request) ?? {};
      const flags = Object.fromEntries(PROTECTION_FLAGS.map((f) => [f, sent[f] === true]));
      protections.update(record.id, { twinbox_flags: flags });
    }
    const flags = (record ? protections.get(record.id)?.twinbox_flags : undefined) as
      Record<string, boolean> | undefined;
    for (const flag of PROTECTION_FLAGS) body[flag] ??= { enabled: flags?.[flag] === true };
    // Rules not set are left out, as GitHub answers them (its description does not let them be null).
    for (const rule of ['required_status_checks', 'required_pull_request_reviews', 'restrictions']) {
      if (body[rule] === null) delete body[rule];
    }
    if (typeof body.url === 'string')
      body.required_signatures ??= { url: `${body.url}/required_signatures`, enabled: false };
    return body;
  }

  /** The app's owner: GitHub Apps always have one; the engine's seeds leave it out (the installing account). */
  private app(body: unknown): unknown {
    if (!isObject(body) || body.owner !== null) return body;
    const installation = this.engine.store
      .collection('github.app_installations')
      .all()
      .find((i) => i.app_id === body.id);
    const users = this.engine.store.collection('github.users', ['login']);
    const owner = installation
      ? (users.get(installation.account_id as number) ??
        this.engine.store.collection('github.orgs', ['login']).get(installation.account_id as number))
      : users.all()[0];
    if (owner) {
      body.owner = simpleUser(this.baseUrl, {
        login: String(owner.login),
        id: owner.id,
        type: installation?.account_type === 'Organization' ? 'Organization' : 'User',
      });
    }
    return body;
  }
}
