/**
 * The GitHub twin driven by clients other than the newest Node SDK (issue 23, part 3): @octokit/rest 20,
 * Debian's PyGithub (python3-github) and octokit.rb (ruby-octokit), each given only the twin's base URL and
 * a token, running a flow as an app writes it: issues created and listed page by page (Octokit's
 * paginate, PyGithub's PaginatedList and octokit.rb's auto_paginate follow `Link`), the answers' `url`
 * fields followed, a 404 caught as the library's typed error, and (Node) a webhook verified with
 * @octokit/webhooks. Run against the twin's loopback URL and through Twinbox's router at a twin set's
 * public URL. Octokit's answers are checked against GitHub's description (vendorFetch).
 */
import t, { type Test } from 'tap';
import { execFile } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { Octokit as Octokit20 } from 'octokit-rest-20';
import { Webhooks } from '@octokit/webhooks';
import '../helpers/sandbox-hosts.ts';
import { missingPart } from '../helpers/ci.ts';
import { call, createUser, type TestTwinbox, type TestUser } from '../helpers/twinbox.ts';
import { deployingTwinbox, githubToDeployFrom } from '../helpers/deploy.ts';
import { requireHost } from '../security/isolation-fixtures.ts';
import { startGitHubTwin } from '../../examples/github-twin.ts';
import { vendorFetch } from './vendor-schema.ts';

// The RequestError class of @octokit/rest 20's own tree (v5), which its calls reject with.
const { RequestError: RequestError20 } = createRequire(fileURLToPath(import.meta.resolve('octokit-rest-20')))(
  '@octokit/request-error',
) as typeof import('@octokit/request-error');

const CLIENTS = fileURLToPath(new URL('./clients/', import.meta.url));
const PYTHON = '/usr/bin/python3';
const RUBY = '/usr/bin/ruby';
const hasPyGithub = existsSync('/usr/lib/python3/dist-packages/github/__init__.py');
const hasOctokitRb =
  existsSync(RUBY) &&
  (() => {
    try {
      return readdirSync('/usr/share/rubygems-integration/all/specifications').some((f) =>
        f.startsWith('octokit-'),
      );
    } catch {
      return false;
    }
  })();

interface Target {
  GITHUB_API_URL: string;
  GITHUB_TOKEN: string;
}

/** Runs a client script with the twin's URL and token in its environment; its stdout is JSON. */
function runClient(file: string, args: string[], target: Target): Promise<any> {
  // *.localhost resolves to loopback in browsers and curl; these make Python and Ruby do the same.
  const env = {
    ...process.env,
    ...target,
    PYTHONPATH: `${CLIENTS}localhost`,
    RUBYOPT: `-r${CLIENTS}localhost/localhost.rb`,
  };
  return new Promise((resolve, reject) => {
    execFile(file, args, { env, timeout: 120_000, maxBuffer: 4 << 20 }, (error, stdout, stderr) => {
      if (error)
        reject(new Error(`${file} ${args.join(' ')} failed: ${error.message}\n${stderr.slice(-3000)}`));
      else {
        try {
          resolve(JSON.parse(stdout));
        } catch {
          reject(new Error(`${file} printed no JSON: ${stdout.slice(0, 500)}\n${stderr.slice(-2000)}`));
        }
      }
    });
  });
}

