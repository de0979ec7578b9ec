/**
 * GitHub API routes the engine lacks, registered on the engine's app so its auth middleware applies:
 * deployments and deployment statuses, commit statuses (statuses.ts), revoking an installation token, and
 * repository tarballs (302 to a codeload-style URL, as GitHub does).
 */
import type { Engine, EngineContext, EngineRecord } from '../../engine/emulate.ts';
import type { EngineCall } from './repo-files.ts';
import { readTree } from './repo-files.ts';
import { presentedToken } from '../../runtime/secrets.ts';
import { registerCommitStatuses } from './statuses.ts';
import { gzipTar } from './tar.ts';
import { codeloadQuery } from './visibility.ts';

interface Deployment extends EngineRecord {
  repo_full_name: string;
  sha: string;
  ref: string;
  task: string;
  payload: unknown;
  environment: string;
  original_environment: string;
  description: string | null;
  creator: unknown;
  transient_environment: boolean;
  production_environment: boolean;
}

interface DeploymentStatus extends EngineRecord {
  deployment_id: number;
  state: string;
  description: string;
  environment: string;
  target_url: string;
  log_url: string;
  environment_url: string;
  creator: unknown;
}

interface Installation {
  accountId: number;
  repositoryIds: number[];
  repositorySelection: string;
}

const STATES = ['error', 'failure', 'inactive', 'in_progress', 'queued', 'pending', 'success'];

function githubError(c: EngineContext, status: number, message: string): Response {
  return c.json(
    { message, documentation_url: 'https://docs.github.com/rest', status: String(status) },
    status,
  );
}

