import './sandbox-hosts.ts';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import type { Test } from 'tap';
import { loadConfig } from '../../server/config.ts';
import { createLogger } from '../../server/logger.ts';
import { createTwinbox, type Twinbox, type TwinboxOptions } from '../../server/twinbox.ts';
import type { Plan } from '../../server/store/records.ts';
import { schemaForDataDir } from './postgres.ts';
import { TEST_POD_BUNDLE_DIR } from './process.ts';

export async function tempDir(t: Test, prefix = 'twinbox-test-'): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix));
  // Retries: a process that just stopped may still be letting go of a file in it (ENOTEMPTY, EBUSY), and
  // a teardown that throws ends tap's teardowns there, leaving the older ones (processes to kill) undone.
  t.teardown(() => rm(dir, { recursive: true, force: true, maxRetries: 3 }));
  return dir;
}

/** Every log line a test Twinbox writes, so tests can assert what never reaches the log. */
export class LogCapture extends Writable {
  readonly lines: string[] = [];
  override _write(chunk: Buffer, _encoding: string, done: () => void): void {
    this.lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
    done();
  }
  text(): string {
    return this.lines.join('\n');
  }
}

export interface TestTwinbox extends Twinbox {
  logs: LogCapture;
  dataDir: string;
}

/** A Twinbox on a fresh data dir (or `dataDir`), stopped when the test ends. */
export async function startTestTwinbox(
  t: Test,
  env: Record<string, string> = {},
  options: TwinboxOptions & { dataDir?: string } = {},
): Promise<TestTwinbox> {
  const dataDir = options.dataDir ?? (await tempDir(t));
  // TWINBOX_TEST_STORE=postgres runs a test on the PostgreSQL store (docs/store.md), lowdb otherwise.
  const store =
    process.env.TWINBOX_TEST_STORE === 'postgres'
      ? { TWINBOX_DATABASE_URL: await schemaForDataDir(dataDir) }
      : {};
  const config = loadConfig({
    ...store,
    NODE_ENV: 'test',
    PORT: '0',
    TWINBOX_DATA_DIR: dataDir,
    LOG_LEVEL: 'info',
    // API tests see sandboxes stay queued; deploy tests turn the engine on with TWINBOX_DEPLOY_ENGINE=local.
    TWINBOX_DEPLOY_ENGINE: 'none',
    TWINBOX_POD_BUNDLE_DIR: TEST_POD_BUNDLE_DIR,
    // Most tests make more sandboxes than a free account may hold at once; the quota tests set their own.
    TWINBOX_SANDBOX_QUOTA_FREE: '1000',
    TWINBOX_SANDBOX_QUOTA_PRO: '1000',
    ...env,
  });
  const logs = new LogCapture();
  const twinbox = await createTwinbox(config, {
    logger: createLogger(config.logLevel, logs),
    validateResponses: true,
    ...options,
  });
  t.teardown(() => twinbox.stop());
  return Object.assign(twinbox, { logs, dataDir });
}

export interface TestUser {
  id: string;
  email: string;
  key: string;
  keyId: string;
}

let userCounter = 0;

export async function createUser(twinbox: Twinbox, plan: Plan = 'free', email?: string): Promise<TestUser> {
  const account = await twinbox.accounts.create(
    email ?? `user${++userCounter}-${Date.now()}@example.com`,
    plan,
  );
  const { key, record } = await twinbox.apiKeys.issue(account.id);
  return { id: account.id, email: account.email, key, keyId: record.id };
}

export interface Call {
  method?: string;
  url: string;
  token?: string;
  payload?: unknown;
  headers?: Record<string, string>;
}

export async function call(twinbox: Twinbox, { method = 'GET', url, token, payload, headers = {} }: Call) {
  const response = await twinbox.server.inject({
    method,
    url,
    payload: payload as object | string | undefined,
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...headers },
  });
  let body: any;
  try {
    body = JSON.parse(response.payload);
  } catch {
    body = response.payload;
  }
  return { status: response.statusCode, headers: response.headers, body };
}

/** `POST /sandboxes` as `token`; a plain valid request unless `payload` says otherwise. */
export function createSandbox(
  twinbox: Twinbox,
  token: string,
  payload: unknown = { repo: 'a/b', branch: 'm' },
) {
  return call(twinbox, { method: 'POST', url: '/sandboxes', token, payload });
}
