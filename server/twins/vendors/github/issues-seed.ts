/**
 * Seeds a repository's issues and pull requests by calling the engine's own API (as the repository
 * owner, or the comment's author), so every SDK call sees them exactly as if a user had made them:
 * issues.list, issues.listComments, pulls.list, pulls.listFiles, pulls.listReviewComments, ...
 */
import { TwinInputError } from '../../contract.ts';
import { pushFiles, type EngineCall } from './repo-files.ts';
import type { GitHubCommentSeed, GitHubRepoSeed } from './seed.ts';

const enc = (s: string) => s.split('/').map(encodeURIComponent).join('/');

/** Fails the seed with the field path of the object that could not be created. */
async function must(res: Promise<{ status: number; data: any }>, path: string, what: string) {
  const r = await res;
  if (r.status >= 300) {
    const reason = typeof r.data?.message === 'string' ? r.data.message : `status ${r.status}`;
    throw new TwinInputError(400, `github seed: "${path}" ${what}: ${reason}`);
  }
  return r.data;
}

export async function applyIssuesAndPulls(
  call: EngineCall,
  repo: GitHubRepoSeed,
  path: string,
  hooks: { ensureUser(login: string): void; pullCreated(number: number): Promise<void> },
): Promise<void> {
  if (!repo.issues?.length && !repo.pulls?.length) return;
  const owner = repo.owner;
  const base = `/repos/${encodeURIComponent(owner)}/${encodeURIComponent(repo.name)}`;
  const as = (user: string | undefined) => {
    if (user) hooks.ensureUser(user);
    return user ?? owner;
  };

  async function comment(number: number, c: GitHubCommentSeed, at: string) {
    await must(
      call(as(c.user), 'POST', `${base}/issues/${number}/comments`, { body: c.body }),
      at,
      'cannot be created',
    );
  }

  for (const [i, issue] of (repo.issues ?? []).entries()) {
    const at = `${path}.issues[${i}]`;
    const created = await must(
      call(owner, 'POST', `${base}/issues`, {
        title: issue.title,
        ...(issue.body !== undefined ? { body: issue.body } : {}),
        ...(issue.labels?.length ? { labels: issue.labels } : {}),
      }),
      at,
      'cannot be created',
    );
    for (const [k, c] of (issue.comments ?? []).entries())
      await comment(created.number, c, `${at}.comments[${k}]`);
    if (issue.state === 'closed') {
      await must(
        call(owner, 'PATCH', `${base}/issues/${created.number}`, {
          state: 'closed',
          state_reason: 'completed',
        }),
        at,
        'cannot be closed',
      );
    }
  }

  if (!repo.pulls?.length) return;
  const info = await must(call(owner, 'GET', base), path, 'repository not found');
  const defaultBranch = info.default_branch as string;
  const branchSha = async (branch: string) => {
    const r = await call(owner, 'GET', `${base}/git/ref/heads/${enc(branch)}`);
    return r.status === 200 ? (r.data.object.sha as string) : undefined;
  };

  for (const [j, pull] of repo.pulls.entries()) {
    const at = `${path}.pulls[${j}]`;
    const baseBranch = pull.base ?? defaultBranch;
    if (pull.head === baseBranch) {
      throw new TwinInputError(
        400,
        `github seed: "${at}.head" must differ from the base branch "${baseBranch}"`,
      );
    }
    if (!(await branchSha(baseBranch))) {
      throw new TwinInputError(400, `github seed: "${at}.base" branch "${baseBranch}" does not exist`);
    }
    if (pull.files && Object.keys(pull.files).length) {
      await pushFiles(call, owner, {
        owner,
        repo: repo.name,
        branch: pull.head,
        files: pull.files,
        message: pull.title,
      });
    } else if (!(await branchSha(pull.head))) {
      const from = await branchSha(defaultBranch);
      await must(
        call(owner, 'POST', `${base}/git/refs`, { ref: `refs/heads/${pull.head}`, sha: from }),
        `${at}.head`,
        'cannot be created',
      );
    }
    const created = await must(
      call(owner, 'POST', `${base}/pulls`, {
        title: pull.title,
        head: pull.head,
        base: baseBranch,
        ...(pull.body !== undefined ? { body: pull.body } : {}),
      }),
      at,
      'cannot be created',
    );
    await hooks.pullCreated(created.number);
    for (const [k, c] of (pull.comments ?? []).entries())
      await comment(created.number, c, `${at}.comments[${k}]`);
    for (const [k, c] of (pull.review_comments ?? []).entries()) {
      await must(
        call(as(c.user), 'POST', `${base}/pulls/${created.number}/comments`, {
          body: c.body,
          path: c.path,
          commit_id: created.head.sha,
          ...(c.line !== undefined ? { line: c.line, side: 'RIGHT' } : { subject_type: 'file' }),
        }),
        `${at}.review_comments[${k}]`,
        'cannot be created',
      );
    }
    if (pull.state === 'closed') {
      await must(
        call(owner, 'PATCH', `${base}/pulls/${created.number}`, { state: 'closed' }),
        at,
        'cannot be closed',
      );
    }
  }
}
