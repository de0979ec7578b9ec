import { TwinInputError } from '../../contract.ts';
import type { FileContent } from './seed.ts';
import type { TarFile } from './tar.ts';

/** Calls the engine's own GitHub API as a given user, so repository writes follow the engine's git model. */
export type EngineCall = (
  login: string,
  method: string,
  path: string,
  body?: unknown,
) => Promise<{ status: number; data: any }>;

export interface PushFiles {
  owner: string;
  repo: string;
  branch?: string;
  files: Record<string, FileContent>;
  message?: string;
  /** Start from an empty tree instead of the branch's current files. */
  replace?: boolean;
}

const enc = (s: string) => s.split('/').map(encodeURIComponent).join('/');

async function must(call: ReturnType<EngineCall>, what: string) {
  const res = await call;
  if (res.status >= 300) {
    throw new TwinInputError(res.status === 404 ? 404 : 400, `${what}: ${res.data?.message ?? res.status}`);
  }
  return res.data;
}

/** Commits files onto a branch (created from the default branch when missing); returns the commit sha. */
export async function pushFiles(
  call: EngineCall,
  login: string,
  p: PushFiles,
): Promise<{ branch: string; commit_sha: string }> {
  const base = `/repos/${encodeURIComponent(p.owner)}/${encodeURIComponent(p.repo)}`;
  const repo = await must(call(login, 'GET', base), `repository ${p.owner}/${p.repo}`);
  const branch = p.branch ?? (repo.default_branch as string);
  const existing = await call(login, 'GET', `${base}/git/ref/heads/${enc(branch)}`);
  let parent: string | undefined;
  if (existing.status === 200) parent = existing.data.object.sha;
  else {
    const def = await call(login, 'GET', `${base}/git/ref/heads/${enc(repo.default_branch)}`);
    if (def.status === 200) parent = def.data.object.sha;
  }
  let baseTree: string | undefined;
  if (parent && !p.replace) {
    baseTree = (await must(call(login, 'GET', `${base}/git/commits/${parent}`), 'parent commit')).tree.sha;
  }
  const tree = [];
  for (const [path, content] of Object.entries(p.files)) {
    if (content === null) {
      tree.push({ path, mode: '100644', type: 'blob', sha: null });
      continue;
    }
    const b64 =
      typeof content === 'string' ? Buffer.from(content, 'utf8').toString('base64') : content.base64;
    const blob = await must(
      call(login, 'POST', `${base}/git/blobs`, { content: b64, encoding: 'base64' }),
      `blob ${path}`,
    );
    tree.push({ path, mode: '100644', type: 'blob', sha: blob.sha });
  }
  const newTree = await must(
    call(login, 'POST', `${base}/git/trees`, { ...(baseTree ? { base_tree: baseTree } : {}), tree }),
    'tree',
  );
  const commit = await must(
    call(login, 'POST', `${base}/git/commits`, {
      message: p.message ?? 'Update files',
      tree: newTree.sha,
      parents: parent ? [parent] : [],
    }),
    'commit',
  );
  if (existing.status === 200) {
    await must(
      call(login, 'PATCH', `${base}/git/refs/heads/${enc(branch)}`, { sha: commit.sha, force: true }),
      'ref update',
    );
  } else {
    await must(
      call(login, 'POST', `${base}/git/refs`, { ref: `refs/heads/${branch}`, sha: commit.sha }),
      'ref create',
    );
  }
  return { branch, commit_sha: commit.sha };
}

/** Resolves a ref (branch, tag or sha; default branch when omitted) and reads every file of its tree. */
export async function readTree(
  call: EngineCall,
  login: string,
  owner: string,
  repo: string,
  ref: string | undefined,
): Promise<{ sha: string; files: TarFile[] } | undefined> {
  const base = `/repos/${encodeURIComponent(owner)}/${encodeURIComponent(repo)}`;
  let wanted = ref;
  if (!wanted) {
    const r = await call(login, 'GET', base);
    if (r.status !== 200) return undefined;
    wanted = r.data.default_branch as string;
  }
  const commit = await call(login, 'GET', `${base}/commits/${enc(wanted)}`);
  if (commit.status !== 200) return undefined;
  const tree = await call(login, 'GET', `${base}/git/trees/${commit.data.commit.tree.sha}?recursive=1`);
  if (tree.status !== 200) return undefined;
  const files: TarFile[] = [];
  for (const entry of tree.data.tree as Array<{ path: string; type: string; sha: string; mode: string }>) {
    if (entry.type !== 'blob') continue;
    const blob = await call(login, 'GET', `${base}/git/blobs/${entry.sha}`);
    if (blob.status !== 200) continue;
    files.push({
      path: entry.path,
      content: Buffer.from(blob.data.content as string, 'base64'),
      mode: entry.mode === '100755' ? 0o755 : 0o644,
    });
  }
  return { sha: commit.data.sha as string, files };
}
