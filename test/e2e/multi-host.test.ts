/**
 * Twinbox on several hosts (issue 14, section 4; docs/scaling.md): two API processes and two runner
 * processes on one PostgreSQL, each in its own network namespace ("host"). The test makes the hosts:
 * a bridge in the root namespace with one veth pair per host (10.<a>.<b>.0/24, the bridge .1) and a TCP
 * forwarder on the bridge address to PostgreSQL (which listens on 127.0.0.1 only). The GitHub twin
 * listens on the bridge address: runners fetch source from it, and the GitHub App, configured in every
 * process and installed on the twin, calls it. Every process, namespace, veth and the bridge is removed
 * in teardown, whatever failed.
 *
 * Asserted: a create on either API process; deploys spread over both runners; every process's router
 * reaches every sandbox's app and twin; GitHub App deliveries, sent by the test over HTTP to the API
 * processes, are processed once whichever process receives them: one delivery sent to both at once (same
 * X-GitHub-Delivery, bytes and signature) is queued once and answered as a duplicate by the other, and
 * again when redelivered later; it and a different delivery sent at the same time each make one sandbox,
 * deployed by a runner from the twin, one comment on their pull request and one run of their job; a bad
 * signature is refused (401) by either process and queues nothing. Then `kill -9` of a runner fails its
 * sandboxes with the documented error (never deployed again) while a deploy queued after its death runs
 * on the other runner.
 */
