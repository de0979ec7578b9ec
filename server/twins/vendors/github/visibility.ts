/**
 * Private repositories as GitHub hides them. The engine answers 401 to an anonymous read of a private
 * repository and 403 to a user who cannot see it, which tells a stranger the repository exists; GitHub
 * answers 404 to both. Our tarball extension also read on the owner's behalf when nobody signed in.
 * So every `/repos/{owner}/{repo}/...` request and every codeload download passes this gate first.
 */
import { randomBytes } from 'node:crypto';
import type { Engine, EngineRecord, EngineTokenUser } from '../../engine/emulate.ts';
import { findFolded } from '../../engine/folded-index.ts';
import { secretEquals } from '../../runtime/secrets.ts';

const REPO_PATH = /^\/repos\/([^/]+)\/([^/]+)(?:\/|$)/;
const CODELOAD_PATH = /^\/_codeload\/([^/]+)\/([^/]+)\//;
/** GitHub's codeload links for private repositories carry a token valid for minutes. */
const CODELOAD_TOKEN_TTL_MS = 5 * 60_000;

interface Installation {
  accountId: number;
  accountType: string;
  repositorySelection: string;
  repositoryIds: number[];
}

interface Caller extends EngineTokenUser {
  installation?: Installation;
}

const codeloadTokens = new WeakMap<Engine, Map<string, { repo: string; expiresAt: number }>>();

function tokensOf(engine: Engine): Map<string, { repo: string; expiresAt: number }> {
  let tokens = codeloadTokens.get(engine);
  if (!tokens) codeloadTokens.set(engine, (tokens = new Map()));
  return tokens;
}

function findRepo(engine: Engine, owner: string, name: string): EngineRecord | undefined {
  let fullName: string;
  try {
    fullName = `${decodeURIComponent(owner)}/${decodeURIComponent(name)}`;
  } catch {
    // A malformed escape (`%zz`) names no repository; the engine answers such paths itself (404).
    return undefined;
  }
  // Every repository-path request comes through here: an index, not a scan of every repository.
  return findFolded(
    engine.store.collection('github.repos', ['owner_id', 'full_name']),
    'full_name',
    fullName,
  );
}

/** The engine's own rule (owner, org member, collaborator, or an installation covering it), for private repos. */
function canRead(engine: Engine, caller: Caller | undefined, repo: EngineRecord): boolean {
  if (!repo.private) return true;
  if (!caller) return false;
  const inst = caller.installation;
  if (inst) {
    if (repo.owner_id !== inst.accountId || repo.owner_type !== inst.accountType) return false;
    return inst.repositorySelection === 'all' || inst.repositoryIds.includes(repo.id);
  }
  const user = engine.store.collection('github.users', ['login']).findOneBy('login', caller.login);
  if (!user) return false;
  if (repo.owner_type === 'User' && repo.owner_id === user.id) return true;
  if (repo.owner_type === 'Organization') {
    const teams = engine.store.collection('github.teams', ['org_id', 'slug']).findBy('org_id', repo.owner_id);
    const members = engine.store.collection('github.team_members', ['team_id', 'user_id']);
    if (teams.some((team) => members.findBy('team_id', team.id).some((m) => m.user_id === user.id)))
      return true;
  }
  return engine.store
    .collection('github.collaborators', ['repo_id', 'user_id'])
    .findBy('repo_id', repo.id)
    .some((c) => c.user_id === user.id);
}

/**
 * True when the request must be answered 404 because it names a private repository its caller cannot
 * read. `token` is the verified API token presented (undefined: anonymous); App JWTs are not gated
 * (the App reads `/repos/{o}/{r}/installation` with one, and the engine refuses them content anyway).
 */
export function hiddenFrom(engine: Engine, url: URL, token: string | undefined): boolean {
  const codeload = CODELOAD_PATH.exec(url.pathname);
  const match = codeload ?? REPO_PATH.exec(url.pathname);
  if (!match) return false;
  const repo = findRepo(engine, match[1]!, match[2]!);
  if (!repo?.private) return false;
  if (codeload) {
    const presented = url.searchParams.get('token');
    const grant = presented ? tokensOf(engine).get(presented) : undefined;
    if (grant && grant.expiresAt > Date.now() && secretEquals(grant.repo, String(repo.full_name)))
      return false;
  }
  const caller = token === undefined ? undefined : (engine.tokenMap.get(token) as Caller | undefined);
  return !canRead(engine, caller, repo);
}

/** The query a codeload URL of `owner/name` needs: a short-lived token when the repository is private. */
export function codeloadQuery(engine: Engine, owner: string, name: string): string {
  const repo = findRepo(engine, owner, name);
  if (!repo?.private) return '';
  const tokens = tokensOf(engine);
  const now = Date.now();
  for (const [token, grant] of tokens) if (grant.expiresAt <= now) tokens.delete(token);
  const token = randomBytes(20).toString('hex');
  tokens.set(token, { repo: String(repo.full_name), expiresAt: now + CODELOAD_TOKEN_TTL_MS });
  return `?token=${token}`;
}
