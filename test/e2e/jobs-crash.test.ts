import t, { type Test } from 'tap';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { Octokit } from '@octokit/rest';
import { openLowdbStore } from '../../server/store/lowdb-store.ts';
import { openPostgresStore } from '../../server/store/postgres/store.ts';
import type { Store } from '../../server/store/store.ts';
import { Accounts } from '../../server/identity/accounts.ts';
import { keyedId } from '../../server/jobs/embedded.ts';
import { bossSchemaFor } from '../../server/jobs/postgres.ts';
import { QUEUES } from '../../server/jobs/queue.ts';
import { MARKER } from '../../app/comment.ts';
import { APP_ID, githubWithApp, INSTALLATION_ID, postWebhook, WEBHOOK_SECRET } from '../app/rig.ts';
import { exampleFiles, githubToDeployFrom, until } from '../helpers/deploy.ts';
import { spawnTwinbox, stopGracefully } from '../helpers/process.ts';
import { schemaForDataDir } from '../helpers/postgres.ts';
import { requireHost } from '../security/isolation-fixtures.ts';
import '../helpers/sandbox-hosts.ts';

/**
 * "Acknowledged means it will be processed, exactly once, even across a crash" (issue 14, docs/jobs.md),
 * with real processes: a Twinbox started with TWINBOX_JOB_WORKERS=off acknowledges (202 for a GitHub
 * delivery, 201 for a sandbox) and cannot have processed anything when it is killed with SIGKILL; the
 * Twinbox started next on the same data dir (and database, under TWINBOX_TEST_STORE=postgres) processes
 * it, once: one comment, one sandbox, one run of the job, and a redelivery is a duplicate.
 */

const postgres = process.env.TWINBOX_TEST_STORE === 'postgres';

async function dataDirFor(t: Test): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'twinbox-jobs-crash-'));
  t.teardown(async () => {
    // A killed Twinbox may leave its sandboxes' mounts behind (the deploy test).
    const mounts = readFileSync('/proc/self/mountinfo', 'utf8')
      .split('\n')
      .map((line) => line.split(' ')[4] ?? '')
      .filter((point) => point.startsWith(`${dir}/`))
      .reverse();
    for (const mount of mounts)
      try {
        execFileSync('umount', ['-l', mount]);
      } catch {
        // already gone
      }
    await rm(dir, { recursive: true, force: true, maxRetries: 3 });
  });
  return dir;
}

async function storeEnv(dataDir: string): Promise<Record<string, string>> {
  return postgres ? { TWINBOX_DATABASE_URL: await schemaForDataDir(dataDir) } : {};
}

/** The Store the Twinbox processes use, opened while none runs. */
async function openStore(dataDir: string, env: Record<string, string>): Promise<Store> {
  return env.TWINBOX_DATABASE_URL
    ? openPostgresStore({ url: env.TWINBOX_DATABASE_URL })
    : openLowdbStore(dataDir);
}

/** How many times the job of `key` was started, and whether it finished. */
async function jobRuns(
  dataDir: string,
  env: Record<string, string>,
  queue: string,
  key: string,
): Promise<{ runs: number; finished: boolean }> {
  const url = env.TWINBOX_DATABASE_URL;
  if (!url) {
    const store = await openLowdbStore(dataDir);
    try {
      const job = await store.jobs.get(keyedId(queue, key));
      return { runs: job?.attempts ?? 0, finished: job?.state === 'done' };
    } finally {
      await store.close();
    }
  }
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const schema = (await client.query<{ s: string }>('SELECT current_schema() AS s')).rows[0]!.s;
    const { rows } = await client.query<{ state: string; retry_count: number; started: boolean }>(
      `SELECT j.state, j.retry_count, j.started_on IS NOT NULL AS started
         FROM job_keys k JOIN ${bossSchemaFor(schema)}.job j ON j.name = k.queue AND j.id = k.job_id
        WHERE k.queue = $1 AND k.key = $2`,
      [queue, key],
    );
    const job = rows[0];
    // pg-boss counts runs after the first in retry_count.
    return { runs: job?.started ? job.retry_count + 1 : 0, finished: job?.state === 'completed' };
  } finally {
    await client.end();
  }
}

// The two tests are independent (their own twin, data dir and Twinbox processes) and spend most of their
// time waiting on those processes: they run at once.
t.jobs = 2;

