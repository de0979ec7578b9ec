/**
 * Renamed and transferred repositories, as GitHub keeps them reachable: a request to the old
 * `/repos/{owner}/{name}/...` is redirected to `/repositories/{id}/...` (301 for GET and HEAD, 307 for any
 * other method, so a client repeats the method and body there), and `/repositories/{id}/...` is served as
 * the repository's current `/repos/{owner}/{name}/...`. GitHub documents this outside its OpenAPI
 * description: https://docs.github.com/rest/using-the-rest-api/best-practices-for-using-the-rest-api#follow-redirects
 * and https://docs.github.com/repositories/creating-and-managing-repositories/renaming-a-repository.
 */
import type { Engine, EngineRecord } from '../../engine/emulate.ts';
import { json } from '../../runtime/http.ts';
import { collections, repoNamed } from './access.ts';
import { hiddenFrom } from './visibility.ts';

const REPO_PATH = /^\/repos\/([^/]+)\/([^/]+)(\/.*)?$/;
const BY_ID = /^\/repositories\/(\d+)(\/.*)?$/;
const REDIRECT_DOCS =
  'https://docs.github.com/rest/using-the-rest-api/best-practices-for-using-the-rest-api#follow-redirects';

interface Rename extends EngineRecord {
  /** The former `owner/name`, lower-cased (GitHub's names are case-insensitive). */
  old_name: string;
  repo_id: number;
}

const renamesOf = (engine: Engine) => engine.store.collection<Rename>('twinbox.repo_renames', ['old_name']);

/**
 * What the twin answers a request to a renamed repository's old path (a redirect, or undefined to go on),
 * and the request itself with `/repositories/{id}` read as the repository's current path.
 */
export function followRenames(
  engine: Engine,
  request: Request,
  token: string | undefined,
): Request | Response {
  const url = new URL(request.url);
  const byId = BY_ID.exec(url.pathname);
  if (byId) {
    const repo = collections(engine).repos.get(Number(byId[1]));
    // An unknown id goes on unchanged: the engine answers 404.
    if (!repo) return request;
    const target = new URL(`/repos/${String(repo.full_name)}${byId[2] ?? ''}${url.search}`, url);
    return new Request(target, request);
  }
  const named = REPO_PATH.exec(url.pathname);
  if (!named || repoNamed(engine, named[1]!, named[2]!)) return request;
  const repo = renamedRepo(engine, named[1]!, named[2]!);
  // A private repository its caller cannot read stays a plain 404 under its old name too.
  if (!repo || hiddenFrom(engine, new URL(`/repos/${String(repo.full_name)}`, url), token)) return request;
  const location = `${url.origin}/repositories/${repo.id}${named[3] ?? ''}${url.search}`;
  const permanent = request.method === 'GET' || request.method === 'HEAD';
  return json(
    permanent ? 301 : 307,
    {
      message: permanent ? 'Moved Permanently' : 'Temporary Redirect',
      url: location,
      documentation_url: REDIRECT_DOCS,
    },
    { location },
  );
}

function renamedRepo(engine: Engine, owner: string, name: string): EngineRecord | undefined {
  let oldName: string;
  try {
    oldName = `${decodeURIComponent(owner)}/${decodeURIComponent(name)}`.toLowerCase();
  } catch {
    return undefined;
  }
  const latest = renamesOf(engine)
    .findBy('old_name', oldName)
    .reduce<Rename | undefined>((a, b) => (!a || b.id > a.id ? b : a), undefined);
  return latest ? collections(engine).repos.get(latest.repo_id) : undefined;
}

const RENAMING = /^\/repos\/([^/]+)\/([^/]+)(\/transfer)?$/;

/**
 * Runs `next` (the engine's answer to a repository's PATCH or transfer) and remembers the repository's
 * former name when it changed, for the redirects above.
 */
export async function rememberingRenames(
  engine: Engine,
  request: Request,
  next: () => Promise<Response>,
): Promise<Response | undefined> {
  const match = RENAMING.exec(new URL(request.url).pathname);
  const renaming = match && (match[3] ? request.method === 'POST' : request.method === 'PATCH');
  if (!renaming) return undefined;
  const before = repoNamed(engine, match[1]!, match[2]!);
  const response = await next();
  if (!before || response.status >= 300) return response;
  const after = collections(engine).repos.get(before.id);
  if (after && after.full_name !== before.full_name) {
    renamesOf(engine).insert({ old_name: String(before.full_name).toLowerCase(), repo_id: before.id });
  }
  return response;
}
