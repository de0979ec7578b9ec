import type { Test } from 'tap';
import type { Deployer, DeployResult } from '../../server/sandboxes/deployer.ts';
import type { SandboxRecord } from '../../server/store/records.ts';
import { createUser, startTestTwinbox, type TestTwinbox, type TestUser } from '../helpers/twinbox.ts';

/**
 * A deployer for tests of the client, the Action and the CLI, which run against a live Twinbox without
 * the deploy engine: it answers after `delayMs` with connection details shaped like the real engine's
 * (or fails with `failWith`). It stands in for the machinery behind the API, not for the API: every
 * request still goes through Twinbox's real routes, auth, validation and lifecycle over HTTP.
 */
export class ScriptedDeployer implements Deployer {
  failWith: string | undefined;
  /** Never finish: the sandbox stays `building` (for timeouts). */
  hang = false;

  constructor(public delayMs = 1200) {}

  async deploy(sandbox: SandboxRecord, signal: AbortSignal): Promise<DeployResult> {
    if (this.hang)
      await new Promise((_, reject) => signal.addEventListener('abort', () => reject(new Error('aborted'))));
    await new Promise((resolve) => setTimeout(resolve, this.delayMs));
    if (this.failWith) throw new Error(this.failWith);
    return readyResult(sandbox);
  }

  async teardown(): Promise<void> {}
}

export function readyResult(sandbox: SandboxRecord): DeployResult {
  const token = `ghp_twin${sandbox.id.replace(/-/g, '').slice(0, 24)}`;
  const twins = Object.fromEntries(
    (sandbox.twin_names.length ? sandbox.twin_names : ['github']).map((name, i) => [
      name,
      {
        base_url: `http://127.0.0.1:${41000 + i}`,
        admin_url: `http://127.0.0.1:${41000 + i}/_twin`,
        env_vars: {
          [`${name.toUpperCase()}_TOKEN`]: `${token}${name}`,
          [`${name.toUpperCase()}_API_URL`]: `http://127.0.0.1:${41000 + i}`,
        },
      },
    ]),
  );
  const generated = Object.assign({}, ...Object.values(twins).map((twin) => twin.env_vars)) as Record<
    string,
    string
  >;
  return {
    app_url: `http://127.0.0.1:40999/${sandbox.id}`,
    twins,
    env_vars: { ...generated, ...sandbox.env },
    isolation: 'none',
  };
}

export interface LiveTwinbox {
  tb: TestTwinbox;
  baseUrl: string;
  user: TestUser;
  deployer: ScriptedDeployer;
}

/** A Twinbox listening on a loopback port with one free-plan user; stopped when the test ends. */
export async function startLiveTwinbox(
  t: Test,
  env: Record<string, string> = {},
  withDeployer = true,
): Promise<LiveTwinbox> {
  const deployer = new ScriptedDeployer();
  const tb = await startTestTwinbox(
    t,
    { TWINBOX_AUTH_IP_LIMIT: '1000', ...env },
    withDeployer ? { deployer } : {},
  );
  await tb.server.start();
  const user = await createUser(tb);
  return { tb, baseUrl: tb.server.info.uri, user, deployer };
}