t.test(
  'a GitHub delivery acknowledged, then kill -9 before it was processed: processed once after the restart',
  async (t) => {
    const { gh, privateKey } = await githubWithApp(t);
    await gh.createRepo({
      owner: 'octocat',
      name: 'shop',
      files: { ...(await exampleFiles('zero-dep')), '.github/twinbox.yml': 'twins: [github]\n' },
    });
    await gh.pushFiles({ owner: 'octocat', repo: 'shop', branch: 'feature', files: { 'a.txt': 'a' } });
    // Deliveries come from the test, signed with the App's secret, so the test knows when each was acknowledged.
    await gh.setWebhookTarget({ url: 'http://127.0.0.1:9/nowhere' });
    const octokit = new Octokit({ baseUrl: gh.baseUrl, auth: gh.token });
    const { data: pr } = await octokit.rest.pulls.create({
      owner: 'octocat',
      repo: 'shop',
      head: 'feature',
      base: 'main',
      title: 'Feature',
    });
    const { data: repository } = await octokit.rest.repos.get({ owner: 'octocat', repo: 'shop' });
    const { data: sender } = await octokit.rest.users.getByUsername({ username: 'octocat' });
    const payload = {
      action: 'opened',
      number: pr.number,
      pull_request: pr,
      repository,
      sender,
      installation: { id: INSTALLATION_ID },
    };

    const dataDir = await dataDirFor(t);
    const env: Record<string, string> = {
      ...(await storeEnv(dataDir)),
      TWINBOX_DATA_DIR: dataDir,
      GITHUB_API_URL: gh.baseUrl,
      GITHUB_OAUTH_URL: gh.baseUrl,
      GITHUB_APP_ID: String(APP_ID),
      GITHUB_APP_PRIVATE_KEY: privateKey,
      GITHUB_WEBHOOK_SECRET: WEBHOOK_SECRET,
      LOG_LEVEL: 'warn',
    };
    // The installer's Twinbox account, connected to GitHub as octocat (what GitHub connect records).
    const store = await openStore(dataDir, env);
    const account = await new Accounts(store).create('installer@example.com', 'pro');
    await store.identities.insert({
      id: 'installer-github',
      account_id: account.id,
      provider: 'github',
      provider_key: `github:${sender.id}`,
      login: 'octocat',
      created_at: new Date().toISOString(),
    });
    await store.close();

    const first = await spawnTwinbox(t, { ...env, TWINBOX_JOB_WORKERS: 'off' });
    const delivery = '6f1ed002-ab5d-11ed-8aa4-00000000c4a5';
    const acknowledged = await postWebhook(first.baseUrl, 'pull_request', payload, { delivery });
    t.equal(acknowledged.status, 202, JSON.stringify(acknowledged.body));
    first.child.kill('SIGKILL');
    await first.exited;
    const comments = async () =>
      (
        await octokit.paginate(octokit.rest.issues.listComments, {
          owner: 'octocat',
          repo: 'shop',
          issue_number: pr.number,
        })
      ).filter((c) => c.body?.includes(MARKER));
    t.equal((await comments()).length, 0, 'nothing processed before the crash');
    t.same(await jobRuns(dataDir, env, QUEUES.githubDelivery, delivery), { runs: 0, finished: false });

    const second = await spawnTwinbox(t, env);
    await until(async () => (await comments()).length > 0, 'the App comment', 60_000);
    const again = await postWebhook(second.baseUrl, 'pull_request', payload, { delivery });
    t.equal(again.status, 200, 'the redelivery is a duplicate');
    t.equal(again.body.status, 'duplicate');
    await stopGracefully(second);

    t.equal((await comments()).length, 1, 'one comment');
    const after = await openStore(dataDir, env);
    const sandboxes = await after.sandboxes.findBy('owner_id', account.id);
    await after.close();
    t.equal(sandboxes.length, 1, 'one sandbox for the pull request');
    t.equal(sandboxes[0]!.pr_url, pr.html_url);
    t.same(
      await jobRuns(dataDir, env, QUEUES.githubDelivery, delivery),
      { runs: 1, finished: true },
      'the delivery was processed once',
    );
  },
);

t.test(
  'a sandbox acknowledged (201), then kill -9 before its deploy started: deployed once after the restart',
  async (t) => {
    if (!requireHost(t, { bwrap: true, root: true })) return;
    const gh = await githubToDeployFrom(t);
    await gh.createRepo({ owner: 'octocat', name: 'shop', files: await exampleFiles('zero-dep') });
    const dataDir = await dataDirFor(t);
    const env: Record<string, string> = {
      ...(await storeEnv(dataDir)),
      TWINBOX_DATA_DIR: dataDir,
      TWINBOX_DEPLOY_ENGINE: 'local',
      GITHUB_API_URL: gh.baseUrl,
      GITHUB_TOKEN: gh.token,
      GITHUB_OAUTH_URL: gh.baseUrl,
      TWINBOX_HEALTH_TIMEOUT_MS: '30000',
      LOG_LEVEL: 'warn',
    };
    const first = await spawnTwinbox(t, { ...env, TWINBOX_JOB_WORKERS: 'off' });
    let key = '';
    await until(
      async () =>
        Boolean((key = (await readFile(join(dataDir, 'dev-api-key'), 'utf8').catch(() => '')).trim())),
      'the local owner key',
    );
    const api = async (base: string, path: string, init: RequestInit = {}) => {
      const res = await fetch(`${base}${path}`, {
        ...init,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      });
      return { status: res.status, body: (await res.json()) as any };
    };
    const created = await api(first.baseUrl, '/sandboxes', {
      method: 'POST',
      body: JSON.stringify({ repo: 'octocat/shop', branch: 'main', twins: ['stripe'] }),
    });
    t.equal(created.status, 201, JSON.stringify(created.body));
    const id = created.body.sandbox_id as string;
    first.child.kill('SIGKILL');
    await first.exited;
    t.same(
      await jobRuns(dataDir, env, QUEUES.deploy, id),
      { runs: 0, finished: false },
      'not started before the crash',
    );

    const second = await spawnTwinbox(t, env);
    let sandbox: any;
    await until(
      async () =>
        !['queued', 'building'].includes(
          (sandbox = (await api(second.baseUrl, `/sandboxes/${id}`)).body).status,
        ),
      'the deploy',
      120_000,
    );
    t.equal(sandbox.status, 'ready', sandbox.error ?? second.output());
    t.ok((await fetch(sandbox.app_url)).ok, 'the app answers');
    // Ended before the process stops, so no app is left behind by the test.
    const deleted = await fetch(`${second.baseUrl}/sandboxes/${id}`, {
      method: 'DELETE',
      headers: { authorization: `Bearer ${key}` },
    });
    t.ok(deleted.ok, `DELETE answered ${deleted.status}`);
    await stopGracefully(second);
    t.same(
      await jobRuns(dataDir, env, QUEUES.deploy, id),
      { runs: 1, finished: true },
      'deployed by one run',
    );
  },
);
