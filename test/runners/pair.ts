import type { Test } from 'tap';
import { startTestTwinbox, tempDir, type TestTwinbox } from '../helpers/twinbox.ts';
import { exampleFiles, githubToDeployFrom } from '../helpers/deploy.ts';
import { freshSchema } from '../helpers/postgres.ts';

/**
 * An API process and a runner (docs/scaling.md), each a whole Twinbox in this test process, on one fresh
 * PostgreSQL schema, deploying octocat/shop (the zero-dep example) from a GitHub twin. The heartbeat never
 * goes stale here: tests of a lost runner make it so themselves.
 */
export async function apiAndRunner(
  t: Test,
  { adminToken, runnerId }: { adminToken: string; runnerId: string },
): Promise<{ api: TestTwinbox; runner: TestTwinbox }> {
  const gh = await githubToDeployFrom(t);
  await gh.createRepo({ owner: 'octocat', name: 'shop', files: await exampleFiles('zero-dep') });
  const { url } = await freshSchema();
  const common = {
    TWINBOX_DATABASE_URL: url,
    TWINBOX_ADMIN_TOKEN: adminToken,
    GITHUB_API_URL: gh.baseUrl,
    GITHUB_TOKEN: gh.token,
    GITHUB_OAUTH_URL: gh.baseUrl,
    TWINBOX_HEALTH_TIMEOUT_MS: '60000',
    TWINBOX_RUNNER_STALE_SECONDS: '3600',
  };
  const start = async (env: Record<string, string>): Promise<TestTwinbox> => {
    const tb = await startTestTwinbox(t, { ...common, ...env }, { dataDir: await tempDir(t) });
    await tb.server.start();
    return tb;
  };
  const api = await start({ TWINBOX_ROLE: 'api' });
  const runner = await start({
    TWINBOX_ROLE: 'runner',
    TWINBOX_DEPLOY_ENGINE: 'local',
    TWINBOX_RUNNER_ID: runnerId,
  });
  return { api, runner };
}
