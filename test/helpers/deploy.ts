import type { Test } from 'tap';
import { startGitHubTwin, type StandaloneGitHubTwin } from '../../examples/github-twin.ts';
import { call, startTestTwinbox, type TestTwinbox, type TestUser } from './twinbox.ts';

export { exampleFiles } from '../../examples/files.ts';

/** A GitHub twin to deploy from, closed when the test ends. */
export async function githubToDeployFrom(t: Test): Promise<StandaloneGitHubTwin> {
  const gh = await startGitHubTwin({ seed: { users: [{ login: 'octocat' }] } });
  t.teardown(() => gh.close());
  return gh;
}

/** A Twinbox with the embedded deploy engine, fetching source from `gh`. */
export async function deployingTwinbox(
  t: Test,
  gh: StandaloneGitHubTwin,
  env: Record<string, string> = {},
  dataDir?: string,
): Promise<TestTwinbox> {
  const tb = await startTestTwinbox(
    t,
    {
      TWINBOX_DEPLOY_ENGINE: 'local',
      GITHUB_API_URL: gh.baseUrl,
      GITHUB_TOKEN: gh.token,
      GITHUB_OAUTH_URL: gh.baseUrl,
      // Generous: on a loaded 2-core machine an app can take seconds to bind; the timeout test sets its own.
      TWINBOX_HEALTH_TIMEOUT_MS: '30000',
      ...env,
    },
    dataDir ? { dataDir } : {},
  );
  // Apps and twins are reached through Twinbox's own port (the router), so it listens.
  await tb.server.start();
  return tb;
}

/** Creates a sandbox as `user` and waits until it settles (ready, failed...); returns its API view. */
export async function deploySandbox(
  tb: TestTwinbox,
  user: TestUser,
  payload: Record<string, unknown>,
  timeoutMs = 240_000,
): Promise<any> {
  const { body } = await call(tb, { method: 'POST', url: '/sandboxes', token: user.key, payload });
  if (!body.sandbox_id) throw new Error(`POST /sandboxes refused: ${JSON.stringify(body)}`);
  return settle(tb, user, body.sandbox_id, timeoutMs);
}

/**
 * Polls the sandbox until its status is not queued/building (or `timeoutMs` passes). The default is
 * generous: several deploys of one test queue behind TWINBOX_DEPLOY_CONCURRENCY, and at a load average
 * of 19 five failing deploys took more than a minute to settle. It bounds a hang, it measures nothing.
 */
export async function settle(tb: TestTwinbox, user: TestUser, id: string, timeoutMs = 180_000): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const { body } = await call(tb, { url: `/sandboxes/${id}`, token: user.key });
    if (body.status !== 'queued' && body.status !== 'building') return body;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`sandbox ${id} did not settle in ${timeoutMs} ms`);
}

/**
 * Polls `check` until it holds. The bound only ends a hang, it measures nothing: with three test files at
 * once beside other work, a sandbox's cleanup after DELETE took more than 10 s at a load average of 60.
 */
export async function until(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error(`timed out waiting for ${what}`);
}
