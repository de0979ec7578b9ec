import t, { type Test } from 'tap';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { freePort } from '../../server/deploy/ports.ts';
import { call, createUser } from '../helpers/twinbox.ts';
import { deployingTwinbox, deploySandbox, githubToDeployFrom, until } from '../helpers/deploy.ts';
import { requireHost } from '../security/isolation-fixtures.ts';
import { dataDirFor } from './restart-helpers.ts';
import { postBody, type Answer } from '../helpers/upload.ts';

/**
 * Issue 20, part 4, on a real sandbox (pod, twins on their sockets, the router on Twinbox's port):
 * - a body over TWINBOX_TWIN_BODY_BYTES sent to a twin's public URL gets the twin's own 413, through the
 *   router (it used to get the router's 502 "did not answer": the twin closed while the body still came);
 * - while a ready sandbox resumes after a restart, its URLs answer 503 with Retry-After, never 404
 *   "No such sandbox", then the app once it is back.
 */

const MiB = 1024 * 1024;
const ROUNDS = 20;

/**
 * An app that starts at once the first time and leaves a mark in its workspace; a later start (the
 * resume) finds the mark and listens only once the test has put `go` beside it, so the resume is
 * observable for as long as the test needs, without a timing guess.
 */
const gatedApp = {
  'package.json': JSON.stringify({ name: 'gated', private: true, scripts: { start: 'node server.js' } }),
  'server.js': `import { createServer } from 'node:http';
import { existsSync, writeFileSync } from 'node:fs';
const resumed = existsSync('started-once');
writeFileSync('started-once', process.cwd());
const serve = () =>
  createServer((req, res) => res.end(resumed ? 'resumed' : 'first')).listen(Number(process.env.PORT), '127.0.0.1');
if (!resumed) serve();
else {
  const gate = setInterval(() => {
    if (existsSync('go')) {
      clearInterval(gate);
      serve();
    }
  }, 50);
}
`,
};

