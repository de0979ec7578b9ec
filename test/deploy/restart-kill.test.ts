import t from 'tap';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { groupAlive } from '../../server/deploy/confinement/processes.ts';
import { freePort } from '../../server/deploy/ports.ts';
import { exampleFiles, githubToDeployFrom, until } from '../helpers/deploy.ts';
import { spawnTwinbox, stopGracefully, type TwinboxProcess } from '../helpers/process.ts';
import { schemaForDataDir } from '../helpers/postgres.ts';
import { requireHost } from '../security/isolation-fixtures.ts';
import { checkResumed, createCustomer, dataDirFor, mountsUnder, stripeOf } from './restart-helpers.ts';

/**
 * Restarts lose nothing (issue 14, part 2), the hard way: a Twinbox started as `npm start` does is killed
 * with SIGKILL, and the one started after it resumes its ready sandbox, with nothing of the killed one
 * left running beside it. Each kill comes the moment a twin write was answered (issue 20, part 3): first
 * the sandbox's pod, which hosts the twins, then Twinbox; both writes are there afterwards.
 */

/** The sandbox's app process group, as its pid file records it. */
function recordedApp(dataDir: string, sandboxId: string): number {
  return (
    JSON.parse(readFileSync(join(dataDir, 'run', `${encodeURIComponent(sandboxId)}.pid`), 'utf8')) as {
      pgid: number;
    }
  ).pgid;
}

/** The sandbox's pod slot, as its resume record names it. */
function podSlot(dataDir: string, sandboxId: string): string {
  return (
    JSON.parse(readFileSync(join(dataDir, 'resume', `${sandboxId}.json`), 'utf8')) as { pod_slot: string }
  ).pod_slot;
}

/** The process group of the pod in `slot`, as its pid file records it. */
function recordedPod(dataDir: string, slot: string): number {
  return (JSON.parse(readFileSync(join(dataDir, 'run', 'pods', `${slot}.pid`), 'utf8')) as { pgid: number })
    .pgid;
}

function recordedPods(dataDir: string): number[] {
  const dir = join(dataDir, 'run', 'pods');
  return readdirSync(dir)
    .filter((name) => name.endsWith('.pid'))
    .map((name) => (JSON.parse(readFileSync(join(dir, name), 'utf8')) as { pgid: number }).pgid);
}

async function api(proc: TwinboxProcess, key: string, path: string, init: RequestInit = {}): Promise<any> {
  const res = await fetch(`${proc.baseUrl}${path}`, {
    ...init,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
  });
  const text = await res.text();
  return path.endsWith('/logs') ? text : text && JSON.parse(text);
}

t.test('kill -9 of a Twinbox process: the restarted one resumes its ready sandbox, once', async (t) => {
  if (!requireHost(t, { bwrap: true, root: true })) return;
  const gh = await githubToDeployFrom(t);
  await gh.createRepo({ owner: 'octocat', name: 'shop', files: await exampleFiles('zero-dep') });
  const dataDir = await dataDirFor(t);
  const store: Record<string, string> =
    process.env.TWINBOX_TEST_STORE === 'postgres'
      ? { TWINBOX_DATABASE_URL: await schemaForDataDir(dataDir) }
      : {};
  const env: Record<string, string> = {
    ...store,
    PORT: String(await freePort()),
    TWINBOX_DATA_DIR: dataDir,
    TWINBOX_DEPLOY_ENGINE: 'local',
    GITHUB_API_URL: gh.baseUrl,
    GITHUB_TOKEN: gh.token,
    GITHUB_OAUTH_URL: gh.baseUrl,
    TWINBOX_HEALTH_TIMEOUT_MS: '30000',
    LOG_LEVEL: 'warn',
  };
  const first = await spawnTwinbox(t, env);
  // Written just after Twinbox says it listens (server/bootstrap.ts).
  let key = '';
  await until(
    async () =>
      Boolean((key = (await readFile(join(dataDir, 'dev-api-key'), 'utf8').catch(() => '')).trim())),
    'the local owner key',
  );
  const created = await api(first, key, '/sandboxes', {
    method: 'POST',
    body: JSON.stringify({ repo: 'octocat/shop', branch: 'main', twins: ['stripe'] }),
  });
  if (!created.sandbox_id) throw new Error(`POST /sandboxes refused: ${JSON.stringify(created)}`);
  const id = created.sandbox_id as string;
  let before: any;
  await until(
    async () => !['queued', 'building'].includes((before = await api(first, key, `/sandboxes/${id}`)).status),
    'the deploy',
    120_000,
  );
  if (before.status !== 'ready') t.comment(first.output());
  t.equal(before.status, 'ready', before.error ?? 'deployed');

  // The pod, which hosts the twins, killed the moment a write was answered: Twinbox starts it again and
  // the twin comes back from disk with the customer.
  const stripe = stripeOf(before);
  const podKept = await createCustomer(before, 'pod-kill@example.com');
  process.kill(-recordedPod(dataDir, podSlot(dataDir, id)), 'SIGKILL');
  let afterPodKill: string | undefined;
  await until(
    async () =>
      (afterPodKill = await stripe.customers.retrieve(podKept).then(
        (c) => c.id,
        () => undefined,
      )) !== undefined,
    "the Stripe twin back after its pod's kill -9",
    120_000,
  );
  t.equal(afterPodKill, podKept, 'the customer answered just before the pod was killed is there');

  // Then Twinbox, the moment the next write was answered.
  await createCustomer(before);
  const oldApp = recordedApp(dataDir, id);
  const oldPods = recordedPods(dataDir);
  const slot = podSlot(dataDir, id);
  first.child.kill('SIGKILL');
  await first.exited;
  const second = await spawnTwinbox(t, env);
  // Twinbox listens while it resumes (in the background): wait for the resume to end, either way.
  let logs = '';
  await until(
    async () =>
      /resumed after a Twinbox restart|resume failed/.test(
        (logs = await api(second, key, `/sandboxes/${id}/logs`)),
      ),
    'the resume',
    120_000,
  );
  const after = await api(second, key, `/sandboxes/${id}`);
  await checkResumed(t, before, after, logs);
  const podKeptAfter = await stripeOf(after).customers.retrieve(podKept);
  t.equal(podKeptAfter.id, podKept, 'the customer kept through the pod kill is still there');

  // Never two copies: what the killed Twinbox left is gone, and one new app runs.
  t.notOk(groupAlive(oldApp), "the killed Twinbox's app is gone");
  for (const pod of oldPods) t.notOk(groupAlive(pod), `its pod ${pod} is gone`);
  const newApp = recordedApp(dataDir, id);
  t.not(newApp, oldApp, 'the app runs as a new process');
  t.ok(groupAlive(newApp));
  const namespaces = execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' });
  t.notMatch(namespaces, new RegExp(`-${slot}\\b`), "the old pod's network namespace is removed");
  t.notOk(existsSync(join(dataDir, 'pods', slot)), "the old pod's directory is gone, its state moved");

  t.equal((await api(second, key, `/sandboxes/${id}`, { method: 'DELETE' })).status, 'deleted');
  await stopGracefully(second);
  t.same(mountsUnder(dataDir), [], 'nothing left mounted');
});