import t, { type Test } from 'tap';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { createHash, createHmac, generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto';
import { readdirSync, readFileSync, realpathSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'node:http';
import { createServer, connect, type Server } from 'node:net';
import { promisify } from 'node:util';
import { Octokit } from '@octokit/rest';
import { localStartEnv, REPO_ROOT, twinboxMain } from '../helpers/process.ts';
import { exampleFiles, until } from '../helpers/deploy.ts';
import { startGitHubTwin } from '../../examples/github-twin.ts';
import { freshSchema, postgresMissing, deliveryJob as deliveryJobOf } from '../helpers/postgres.ts';
import { missingPart } from '../helpers/ci.ts';
import { requireHost } from '../security/isolation-fixtures.ts';
import { lostRunnerError } from '../../server/runners/index.ts';
import { openPostgresStore } from '../../server/store/postgres/store.ts';
import { MARKER } from '../../app/comment.ts';
import { APP_ID, INSTALLATION_ID, twinboxAppSeed, WEBHOOK_SECRET } from '../app/rig.ts';

const run = promisify(execFile);
const ip = (...args: string[]) => run('ip', args);
const ADMIN_TOKEN = `mh-admin-${randomBytes(16).toString('hex')}`;
const DOMAIN = 'sandbox.test';

/** A TCP forwarder in the root namespace: `listenHost:<port>` to `to`. */
async function forwarder(t: Test, listenHost: string, to: { host: string; port: number }): Promise<number> {
  const sockets = new Set<import('node:net').Socket>();
  const server: Server = createServer((client) => {
    const upstream = connect(to.port, to.host);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.on('error', () => {});
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(0, listenHost, resolve));
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  );
  return (server.address() as import('node:net').AddressInfo).port;
}

interface Host {
  name: string;
  address: string;
  dataDir: string;
  child?: ChildProcess;
  baseUrl?: string;
  output: string;
  exited?: Promise<unknown>;
}

/** GET through a router with a sandbox Host header (fetch cannot set Host). */
function viaRouter(baseUrl: string, host: string, path = '/', headers: Record<string, string> = {}) {
  const url = new URL(path, baseUrl);
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    const req = request(url, { headers: { host, ...headers }, timeout: 30_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', reject);
    req.end();
  });
}

/** A GitHub App delivery as GitHub sends it: the exact bytes, their signature and the delivery id. */
interface Delivery {
  id: string;
  event: string;
  body: string;
  signature: string;
}

function delivery(event: string, payload: unknown, secret = WEBHOOK_SECRET): Delivery {
  const body = JSON.stringify(payload);
  const signature = `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`;
  return { id: randomUUID(), event, body, signature };
}

/** POSTs `d` to a process's `/github/webhooks`, byte for byte the same whichever process gets it. */
async function deliver(host: Host, d: Delivery): Promise<{ status: number; body: any }> {
  const response = await fetch(`${host.baseUrl}/github/webhooks`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-github-event': d.event,
      'x-github-delivery': d.id,
      'x-hub-signature-256': d.signature,
    },
    body: d.body,
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : null };
}

async function api(baseUrl: string, method: string, path: string, token: string, body?: unknown) {
  const response = await fetch(`${baseUrl}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : null };
}

t.test('API and runner processes on four hosts, one PostgreSQL', async (t) => {
  if (!requireHost(t, { bwrap: true, cgroups: true, root: true })) return;
  const pgProblem = await postgresMissing();
  if (pgProblem) return missingPart(t, pgProblem);
  const prefix = `tbmh${process.pid % 100000}`;
  const subnet = `10.${200 + (process.pid % 50)}.${(process.pid >> 6) % 250}`;
  const bridge = `${prefix}br`;
  const hosts: Host[] = [];

  // Teardown first, so whatever is made below goes even if a later step fails.
  t.teardown(async () => {
    // What each process logged, when something failed (the processes are gone after this).
    if (!t.passing())
      for (const host of hosts) t.comment(`${host.name} (last of its output):\n${host.output.slice(-6000)}`);
    for (const host of hosts) {
      if (host.child && host.child.exitCode === null && host.child.signalCode === null)
        host.child.kill('SIGKILL');
      await host.exited;
    }
    // Pods and apps a runner started (and one killed with -9 left behind) carry its data dir in
    // their command line or environment: found by that unique path, killed by pid.
    for (const host of hosts) killByPath(host.dataDir);
    for (const host of hosts) {
      await ip('netns', 'del', host.name).catch(() => {});
      // Sandbox namespaces the runner made inside its host live in its mount namespace, gone with its
      // processes; their names under /run/netns can stay behind (tb-<first 8 of the data dir's hash>-).
      const instance = createHash('sha256').update(host.dataDir).digest('hex').slice(0, 8);
      for (const name of safeList('/run/netns'))
        if (name.startsWith(`tb-${instance}-`)) await ip('netns', 'del', name).catch(() => {});
    }
    await ip('link', 'del', bridge).catch(() => {});
    // Last, once nothing writes into them: tap runs teardowns newest first and stops at the first that
    // throws, so a data dir removed by its own teardown went before the processes above were killed, and
    // a runner still writing its pid files made that removal fail and left the processes running.
    for (const host of hosts) await rm(host.dataDir, { recursive: true, force: true, maxRetries: 5 });
  });

  await ip('link', 'add', bridge, 'type', 'bridge');
  await ip('addr', 'add', `${subnet}.1/24`, 'dev', bridge);
  await ip('link', 'set', bridge, 'up');
  const names = ['api0', 'api1', 'run0', 'run1'];
  for (const [index, role] of names.entries()) {
    const host: Host = {
      name: `${prefix}-${role}`,
      address: `${subnet}.${10 + index}`,
      dataDir: realpathSync(await mkdtemp(join(tmpdir(), `tbmh-${role}-`))),
      output: '',
    };
    hosts.push(host);
    const outside = `${prefix}v${index}`;
    const inside = `${prefix}p${index}`;
    await ip('netns', 'add', host.name);
    await ip('link', 'add', outside, 'type', 'veth', 'peer', 'name', inside);
    await ip('link', 'set', inside, 'netns', host.name);
    await ip('link', 'set', outside, 'master', bridge, 'up');
    await ip('-n', host.name, 'addr', 'add', `${host.address}/24`, 'dev', inside);
    await ip('-n', host.name, 'link', 'set', inside, 'up');
    await ip('-n', host.name, 'link', 'set', 'lo', 'up');
  }

  // PostgreSQL and the GitHub twin stay in the root namespace, reached through the bridge address.
  const { url: schemaUrl, schema } = await freshSchema();
  const pgUrl = new URL(schemaUrl);
  const pgPort = await forwarder(t, `${subnet}.1`, {
    host: pgUrl.hostname,
    port: Number(pgUrl.port || 5432),
  });
  pgUrl.hostname = `${subnet}.1`;
  pgUrl.port = String(pgPort);
  // The GitHub twin listens on the bridge address itself: the tarball URLs it hands out name it.
  // The Twinbox GitHub App is registered on it and installed on octocat (test/app/rig.ts).
  const appKey = generateKeyPairSync('rsa', { modulusLength: 2048 })
    .privateKey.export({ type: 'pkcs1', format: 'pem' })
    .toString();
  const gh = await startGitHubTwin({
    seed: {
      users: [{ login: 'octocat' }],
      apps: [twinboxAppSeed(appKey)],
    },
    publicHost: `${subnet}.1`,
  });
  t.teardown(() => gh.close());
  await gh.createRepo({ owner: 'octocat', name: 'shop', files: await exampleFiles('zero-dep') });
  const githubApi = gh.baseUrl;

  const start = async (host: Host, env: Record<string, string>) => {
    const child = spawn('ip', ['netns', 'exec', host.name, process.execPath, ...twinboxMain()], {
      cwd: REPO_ROOT,
      env: localStartEnv({
        TWINBOX_BIND_HOST: host.address,
        TWINBOX_PUBLIC_HOST: host.address,
        TWINBOX_DATA_DIR: host.dataDir,
        TWINBOX_DATABASE_URL: pgUrl.toString(),
        TWINBOX_ADMIN_TOKEN: ADMIN_TOKEN,
        TWINBOX_SANDBOX_DOMAIN: DOMAIN,
        TWINBOX_RUNNER_STALE_SECONDS: '6',
        TWINBOX_DEPLOY_CONCURRENCY: '1',
        TWINBOX_HEALTH_TIMEOUT_MS: '60000',
        TWINBOX_INSTALL_EGRESS: '',
        GITHUB_API_URL: githubApi,
        GITHUB_OAUTH_URL: githubApi,
        GITHUB_TOKEN: gh.token,
        // Every process has the App: any may receive a delivery or work its job, and each handles
        // the sandbox changes it makes (docs/scaling.md).
        GITHUB_APP_ID: String(APP_ID),
        GITHUB_APP_PRIVATE_KEY: appKey,
        GITHUB_WEBHOOK_SECRET: WEBHOOK_SECRET,
        ...env,
      }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    host.child = child;
    child.stdout!.on('data', (chunk: Buffer) => (host.output += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (host.output += chunk.toString()));
    host.exited = new Promise((resolve) => child.on('exit', resolve));
    await until(
      () => /^Twinbox listening on (http:\/\/\S+) /m.test(host.output) || child.exitCode !== null,
      `${host.name} to listen`,
      120_000,
    );
    const match = /^Twinbox listening on (http:\/\/\S+) /m.exec(host.output);
    if (!match) throw new Error(`${host.name} did not start:\n${host.output}`);
    host.baseUrl = match[1]!;
  };
  const [api0, api1, run0, run1] = hosts as [Host, Host, Host, Host];
  // One after the other: the first applies the migrations, the rest find them applied.
  await start(api0, { TWINBOX_ROLE: 'api' });
  await start(api1, { TWINBOX_ROLE: 'api' });
  await start(run0, { TWINBOX_ROLE: 'runner', TWINBOX_RUNNER_ID: 'mh-run0', TWINBOX_DEPLOY_ENGINE: 'local' });
  await start(run1, { TWINBOX_ROLE: 'runner', TWINBOX_RUNNER_ID: 'mh-run1', TWINBOX_DEPLOY_ENGINE: 'local' });

  // An account and key through the operator API of one API process, used on both.
  const account = await api(api0.baseUrl!, 'POST', '/admin/accounts', ADMIN_TOKEN, {
    email: `mh-${process.pid}@example.com`,
    plan: 'pro',
  });
  t.equal(account.status, 201, `account made: ${account.body.detail ?? account.body.id}`);
  const issued = await api(
    api1.baseUrl!,
    'POST',
    `/admin/accounts/${account.body.id}/api-keys`,
    ADMIN_TOKEN,
    {},
  );
  t.equal(issued.status, 201, `key issued: ${issued.body.detail ?? issued.body.id}`);
  const key = issued.body.key as string;

  const settle = async (id: string) => {
    let last: any;
    await until(
      async () => {
        last = (await api(api1.baseUrl!, 'GET', `/sandboxes/${id}`, key)).body;
        return last.status !== 'queued' && last.status !== 'building';
      },
      `sandbox ${id} to settle`,
      300_000,
    );
    return last;
  };
  const createOn = async (host: Host) => {
    const made = await api(host.baseUrl!, 'POST', '/sandboxes', key, {
      repo: 'octocat/shop',
      branch: 'main',
      twins: ['stripe'],
    });
    t.equal(made.status, 201, `created on ${host.name}`);
    return made.body.sandbox_id as string;
  };
  const runnerOf = async (id: string) =>
    (await api(api0.baseUrl!, 'GET', `/sandboxes/${id}`, key)).body as {
      status: string;
      error: string | null;
    };

  // Creates alternate between the API processes until both runners hold a ready sandbox (with one
  // deploy at a time per runner, queued deploys go to whichever runner is free).
  const byRunner = new Map<string, string[]>();
  const ids: string[] = [];
  const rows = async () => {
    const { Client } = (await import('pg')).default;
    const client = new Client({ connectionString: schemaUrl });
    await client.connect();
    try {
      const { rows } = await client.query<{ id: string; runner_id: string | null; status: string }>(
        `SELECT id, data ->> 'runner_id' AS runner_id, data ->> 'status' AS status FROM sandboxes`,
      );
      return rows;
    } finally {
      await client.end();
    }
  };
  for (let round = 0; round < 4 && byRunner.size < 2; round++) {
    const batch = [await createOn(api0), await createOn(api1)];
    ids.push(...batch);
    for (const id of batch) {
      const settled = await settle(id);
      t.equal(settled.status, 'ready', `${id}: ${settled.error ?? ''}`);
      if (settled.status !== 'ready') throw new Error(`a deploy failed: ${settled.error}`);
    }
    byRunner.clear();
    for (const row of await rows())
      if (row.runner_id && row.status === 'ready')
        byRunner.set(row.runner_id, [...(byRunner.get(row.runner_id) ?? []), row.id]);
  }
  t.same([...byRunner.keys()].sort(), ['mh-run0', 'mh-run1'], 'deploys spread over both runners');

  // Every process's router reaches every sandbox's app and twin (Host kept across the forward).
  const secretOf = async (id: string) =>
    ((await api(api0.baseUrl!, 'GET', `/sandboxes/${id}`, key)).body as any).twins.stripe.env_vars
      .STRIPE_SECRET_KEY as string;
  for (const id of ids) {
    const secret = await secretOf(id);
    for (const host of hosts) {
      const app = await viaRouter(host.baseUrl!, `${id}.${DOMAIN}`);
      t.equal(app.status, 200, `app of ${id} through ${host.name}`);
      const twin = await viaRouter(host.baseUrl!, `${id}--stripe.${DOMAIN}`, '/v1/customers', {
        authorization: `Bearer ${secret}`,
      });
      t.equal(twin.status, 200, `stripe twin of ${id} through ${host.name}`);
    }
  }
  const logs = await fetch(`${api1.baseUrl}/sandboxes/${ids[0]}/logs`, {
    headers: { authorization: `Bearer ${key}` },
  });
  t.match(
    await logs.text(),
    /deploying octocat\/shop/,
    "a sandbox's log, read by an API process from its runner",
  );

  // The GitHub App: deliveries reach either API process; each is processed once, by whichever process
  // takes its job, and its sandbox is deployed on a runner with source fetched from the GitHub twin.
  // The twin's own deliveries go nowhere: the test sends each one itself, to the process it chooses.
  await gh.setWebhookTarget({ url: 'http://127.0.0.1:9/nowhere' });
  const octokit = new Octokit({ baseUrl: githubApi, auth: gh.token });
  const { data: octocat } = await octokit.rest.users.getByUsername({ username: 'octocat' });
  // The installer's Twinbox account is the account above, connected to GitHub as octocat (what GitHub
  // connect records; tested in test/identity).
  const store = await openPostgresStore({ url: schemaUrl });
  try {
    await store.identities.insert({
      id: `mh-github-${process.pid}`,
      account_id: account.body.id,
      provider: 'github',
      provider_key: `github:${octocat.id}`,
      login: 'octocat',
      created_at: new Date().toISOString(),
    });
  } finally {
    await store.close();
  }
  const { data: repository } = await octokit.rest.repos.get({ owner: 'octocat', repo: 'shop' });
  const openPull = async (branch: string) => {
    await gh.pushFiles({ owner: 'octocat', repo: 'shop', branch, files: { 'branch.txt': branch } });
    const { data: pr } = await octokit.rest.pulls.create({
      owner: 'octocat',
      repo: 'shop',
      head: branch,
      base: 'main',
      title: branch,
    });
    const payload = {
      action: 'opened',
      number: pr.number,
      pull_request: pr,
      repository,
      sender: octocat,
      installation: { id: INSTALLATION_ID },
    };
    return { pr, payload, opened: delivery('pull_request', payload) };
  };
  const appComments = async (number: number) =>
    (
      await octokit.paginate(octokit.rest.issues.listComments, {
        owner: 'octocat',
        repo: 'shop',
        issue_number: number,
        per_page: 100,
      })
    ).filter((c) => c.body?.includes(MARKER));
  const sandboxesOf = async (prUrl: string) =>
    (
      (await api(api0.baseUrl!, 'GET', '/sandboxes?repo=octocat/shop&limit=100', key)).body.sandboxes as any[]
    ).filter((s) => s.pr_url === prUrl);
  /** The delivery's job: how often it was started and its state (pg-boss, as jobs-crash does). */
  const deliveryJob = (id: string) => deliveryJobOf(schemaUrl, schema, id);

  const first = await openPull('feature-1');
  const second = await openPull('feature-2');
  // At once: PR 1's delivery to both API processes (the same id, bytes and signature), PR 2's to B.
  const [oneA, oneB, twoB] = await Promise.all([
    deliver(api0, first.opened),
    deliver(api1, first.opened),
    deliver(api1, second.opened),
  ]);
  t.same(
    [oneA.status, oneB.status].sort(),
    [200, 202],
    `one delivery sent to both API processes at once: one queued, one a duplicate (${JSON.stringify([oneA.body, oneB.body])})`,
  );
  t.equal([oneA, oneB].find((a) => a.status === 200)?.body.status, 'duplicate');
  t.equal(twoB.status, 202, `another delivery, to the other process: queued (${JSON.stringify(twoB.body)})`);
  for (const { pr, opened } of [first, second]) {
    let sandboxes: any[] = [];
    await until(
      async () => {
        sandboxes = await sandboxesOf(pr.html_url);
        return sandboxes.length > 0 && !['queued', 'building'].includes(sandboxes[0].status);
      },
      `the sandbox of PR ${pr.number}`,
      300_000,
    );
    t.equal(sandboxes[0].status, 'ready', `PR ${pr.number}'s sandbox: ${sandboxes[0].error ?? ''}`);
    // The comment follows the runner's `ready`; the delivery's job ends after its own comment write.
    let comments: Awaited<ReturnType<typeof appComments>> = [];
    await until(
      async () => {
        comments = await appComments(pr.number);
        return (
          comments.some((c) => /sandbox ready/.test(c.body ?? '')) &&
          ['completed', 'failed'].includes((await deliveryJob(opened.id))?.state ?? '')
        );
      },
      `PR ${pr.number}'s comment to say ready`,
      // Bounds a hang only: under a CI run's load the comment's edits queue behind other work.
      300_000,
    );
  }
  // Redelivered after it was processed, to either process: acknowledged as a duplicate, not processed.
  for (const [host, d] of [
    [api0, first.opened],
    [api1, first.opened],
    [api0, second.opened],
  ] as const) {
    const again = await deliver(host, d);
    t.equal(again.status, 200, `a redelivery to ${host.name}`);
    t.equal(again.body.status, 'duplicate');
  }
  for (const { pr, opened } of [first, second]) {
    const sandboxes = await sandboxesOf(pr.html_url);
    t.equal(sandboxes.length, 1, `PR ${pr.number}: one sandbox`);
    const comments = await appComments(pr.number);
    t.equal(comments.length, 1, `PR ${pr.number}: one Twinbox comment`);
    t.match(comments[0]?.body, sandboxes[0].app_url, 'it gives the sandbox');
    t.same(
      await deliveryJob(opened.id),
      { runs: 1, state: 'completed' },
      `PR ${pr.number}: its delivery ran once`,
    );
    const row = (await rows()).find((r) => r.id === sandboxes[0].sandbox_id);
    t.ok(row?.runner_id === 'mh-run0' || row?.runner_id === 'mh-run1', `deployed by ${row?.runner_id}`);
    const page = await viaRouter(api1.baseUrl!, `${sandboxes[0].sandbox_id}.${DOMAIN}`);
    t.equal(page.status, 200, `PR ${pr.number}'s app answers through ${api1.name}`);
  }

  // A delivery signed with another secret is refused by either process, and nothing is queued.
  const third = await openPull('feature-3');
  const forged = delivery('pull_request', third.payload, 'not-the-webhook-secret-at-all');
  for (const host of [api0, api1]) {
    const refused = await deliver(host, forged);
    t.equal(refused.status, 401, `a bad signature on ${host.name}`);
    t.match(refused.body?.detail, /X-Hub-Signature-256 does not match/);
  }
  t.equal(await deliveryJob(forged.id), undefined, 'no job for it');
  t.same(await sandboxesOf(third.pr.html_url), [], 'no sandbox for its pull request');
  t.same(await appComments(third.pr.number), [], 'no comment on it');
  // Every call of the App went to the configured GitHub: a runner minting the installation's token for
  // its source fetch once went to api.github.com instead (and fell back to GITHUB_TOKEN).
  for (const host of hosts)
    t.notMatch(host.output, /api\.github\.com/, `${host.name}: no call to github.com`);

  // kill -9 of a runner: its sandboxes fail with the documented error once its heartbeat is stale,
  // and none is deployed again; the other runner's keep running and a new deploy goes there.
  run0.child!.kill('SIGKILL');
  await run0.exited;
  const lost = byRunner.get('mh-run0')!;
  const kept = byRunner.get('mh-run1')!;
  for (const id of lost) {
    await until(async () => (await runnerOf(id)).status === 'failed', `${id} to fail`, 120_000);
    t.equal((await runnerOf(id)).error, lostRunnerError('mh-run0'), `${id}: the documented error`);
    const page = await viaRouter(api0.baseUrl!, `${id}.${DOMAIN}`);
    t.equal(page.status, 502, 'its URL says it failed');
  }
  for (const id of kept) {
    t.equal((await runnerOf(id)).status, 'ready', `${id} on the live runner is still ready`);
    t.equal((await viaRouter(api1.baseUrl!, `${id}.${DOMAIN}`)).status, 200);
  }
  const after = await createOn(api0);
  const settled = await settle(after);
  t.equal(settled.status, 'ready', `a deploy after the death: ${settled.error ?? ''}`);
  const row = (await rows()).find((r) => r.id === after);
  t.equal(row?.runner_id, 'mh-run1', 'taken by the runner still alive');
  for (const id of lost)
    t.equal(
      (await rows()).find((r) => r.id === id)?.status,
      'failed',
      `${id} stays failed: never deployed twice`,
    );
});

function safeList(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/** SIGKILL to every process whose command line or environment names `path` (a test's own temp dir). */
function killByPath(path: string): void {
  for (const entry of safeList('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    let text = '';
    try {
      text = readFileSync(`/proc/${entry}/cmdline`, 'utf8') + readFileSync(`/proc/${entry}/environ`, 'utf8');
    } catch {
      continue;
    }
    if (text.includes(path)) {
      try {
        process.kill(Number(entry), 'SIGKILL');
      } catch {
        // Gone already.
      }
    }
  }
}