/** @octokit/rest 20 as an app of its time writes it: paginate, RequestError with status. */
async function octokit20Flow(t: Test, target: Target, repoName: string) {
  const octokit = new Octokit20({
    auth: target.GITHUB_TOKEN,
    baseUrl: target.GITHUB_API_URL,
    // Every answer checked against GitHub's description, as githubClient does for the newest Octokit.
    request: { fetch: vendorFetch('github') },
  });
  const { data: me } = await octokit.rest.users.getAuthenticated();
  const { data: repo } = await octokit.rest.repos.createForAuthenticatedUser({
    name: repoName,
    auto_init: true,
  });
  t.equal(
    repo.url,
    `${target.GITHUB_API_URL}/repos/${me.login}/${repoName}`,
    "the repository's url is where it was asked",
  );
  for (let n = 1; n <= 5; n++) {
    await octokit.rest.issues.create({ owner: me.login, repo: repoName, title: `Node issue ${n}` });
  }
  let pages = 0;
  const titles: string[] = [];
  for await (const page of octokit.paginate.iterator(octokit.rest.issues.listForRepo, {
    owner: me.login,
    repo: repoName,
    state: 'all',
    per_page: 2,
  })) {
    pages++;
    titles.push(...page.data.map((i) => i.title));
  }
  t.equal(pages, 3, 'five issues, two a page: paginate followed Link twice');
  t.same(titles.sort(), ['Node issue 1', 'Node issue 2', 'Node issue 3', 'Node issue 4', 'Node issue 5']);
  const all = await octokit.paginate(octokit.rest.issues.listLabelsForRepo, {
    owner: me.login,
    repo: repoName,
    per_page: 4,
  });
  t.equal(all.length, 9, "GitHub's default labels, over three pages");
  // Following a url field of an answer, as apps do with `octokit.request(url)`.
  const first = (await octokit.rest.issues.get({ owner: me.login, repo: repoName, issue_number: 1 })).data;
  const followed = await octokit.request(`GET ${first.url}`);
  t.equal(followed.data.title, 'Node issue 1', "the issue's url leads back to it");

  const error = await octokit.rest.repos
    .get({ owner: me.login, repo: 'no-such-repository' })
    .catch((e: unknown) => e);
  t.ok(error instanceof RequestError20, 'a RequestError of @octokit/rest 20');
  t.equal((error as InstanceType<typeof RequestError20>).status, 404);
  return { octokit, owner: me.login };
}

/** A repository webhook delivered to a server of ours, verified with @octokit/webhooks' verify. */
async function webhookFlow(t: Test, octokit: InstanceType<typeof Octokit20>, owner: string, repo: string) {
  const secret = 'octokit-20-webhook-secret';
  const webhooks = new Webhooks({ secret });
  const received: Array<{ event: string; verified: boolean; action?: string }> = [];
  let arrived: () => void = () => {};
  const done = new Promise<void>((resolve) => (arrived = resolve));
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', async () => {
      const verified = await webhooks.verify(body, String(req.headers['x-hub-signature-256']));
      const tampered = await webhooks.verify(`${body} `, String(req.headers['x-hub-signature-256']));
      received.push({
        event: String(req.headers['x-github-event']),
        verified: verified && !tampered,
        action: JSON.parse(body).action,
      });
      res.end('ok');
      if (req.headers['x-github-event'] === 'issues') arrived();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => server.close());
  const port = (server.address() as { port: number }).port;
  await octokit.rest.repos.createWebhook({
    owner,
    repo,
    config: { url: `http://127.0.0.1:${port}/hooks`, content_type: 'json', secret },
    events: ['issues'],
  });
  await octokit.rest.issues.create({ owner, repo, title: 'Sends a webhook' });
  await done;
  const issues = received.find((r) => r.event === 'issues');
  t.match(
    issues,
    { event: 'issues', verified: true, action: 'opened' },
    'signed with the hook secret, verified',
  );
}

async function pythonFlow(t: Test, target: Target, repoName: string) {
  const out = await runClient(PYTHON, [`${CLIENTS}github_flow.py`, repoName], target);
  t.equal(
    out.repo_url,
    `${target.GITHUB_API_URL}/repos/${out.login}/${repoName}`,
    'PyGithub followed this url',
  );
  t.same(
    out.issues.sort(),
    [1, 2, 3, 4, 5].map((n) => `Python issue ${n}`),
    'every issue, over pages',
  );
  t.equal(out.first_page, 2, 'two a page (per_page=2)');
  t.same(out.open, [5, 4, 3, 2], 'issue 1 closed through its url');
  t.same(out.comments, ["a comment through the issue's url"]);
  t.equal(out.labels.length, 9, 'the default labels');
  t.equal(out.main_ref, 'refs/heads/main', 'get_git_ref (the older git/refs/{ref} route)');
  t.equal(out.missing_status, 404, 'UnknownObjectException with status 404');
}

