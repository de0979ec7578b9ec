/**
 * Commit statuses, which the engine lacks: `POST /repos/{o}/{r}/statuses/{sha}`, the list of a ref's
 * statuses (newest first) and its combined status (the latest of each context), as GitHub answers them,
 * with a `status` webhook for each one created. Behind the engine's auth, before its own routes.
 */
import type { Engine, EngineContext, EngineRecord } from '../../engine/emulate.ts';
import type { EngineCall } from './repo-files.ts';

interface CommitStatus extends EngineRecord {
  repo_full_name: string;
  sha: string;
  state: string;
  context: string;
  description: string | null;
  target_url: string | null;
  creator: Record<string, unknown>;
}

const STATES = ['error', 'failure', 'pending', 'success'];

function githubError(c: EngineContext, status: number, message: string): Response {
  return c.json(
    { message, documentation_url: 'https://docs.github.com/rest', status: String(status) },
    status,
  );
}

/** GitHub's rule: any error or failure fails the combination; no status, or any pending, is pending. */
function combinedState(latest: CommitStatus[]): string {
  if (latest.some((s) => s.state === 'error' || s.state === 'failure')) return 'failure';
  if (!latest.length || latest.some((s) => s.state === 'pending')) return 'pending';
  return 'success';
}

export function registerCommitStatuses(engine: Engine, baseUrl: string, call: EngineCall): void {
  // Priority routes: the engine's `commits/:ref{.+}` would otherwise take `commits/{ref}/status(es)`.
  const { priority: app, store } = engine;
  const statuses = store.collection<CommitStatus>('twinbox.commit_statuses', ['repo_full_name', 'sha']);

  /** The caller, the repository it can see, and the commit `ref` names in it (or the error to answer). */
  async function resolve(c: EngineContext, ref: string) {
    const user = c.get('authUser') as { login: string } | undefined;
    if (!user) return { error: githubError(c, 401, 'Requires authentication') };
    const path = `/repos/${encodeURIComponent(c.req.param('owner'))}/${encodeURIComponent(c.req.param('repo'))}`;
    const repo = await call(user.login, 'GET', path);
    if (repo.status !== 200) return { error: githubError(c, 404, 'Not Found') };
    const commit = await call(user.login, 'GET', `${path}/commits/${encodeURIComponent(ref)}`);
    return { user, repo: repo.data, commit: commit.status === 200 ? commit.data : undefined };
  }

  const format = (s: CommitStatus) => ({
    url: `${baseUrl}/repos/${s.repo_full_name}/statuses/${s.sha}`,
    avatar_url: (s.creator.avatar_url as string | undefined) ?? null,
    id: s.id,
    node_id: Buffer.from(`StatusContext${s.id}`).toString('base64'),
    state: s.state,
    description: s.description,
    target_url: s.target_url,
    context: s.context,
    created_at: s.created_at,
    updated_at: s.updated_at,
    creator: s.creator,
  });

  const newestFirst = (fullName: string, sha: string) =>
    statuses
      .findBy('repo_full_name', fullName)
      .filter((s) => s.sha === sha)
      .sort((a, b) => b.id - a.id);

  const page = (c: EngineContext) => {
    const perPage = Math.min(Math.max(Number(c.req.query('per_page') ?? 30) || 30, 1), 100);
    const number = Math.max(Number(c.req.query('page') ?? 1) || 1, 1);
    return <T>(list: T[]) => list.slice((number - 1) * perPage, number * perPage);
  };

  app.post('/repos/:owner/:repo/statuses/:sha', async (c) => {
    const sha = c.req.param('sha');
    const ctx = await resolve(c, sha);
    if ('error' in ctx) return ctx.error as Response;
    if (!ctx.commit || !String(ctx.commit.sha).startsWith(sha.toLowerCase())) {
      return githubError(c, 422, `No commit found for SHA: ${sha}`);
    }
    const body = await c.req.json<Record<string, unknown>>().catch(() => undefined);
    if (!body || typeof body.state !== 'string' || !STATES.includes(body.state)) {
      return githubError(c, 422, `Validation Failed: state must be one of ${STATES.join(', ')}`);
    }
    const text = (v: unknown) => (typeof v === 'string' && v !== '' ? v : null);
    const creator = (await call(ctx.user.login, 'GET', `/users/${encodeURIComponent(ctx.user.login)}`)).data;
    const created = statuses.insert({
      repo_full_name: ctx.repo.full_name,
      sha: ctx.commit.sha,
      state: body.state,
      context: text(body.context) ?? 'default',
      description: text(body.description),
      target_url: text(body.target_url),
      creator: creator && typeof creator === 'object' ? creator : { login: ctx.user.login },
    });
    const formatted = format(created);
    const branches = (await call(ctx.user.login, 'GET', `/repos/${ctx.repo.full_name}/branches`)).data;
    void engine.webhooks.dispatch(
      'status',
      undefined,
      {
        id: created.id,
        sha: created.sha,
        name: ctx.repo.full_name,
        target_url: created.target_url,
        context: created.context,
        description: created.description,
        state: created.state,
        commit: ctx.commit,
        branches: Array.isArray(branches)
          ? branches.filter((b: { commit: { sha: string } }) => b.commit.sha === created.sha)
          : [],
        created_at: created.created_at,
        updated_at: created.updated_at,
        repository: ctx.repo,
        sender: formatted.creator,
      },
      ctx.repo.owner.login,
      ctx.repo.name,
    );
    return c.json(formatted, 201, { location: formatted.url });
  });

  const list = async (c: EngineContext) => {
    const ctx = await resolve(c, c.req.param('ref'));
    if ('error' in ctx) return ctx.error as Response;
    if (!ctx.commit) return githubError(c, 404, 'Not Found');
    return c.json(page(c)(newestFirst(ctx.repo.full_name, ctx.commit.sha)).map(format));
  };
  app.get('/repos/:owner/:repo/commits/:ref{.+}/statuses', list);
  // GitHub keeps the older path too.
  app.get('/repos/:owner/:repo/statuses/:ref{.+}', list);

  app.get('/repos/:owner/:repo/commits/:ref{.+}/status', async (c) => {
    const ctx = await resolve(c, c.req.param('ref'));
    if ('error' in ctx) return ctx.error as Response;
    if (!ctx.commit) return githubError(c, 404, 'Not Found');
    const latest: CommitStatus[] = [];
    for (const s of newestFirst(ctx.repo.full_name, ctx.commit.sha)) {
      if (!latest.some((l) => l.context === s.context)) latest.push(s);
    }
    const commitUrl = `${baseUrl}/repos/${ctx.repo.full_name}/commits/${ctx.commit.sha}`;
    return c.json({
      state: combinedState(latest),
      statuses: page(c)(latest).map((s) => {
        const { creator: _creator, ...simple } = format(s);
        return { ...simple, required: false };
      }),
      sha: ctx.commit.sha,
      total_count: latest.length,
      repository: ctx.repo,
      commit_url: commitUrl,
      url: `${commitUrl}/status`,
    });
  });
}