export function registerExtensions(engine: Engine, baseUrl: string, call: EngineCall): void {
  const { app, store } = engine;
  const deployments = store.collection<Deployment>('twinbox.deployments', ['repo_full_name']);
  const statuses = store.collection<DeploymentStatus>('twinbox.deployment_statuses', ['deployment_id']);

  const authUser = (c: EngineContext) => c.get('authUser') as { login: string } | undefined;
  registerCommitStatuses(engine, baseUrl, call);

  async function context(c: EngineContext) {
    const user = authUser(c);
    if (!user) return { error: githubError(c, 401, 'Requires authentication') };
    const owner = c.req.param('owner');
    const repoName = c.req.param('repo');
    const repo = await call(
      user.login,
      'GET',
      `/repos/${encodeURIComponent(owner)}/${encodeURIComponent(repoName)}`,
    );
    if (repo.status !== 200) return { error: githubError(c, 404, 'Not Found') };
    const sender = (await call(user.login, 'GET', `/users/${encodeURIComponent(user.login)}`)).data;
    return { user, repo: repo.data, sender, fullName: repo.data.full_name as string };
  }

  const deploymentUrl = (d: Deployment) => `${baseUrl}/repos/${d.repo_full_name}/deployments/${d.id}`;
  const formatDeployment = (d: Deployment) => ({
    url: deploymentUrl(d),
    id: d.id,
    node_id: Buffer.from(`Deployment${d.id}`).toString('base64'),
    sha: d.sha,
    ref: d.ref,
    task: d.task,
    payload: d.payload,
    original_environment: d.original_environment,
    environment: d.environment,
    description: d.description,
    creator: d.creator,
    created_at: d.created_at,
    updated_at: d.updated_at,
    statuses_url: `${deploymentUrl(d)}/statuses`,
    repository_url: `${baseUrl}/repos/${d.repo_full_name}`,
    transient_environment: d.transient_environment,
    production_environment: d.production_environment,
  });
  const formatStatus = (d: Deployment, s: DeploymentStatus) => ({
    url: `${deploymentUrl(d)}/statuses/${s.id}`,
    id: s.id,
    node_id: Buffer.from(`DeploymentStatus${s.id}`).toString('base64'),
    state: s.state,
    creator: s.creator,
    description: s.description,
    environment: s.environment,
    target_url: s.target_url,
    log_url: s.log_url,
    environment_url: s.environment_url,
    created_at: s.created_at,
    updated_at: s.updated_at,
    deployment_url: deploymentUrl(d),
    repository_url: `${baseUrl}/repos/${d.repo_full_name}`,
  });

  const findDeployment = (fullName: string, id: string) => {
    const d = deployments.get(Number(id));
    return d && d.repo_full_name === fullName ? d : undefined;
  };

  app.post('/repos/:owner/:repo/deployments', async (c) => {
    const ctx = await context(c);
    if ('error' in ctx) return ctx.error as Response;
    const body = await c.req.json<Record<string, unknown>>().catch(() => undefined);
    if (!body || typeof body.ref !== 'string' || body.ref === '')
      return githubError(c, 422, 'Invalid request: "ref" is required');
    const commit = await call(
      ctx.user.login,
      'GET',
      `/repos/${ctx.fullName}/commits/${encodeURIComponent(body.ref)}`,
    );
    if (commit.status !== 200) return githubError(c, 422, `No ref found for: ${body.ref}`);
    const environment = typeof body.environment === 'string' ? body.environment : 'production';
    const d = deployments.insert({
      repo_full_name: ctx.fullName,
      sha: commit.data.sha,
      ref: body.ref,
      task: typeof body.task === 'string' ? body.task : 'deploy',
      payload: body.payload ?? {},
      environment,
      original_environment: environment,
      description: typeof body.description === 'string' ? body.description : null,
      creator: ctx.sender,
      transient_environment: body.transient_environment === true,
      production_environment:
        typeof body.production_environment === 'boolean'
          ? body.production_environment
          : environment === 'production',
    });
    const formatted = formatDeployment(d);
    void engine.webhooks.dispatch(
      'deployment',
      'created',
      { action: 'created', deployment: formatted, repository: ctx.repo, sender: ctx.sender },
      ctx.repo.owner.login,
      ctx.repo.name,
    );
    return c.json(formatted, 201);
  });

  app.get('/repos/:owner/:repo/deployments', async (c) => {
    const ctx = await context(c);
    if ('error' in ctx) return ctx.error as Response;
    const filters = ['sha', 'ref', 'task', 'environment'] as const;
    const list = deployments
      .findBy('repo_full_name', ctx.fullName)
      .filter((d) => filters.every((f) => c.req.query(f) === undefined || d[f] === c.req.query(f)))
      .sort((a, b) => b.id - a.id);
    const perPage = Math.min(Number(c.req.query('per_page') ?? 30) || 30, 100);
    const page = Math.max(Number(c.req.query('page') ?? 1) || 1, 1);
    return c.json(list.slice((page - 1) * perPage, page * perPage).map(formatDeployment));
  });

  app.get('/repos/:owner/:repo/deployments/:id', async (c) => {
    const ctx = await context(c);
    if ('error' in ctx) return ctx.error as Response;
    const d = findDeployment(ctx.fullName, c.req.param('id'));
    return d ? c.json(formatDeployment(d)) : githubError(c, 404, 'Not Found');
  });

  app.delete('/repos/:owner/:repo/deployments/:id', async (c) => {
    const ctx = await context(c);
    if ('error' in ctx) return ctx.error as Response;
    const d = findDeployment(ctx.fullName, c.req.param('id'));
    if (!d) return githubError(c, 404, 'Not Found');
    for (const s of statuses.findBy('deployment_id', d.id)) statuses.delete(s.id);
    deployments.delete(d.id);
    return new Response(null, { status: 204 });
  });

  app.post('/repos/:owner/:repo/deployments/:id/statuses', async (c) => {
    const ctx = await context(c);
    if ('error' in ctx) return ctx.error as Response;
    const d = findDeployment(ctx.fullName, c.req.param('id'));
    if (!d) return githubError(c, 404, 'Not Found');
    const body = await c.req.json<Record<string, unknown>>().catch(() => undefined);
    if (!body || typeof body.state !== 'string' || !STATES.includes(body.state)) {
      return githubError(c, 422, `Invalid request: "state" must be one of ${STATES.join(', ')}`);
    }
    const str = (v: unknown) => (typeof v === 'string' ? v : '');
    const environment = str(body.environment) || d.environment;
    const s = statuses.insert({
      deployment_id: d.id,
      state: body.state,
      description: str(body.description),
      environment,
      target_url: str(body.target_url) || str(body.log_url),
      log_url: str(body.log_url) || str(body.target_url),
      environment_url: str(body.environment_url),
      creator: ctx.sender,
    });
    if (environment !== d.environment) deployments.update(d.id, { environment });
    // GitHub marks earlier successful deployments of the environment inactive (auto_inactive, default true).
    if (body.state === 'success' && body.auto_inactive !== false) {
      for (const other of deployments.findBy('repo_full_name', ctx.fullName)) {
        if (other.id === d.id || other.environment !== environment) continue;
        const last = statuses.findBy('deployment_id', other.id).at(-1);
        if (last?.state === 'success') {
          statuses.insert({ ...last, id: undefined, state: 'inactive', deployment_id: other.id } as never);
        }
      }
    }
    const formatted = formatStatus(deployments.get(d.id)!, s);
    void engine.webhooks.dispatch(
      'deployment_status',
      'created',
      {
        action: 'created',
        deployment_status: formatted,
        deployment: formatDeployment(deployments.get(d.id)!),
        repository: ctx.repo,
        sender: ctx.sender,
      },
      ctx.repo.owner.login,
      ctx.repo.name,
    );
    return c.json(formatted, 201);
  });

  app.get('/repos/:owner/:repo/deployments/:id/statuses', async (c) => {
    const ctx = await context(c);
    if ('error' in ctx) return ctx.error as Response;
    const d = findDeployment(ctx.fullName, c.req.param('id'));
    if (!d) return githubError(c, 404, 'Not Found');
    const list = statuses.findBy('deployment_id', d.id).sort((a, b) => b.id - a.id);
    return c.json(list.map((s) => formatStatus(d, s)));
  });

  app.get('/repos/:owner/:repo/deployments/:id/statuses/:status_id', async (c) => {
    const ctx = await context(c);
    if ('error' in ctx) return ctx.error as Response;
    const d = findDeployment(ctx.fullName, c.req.param('id'));
    const s = statuses.get(Number(c.req.param('status_id')));
    if (!d || !s || s.deployment_id !== d.id) return githubError(c, 404, 'Not Found');
    return c.json(formatStatus(d, s));
  });

  // Installation tokens may list their repositories (Probot and Actions do this); the engine lacks the route.
  app.get('/installation/repositories', async (c) => {
    const inst = (c.get('authUser') as { installation?: Installation } | undefined)?.installation;
    if (!inst) return githubError(c, 403, 'This endpoint requires an installation access token');
    const repos = store.collection('github.repos', ['owner_id', 'full_name']).all();
    const chosen = repos.filter((r) =>
      inst.repositorySelection === 'selected'
        ? inst.repositoryIds.includes(r.id)
        : r.owner_id === inst.accountId,
    );
    const repositories = [];
    for (const r of chosen) {
      const res = await call(String(r.full_name).split('/')[0]!, 'GET', `/repos/${r.full_name as string}`);
      if (res.status === 200) repositories.push(res.data);
    }
    return c.json({
      total_count: repositories.length,
      repository_selection: inst.repositorySelection,
      repositories,
    });
  });

  // An app revokes an installation token it no longer needs; any later use of it is GitHub's 401.
  app.delete('/installation/token', async (c) => {
    const inst = (c.get('authUser') as { installation?: Installation } | undefined)?.installation;
    const token = presentedToken(c.req.header('authorization'))?.token;
    if (!inst || !token) return githubError(c, 403, 'This endpoint requires an installation access token');
    engine.tokenMap.delete(token);
    return new Response(null, { status: 204 });
  });

  // Tarballs: like GitHub, the API answers 302 to a codeload URL pinned to the resolved commit.
  const tarball = async (c: EngineContext) => {
    const user = authUser(c);
    const owner = c.req.param('owner');
    const repo = c.req.param('repo');
    const login = user?.login ?? owner;
    const ref = c.req.param('ref') || undefined;
    const path = `/repos/${encodeURIComponent(owner)}/${encodeURIComponent(repo)}`;
    const commit = ref
      ? await call(login, 'GET', `${path}/commits/${encodeURIComponent(ref)}`)
      : await call(login, 'GET', path).then(async (r) =>
          r.status === 200
            ? call(login, 'GET', `${path}/commits/${encodeURIComponent(r.data.default_branch)}`)
            : r,
        );
    if (commit.status !== 200) return githubError(c, 404, 'Not Found');
    const location = `${baseUrl}/_codeload/${encodeURIComponent(owner)}/${encodeURIComponent(repo)}/legacy.tar.gz/${commit.data.sha}${codeloadQuery(engine, owner, repo)}`;
    return new Response(null, { status: 302, headers: { location } });
  };
  app.get('/repos/:owner/:repo/tarball/:ref{.+}', tarball);
  app.get('/repos/:owner/:repo/tarball', tarball);

  app.get('/_codeload/:owner/:repo/legacy.tar.gz/:sha', async (c) => {
    const owner = c.req.param('owner');
    const repo = c.req.param('repo');
    const login = (authUser(c)?.login ?? owner) as string;
    const tree = await readTree(call, login, owner, repo, c.req.param('sha'));
    if (!tree) return githubError(c, 404, 'Not Found');
    const body = gzipTar(`${owner}-${repo}-${tree.sha.slice(0, 7)}`, tree.files);
    return new Response(body, {
      status: 200,
      headers: {
        'content-type': 'application/x-gzip',
        'content-disposition': `attachment; filename=${owner}-${repo}-${tree.sha.slice(0, 7)}.tar.gz`,
      },
    });
  });
}

