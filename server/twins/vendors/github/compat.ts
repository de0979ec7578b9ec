/**
 * GitHub routes the engine lacks that need no state of their own: the API root document (`GET /`),
 * Markdown rendering (`POST /markdown`, `POST /markdown/raw`), and the refs routes GitHub keeps for older
 * clients: `GET /repos/{o}/{r}/git/refs` (every ref) and `GET /repos/{o}/{r}/git/refs/{ref}` (octokit.rb's
 * `ref`). The refs routes are answered by the engine's own `git/ref` and `git/matching-refs` routes, so its
 * access checks apply unchanged.
 */
import { json } from '../../runtime/http.ts';

const DOCS = 'https://docs.github.com/rest';
const REFS = /^\/repos\/([^/]+)\/([^/]+)\/git\/refs(?:\/(.+))?$/;
const MARKDOWN_MODES = ['markdown', 'gfm'];

const githubError = (status: number, message: string) =>
  json(status, { message, documentation_url: DOCS, status: String(status) });

/** The answer for `request` when it is one of these routes, else undefined. */
export async function handleCompat(
  request: Request,
  engineFetch: (request: Request) => Promise<Response>,
): Promise<Response | undefined> {
  const url = new URL(request.url);
  if (request.method === 'GET' && url.pathname === '/') return json(200, rootDocument(url.origin));
  if (request.method === 'POST' && url.pathname === '/markdown') return markdown(request);
  if (request.method === 'POST' && url.pathname === '/markdown/raw') {
    return html(renderMarkdown(await request.text(), false));
  }
  const refs = request.method === 'GET' ? REFS.exec(url.pathname) : null;
  if (refs) return legacyRefs(request, url, refs, engineFetch);
  return undefined;
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