function get(url: string, headers: Record<string, string> = {}) {
  return new Promise<Answer>((resolve, reject) => {
    const req = request(url, { headers, agent: false }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('end', () =>
        resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(parts).toString() }),
      );
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/** The Stripe twin's own 413: Stripe's error shape, the twin's message. */
function twinRefusal(t: Test, answer: Answer, what: string): void {
  t.equal(answer.status, 413, `${what}: 413`);
  let body: any;
  try {
    body = JSON.parse(answer.body);
  } catch {
    body = undefined;
  }
  t.equal(body?.error?.type, 'invalid_request_error', `${what}: Stripe's error shape, from the twin`);
  t.match(body?.error?.message, /larger than 1048576 bytes/, `${what}: the twin's message`);
}

t.test(
  'a ready sandbox: the twin refuses a 2 MiB body itself; a resume answers 503, then the app',
  async (t) => {
    if (!requireHost(t, { bwrap: true, root: true })) return;
    const gh = await githubToDeployFrom(t);
    await gh.createRepo({ owner: 'octocat', name: 'gated', files: gatedApp });
    const dataDir = await dataDirFor(t);
    const port = String(await freePort());
    const env = { PORT: port, TWINBOX_TWIN_BODY_BYTES: String(MiB), TWINBOX_HEALTH_TIMEOUT_MS: '180000' };
    const first = await deployingTwinbox(t, gh, env, dataDir);
    const user = await createUser(first);
    const sandbox = await deploySandbox(first, user, {
      repo: 'octocat/gated',
      branch: 'main',
      twins: ['stripe'],
    });
    t.equal(sandbox.status, 'ready', sandbox.error ?? '');
    t.equal((await get(sandbox.app_url)).body, 'first', 'the app answers');

    // Through the router, to the twin's public URL: 20 bodies with a Content-Length, 20 chunked.
    const key = sandbox.twins.stripe.env_vars.STRIPE_SECRET_KEY;
    const headers = { authorization: `Bearer ${key}`, 'content-type': 'application/x-www-form-urlencoded' };
    const url = `${sandbox.twins.stripe.base_url}/v1/customers`;
    t.match(
      url,
      new RegExp(`^http://${sandbox.sandbox_id}--stripe\\.localhost:${port}/`),
      "the twin's public URL",
    );
    let refused = 0;
    for (const chunked of [false, true])
      for (let round = 1; round <= ROUNDS; round++) {
        const answer = await postBody(url, 2 * MiB, headers, chunked);
        twinRefusal(t, answer, `router, ${chunked ? 'chunked' : 'content-length'} #${round}`);
        t.match(answer.headers['x-twinbox-request-id'], /^[0-9a-f-]{36}$/, 'it came through the router');
        refused++;
      }
    t.equal(refused, 2 * ROUNDS, 'every round ran');

    // The pod's own socket for the twin, which the router proxies to: the same answer.
    const socketPath = first.engine!.directory.socketFor(sandbox.sandbox_id, {
      kind: 'twin',
      name: 'stripe',
    })!;
    t.ok(socketPath && existsSync(socketPath), "the twin's socket in the pod");
    for (const chunked of [false, true])
      for (let round = 1; round <= 5; round++)
        twinRefusal(
          t,
          await postBody({ socketPath, path: '/v1/customers' }, 2 * MiB, headers, chunked),
          `socket, ${chunked ? 'chunked' : 'content-length'} #${round}`,
        );

    // A body under the cap still goes through (the refusals left nothing broken behind them).
    const made = await fetch(url, { method: 'POST', headers, body: 'email=after%40example.com' });
    t.equal(made.status, 200, 'a customer is made after the refusals');

    // Restart over the same data dir: the app's second start waits for `go`, so the resume is under way.
    await first.stop();
    const second = await deployingTwinbox(t, gh, env, dataDir);
    const statuses: number[] = [];
    const json = await get(sandbox.app_url, { accept: 'application/json' });
    statuses.push(json.status);
    t.equal(json.status, 503, 'the app URL while the sandbox resumes: 503');
    t.equal(json.headers['retry-after'], '2', 'with Retry-After');
    t.equal(json.headers['cache-control'], 'no-store');
    t.match(JSON.parse(json.body), {
      statusCode: 503,
      code: 'sandbox_resuming',
      detail: /coming back after a Twinbox restart/,
    });
    const page = await get(sandbox.app_url, { accept: 'text/html' });
    t.equal(page.status, 503, 'a browser gets 503 too');
    t.match(page.body, /<meta http-equiv="refresh" content="2">/, 'a page that refreshes itself');
    const twin = await get(`${sandbox.twins.stripe.base_url}/v1/customers`, {
      authorization: `Bearer ${key}`,
    });
    t.equal(twin.status, 503, 'its twin URL: 503 while it resumes');
    t.equal(JSON.parse(twin.body).code, 'sandbox_resuming');
    const other = await get(
      `${sandbox.app_url.replace(sandbox.sandbox_id, `${sandbox.sandbox_id}--nope`)}/`,
      {
        accept: 'application/json',
      },
    );
    t.equal(other.status, 404, 'a twin it does not have: 404 twin_not_found');
    t.equal(JSON.parse(other.body).code, 'twin_not_found');
    const view = (await call(second, { url: `/sandboxes/${sandbox.sandbox_id}`, token: user.key })).body;
    t.equal(view.status, 'ready', 'the record stays ready: it was ready and is being brought back');

    // The app's second start is waiting at the gate: open it, and poll until the app answers.
    let marker: string | undefined;
    await until(
      () => {
        marker = findMarker(second.engine!.deployer.workspaceOf(sandbox.sandbox_id));
        return marker !== undefined;
      },
      "the app's mark in its reopened workspace",
      60_000,
    );
    writeFileSync(join(marker!, 'go'), '');
    let back: Answer | undefined;
    await until(
      async () => {
        const answer = await get(sandbox.app_url, { accept: 'application/json' });
        statuses.push(answer.status);
        if (answer.status === 200) back = answer;
        return back !== undefined;
      },
      'the app back after the resume',
      180_000,
    );
    t.equal(back?.body, 'resumed', 'the resumed app answers');
    t.ok(statuses.includes(503), 'the resume was seen: 503 before it was back');
    t.same(
      statuses.filter((status) => status !== 503 && status !== 200),
      [],
      `every answer was 503 or 200, never 404 (${statuses.length} requests)`,
    );
    await second.lifecycle.idle();
    const twinBack = await postBody(url, 2 * MiB, headers, true);
    twinRefusal(t, twinBack, 'router, after the resume');
  },
);

/** The directory the app runs in (it wrote its cwd into `started-once`), under the workspace. */
function findMarker(workspace: string): string | undefined {
  const walk = (dir: string, depth: number): string | undefined => {
    const entries = (() => {
      try {
        return readdirSync(dir, { withFileTypes: true });
      } catch {
        return [];
      }
    })();
    if (entries.some((entry) => entry.name === 'started-once')) return dir;
    if (depth === 0) return undefined;
    for (const entry of entries)
      if (entry.isDirectory() && entry.name !== 'node_modules') {
        const found = walk(join(dir, entry.name), depth - 1);
        if (found) return found;
      }
    return undefined;
  };
  return walk(workspace, 3);
}