const PULL_FILES = /^\/repos\/([^/]+)\/([^/]+)\/pulls\/(\d+)\/files$/;

/**
 * `GET /repos/{o}/{r}/pulls/{n}/files`: the engine answers with placeholder names (`file1.ts`, ...), so we
 * answer with the real diff between the pull request's base and head, which the engine's compare API
 * computes from its git trees. Both calls go through the engine with the caller's own credentials, so its
 * auth and permission checks apply. Returns undefined for every other request.
 */
export async function handlePullFiles(engine: Engine, request: Request): Promise<Response | undefined> {
  if (request.method !== 'GET') return undefined;
  const url = new URL(request.url);
  const m = PULL_FILES.exec(url.pathname);
  if (!m) return undefined;
  const forward = (path: string) =>
    engine.app.fetch(new Request(new URL(path, url), { method: 'GET', headers: request.headers }));
  const pull = await forward(`/repos/${m[1]}/${m[2]}/pulls/${m[3]}`);
  if (pull.status !== 200) return pull;
  const pr = (await pull.json()) as { base: { sha: string }; head: { sha: string } };
  const compare = await forward(`/repos/${m[1]}/${m[2]}/compare/${pr.base.sha}...${pr.head.sha}`);
  if (compare.status !== 200) return compare;
  const files = ((await compare.json()) as { files?: unknown[] }).files ?? [];
  const perPage = Math.min(Math.max(Number(url.searchParams.get('per_page') ?? 30) || 30, 1), 100);
  const page = Math.max(Number(url.searchParams.get('page') ?? 1) || 1, 1);
  return new Response(JSON.stringify(files.slice((page - 1) * perPage, page * perPage)), {
    status: 200,
    headers: { 'content-type': 'application/json; charset=utf-8' },
  });
}

