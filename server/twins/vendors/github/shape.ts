/**
 * Brings the engine's answers to the shape GitHub documents (its REST description, vendored in
 * `vendor-schema/`; the twin tests check every response against it). The engine's routes stay as shipped;
 * this layer adjusts what goes in (an empty body where GitHub takes none) and what comes out (fields the
 * engine leaves out or types differently), per operation.
 */
import type { Engine } from '../../engine/emulate.ts';

type Json = Record<string, unknown>;

const DOCS = 'https://docs.github.com/rest';

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

/** The repository GitHub's full-repository documents: counts the engine does not keep, a push time. */
function fixRepository(repo: unknown): void {
  if (!isObject(repo)) return;
  // Without forks the network is the repository alone; the owner watches what they create.
  repo.network_count ??= typeof repo.forks_count === 'number' ? repo.forks_count : 0;
  repo.subscribers_count ??= 1;
  // Every repository of the twin starts with a README commit, pushed when it was created.
  if (repo.pushed_at === null) repo.pushed_at = repo.created_at;
}

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

interface Route {
  method: string;
  pattern: RegExp;
  fix: (body: unknown, m: RegExpExecArray, request: Request) => unknown | Promise<unknown>;
  /** The status GitHub answers with, when the engine's differs. */
  status?: (status: number, body: unknown) => number;
}

export class GitHubShape {
  private readonly routes: Route[];
  /** A URL of the twin with `[` or `]` in it (a bot's login), as it appears in JSON text. */
  private readonly bracketedUrl: RegExp;

  constructor(
    private readonly engine: Engine,
    private readonly baseUrl: string,
  ) {
    this.bracketedUrl = new RegExp(`${baseUrl.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}[^"\\s]*[[\\]]`);
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
      R('GET', '/repos/{o}/{r}', (b) => (fixRepository(b), b)),
      R('PATCH', '/repos/{o}/{r}', (b) => (fixRepository(b), b)),
      R('POST', '/user/repos', (b) => (fixRepository(b), b)),
      R('POST', '/orgs/{org}/repos', (b) => (fixRepository(b), b)),
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
    if (body.byteLength > 0) return request;
    const headers = new Headers(request.headers);
    headers.set('content-type', 'application/json');
    return new Request(request, { headers, body: '{}' });
  }

  /** The response GitHub would give for `request`, from the engine's. */
  async finish(request: Request, response: Response): Promise<Response> {
    if (!/json/i.test(response.headers.get('content-type') ?? '')) return response;
    const path = new URL(request.url).pathname;
    const route = this.routes.find((r) => r.method === request.method && r.pattern.test(path));
    // Reading the body costs more than all the rest: only when there may be something to change. Bot
    // logins (brackets) exist only once a GitHub App is seeded.
    if (!route && response.status < 400 && !this.hasApps()) return response;
    const text = await response.text();
    const headers = new Headers(response.headers);
    headers.delete('content-length');
    // Most answers need nothing: no fix for the operation, no error, no bracketed login in a URL.
    if (!route && response.status < 400 && !this.bracketedUrl.test(text)) {
      return new Response(text, { status: response.status, headers });
    }
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      return new Response(text, { status: response.status, headers });
    }
    let status = response.status;
    if (route && status < 300) body = await route.fix(body, route.pattern.exec(path)!, request);
    if (route?.status) status = route.status(status, body);
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
    body = encodeBrackets(body, this.baseUrl);
    return new Response(JSON.stringify(body), { status, headers });
  }

  private hasApps(): boolean {
    return this.engine.store.collection('github.apps', ['slug']).all().length > 0;
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