async function rubyFlow(t: Test, target: Target, repoName: string) {
  const out = await runClient(RUBY, [`${CLIENTS}github_flow.rb`, repoName], target);
  t.equal(out.repo_url, `${target.GITHUB_API_URL}/repos/${out.login}/${repoName}`);
  t.same(
    out.issues.sort(),
    [1, 2, 3, 4, 5].map((n) => `Ruby issue ${n}`),
    'auto_paginate followed Link',
  );
  t.match(out.last_page_prev, /[?&]page=2\b/, 'the last page links back to page 2');
  t.equal(
    out.self_full_name,
    `${out.login}/${repoName}`,
    "the repository's url (rels[:self]) leads back to it",
  );
  t.same(out.comments, ["a comment through the issue's comments_url"], 'rels[:comments] followed');
  t.equal(out.labels.length, 9);
  t.equal(out.main_ref, 'refs/heads/main', '`ref` (the older git/refs/{ref} route)');
  t.equal(out.missing_status, 404, 'Octokit::NotFound');
}

/** The three clients against one target; a missing Debian client fails under CI, else is skipped. */
async function allClients(t: Test, target: Target, webhooks: boolean) {
  await t.test('@octokit/rest 20', async (t) => {
    const { octokit, owner } = await octokit20Flow(t, target, 'node-20');
    if (webhooks) await webhookFlow(t, octokit, owner, 'node-20');
  });
  await t.test("PyGithub (Debian's python3-github)", async (t) => {
    if (!hasPyGithub) return missingPart(t, "Debian's python3-github (apt-get install python3-github)");
    await pythonFlow(t, target, 'python');
  });
  await t.test("octokit.rb (Debian's ruby-octokit)", async (t) => {
    if (!hasOctokitRb) return missingPart(t, "Debian's ruby-octokit (apt-get install ruby-octokit)");
    await rubyFlow(t, target, 'ruby');
  });
}

t.test('clients of the GitHub twin at its own base URL', async (t) => {
  const gh = await startGitHubTwin({ seed: { users: [{ login: 'octocat' }] } });
  t.teardown(() => gh.close());
  await allClients(t, { GITHUB_API_URL: gh.baseUrl, GITHUB_TOKEN: gh.token }, true);
});

async function twinSet(t: Test, tb: TestTwinbox, user: TestUser): Promise<any> {
  const created = await call(tb, {
    method: 'POST',
    url: '/twin-sets',
    token: user.key,
    payload: { twins: ['github'] },
  });
  t.equal(created.status, 201, JSON.stringify(created.body));
  const deadline = Date.now() + 180_000;
  while (Date.now() < deadline) {
    const { body } = await call(tb, { url: `/twin-sets/${created.body.id}`, token: user.key });
    if (body.status !== 'queued' && body.status !== 'building') return body;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error('the twin set did not settle');
}

t.test("clients of the GitHub twin through Twinbox's router, at a twin set's public URL", async (t) => {
  if (!requireHost(t, { bwrap: true, root: true })) return;
  const tb = await deployingTwinbox(t, await githubToDeployFrom(t));
  const user = await createUser(tb);
  const set = await twinSet(t, tb, user);
  t.equal(set.status, 'ready', set.error ?? '');
  const target = { GITHUB_API_URL: set.env_vars.GITHUB_API_URL, GITHUB_TOKEN: set.env_vars.GITHUB_TOKEN };
  t.match(target.GITHUB_API_URL, /^http:\/\/[0-9a-f-]+--github\.localhost:\d+$/, 'the public URL');
  await allClients(t, target, false);
});