/** Sets a pull request's changed_files/additions/deletions from its real diff (the engine leaves them 0). */
export async function refreshPullStats(
  engine: Engine,
  call: EngineCall,
  owner: string,
  repo: string,
  number: number,
): Promise<void> {
  const base = `/repos/${encodeURIComponent(owner)}/${encodeURIComponent(repo)}`;
  const pull = await call(owner, 'GET', `${base}/pulls/${number}`);
  if (pull.status !== 200) return;
  const compare = await call(owner, 'GET', `${base}/compare/${pull.data.base.sha}...${pull.data.head.sha}`);
  if (compare.status !== 200) return;
  const files = (compare.data.files ?? []) as Array<{ additions: number; deletions: number }>;
  const prs = engine.store.collection('github.pull_requests', ['repo_id', 'number']);
  const record = prs.findBy('repo_id', pull.data.base.repo.id).find((p) => p.number === number);
  if (!record) return;
  prs.update(record.id, {
    changed_files: files.length,
    additions: files.reduce((n, f) => n + (f.additions ?? 0), 0),
    deletions: files.reduce((n, f) => n + (f.deletions ?? 0), 0),
  });
}

/**
 * After a push to `branch` of `owner/repo`: like GitHub, every open pull request whose head is that branch
 * moves its head to `sha` and a `pull_request` `synchronize` event is sent (the engine does neither).
 */
export async function synchronizePulls(
  engine: Engine,
  call: EngineCall,
  owner: string,
  repo: string,
  branch: string,
  sha: string,
): Promise<void> {
  const repos = engine.store.collection('github.repos', ['owner_id', 'full_name']);
  const headRepo = repos
    .all()
    .find((r) => String(r.full_name).toLowerCase() === `${owner}/${repo}`.toLowerCase());
  if (!headRepo) return;
  const prs = engine.store.collection('github.pull_requests', ['repo_id', 'number']);
  const moved = prs
    .all()
    .filter(
      (p) =>
        p.state === 'open' && p.head_repo_id === headRepo.id && p.head_ref === branch && p.head_sha !== sha,
    );
  for (const p of moved) {
    prs.update(p.id, { head_sha: sha });
    const base = repos.get(p.repo_id as number);
    if (!base) continue;
    const [baseOwner, baseName] = String(base.full_name).split('/') as [string, string];
    await refreshPullStats(engine, call, baseOwner, baseName, p.number as number);
    const pull = await call(
      baseOwner,
      'GET',
      `/repos/${base.full_name as string}/pulls/${p.number as number}`,
    );
    const repository = await call(baseOwner, 'GET', `/repos/${base.full_name as string}`);
    const sender = await call(owner, 'GET', `/users/${encodeURIComponent(owner)}`);
    void engine.webhooks.dispatch(
      'pull_request',
      'synchronize',
      {
        action: 'synchronize',
        number: p.number,
        before: p.head_sha,
        after: sha,
        pull_request: pull.data,
        repository: repository.data,
        sender: sender.data,
      },
      baseOwner,
      baseName,
    );
  }
}
