import type { Server } from '@hapi/hapi';
import type { Logger } from 'pino';
import { readFileSync } from 'node:fs';
import type { Config } from './config.ts';
import type { Store } from './store/store.ts';
import { openLowdbStore } from './store/lowdb-store.ts';
import { openPostgresStore } from './store/postgres/store.ts';
import { lockDataDir, type DataDirLock } from './store/data-dir-lock.ts';
import { ApiKeys } from './auth/api-keys.ts';
import { Sessions } from './auth/sessions.ts';
import { Accounts } from './identity/accounts.ts';
import { createIdentity, type Identity } from './identity/index.ts';
import type { Clock } from './identity/clock.ts';
import { builtInCatalog, type TwinCatalog } from './twins/catalog.ts';
import { ScenarioDirectory } from './scenarios/directory.ts';
import { ScenarioService } from './scenarios/service.ts';
import { SandboxLifecycle } from './sandboxes/lifecycle.ts';
import { SandboxService } from './sandboxes/service.ts';
import { TtlReaper } from './sandboxes/reaper.ts';
import type { Deployer } from './sandboxes/deployer.ts';
import { createDeployEngine, type DeployEngine } from './deploy/index.ts';
import { createServer } from './server.ts';
import { createGitHubApp, type GitHubApp } from '../app/index.ts';
import { chooseLogFormat, createLogger } from './logger.ts';
import { githubWebHosts } from './sandboxes/pull-request-url.ts';
import { attachRouter, sandboxHosts } from './router/index.ts';
import { createTimeline, type Timeline } from './timeline/index.ts';

const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
  version: string;
};

export interface TwinboxOptions {
  logger?: Logger;
  deployer?: Deployer;
  catalog?: TwinCatalog;
  validateResponses?: boolean;
  /** Time source of identity flows (code expiry, rate limits, OAuth state); tests move it. */
  clock?: Clock;
}

/** A whole Twinbox: its server and the parts behind it, so tests and main.ts can reach each one. */
export interface Twinbox {
  config: Config;
  server: Server;
  store: Store;
  logger: Logger;
  accounts: Accounts;
  apiKeys: ApiKeys;
  sessions: Sessions;
  identity: Identity;
  lifecycle: SandboxLifecycle;
  /** The embedded deploy engine, unless a deployer was passed in or TWINBOX_DEPLOY_ENGINE=none. */
  engine: DeployEngine | undefined;
  /** The GitHub App (app/), when GITHUB_APP_ID, GITHUB_APP_PRIVATE_KEY and GITHUB_WEBHOOK_SECRET are set. */
  githubApp: GitHubApp | undefined;
  reaper: TtlReaper;
  /** The sandbox timeline (GET /sandboxes/{id}/timeline) and what feeds it. */
  timeline: Timeline;
  /** Stops the reaper, the deploy queue and the server, then releases the data directory. */
  stop(): Promise<void>;
}

/**
 * Assembles Twinbox on the embedded defaults: takes the data directory, opens the store, recovers
 * sandboxes left by a previous run and starts the TTL reaper. The server is built but not listening.
 */
export async function createTwinbox(config: Config, options: TwinboxOptions = {}): Promise<Twinbox> {
  const logger =
    options.logger ??
    createLogger(
      config.logLevel,
      undefined,
      chooseLogFormat(config.logFormat, config.env, process.stdout.isTTY === true),
    );
  // The data directory keeps this process's own files (twin state, workspaces, logs) on either store,
  // so it stays one process's; a database is shared by any number of processes (docs/store.md).
  const lock: DataDirLock = lockDataDir(config.dataDir);
  let opened: Store | undefined;
  try {
    const store = (opened = config.databaseUrl
      ? await openPostgresStore({
          url: config.databaseUrl,
          log: (level, message) => logger[level](message),
        })
      : await openLowdbStore(config.dataDir));
    const accounts = new Accounts(store);
    const apiKeys = new ApiKeys(store, (error) =>
      logger.warn({ err: error }, 'could not record API key use'),
    );
    const sessions = await Sessions.create({
      secret: config.jwtSecret,
      dataDir: config.dataDir,
      ttlMinutes: config.sessionTtlMinutes,
    });
    const identity = await createIdentity({
      config,
      store,
      accounts,
      sessions,
      apiKeys,
      logger,
      clock: options.clock,
    });
    const catalog = options.catalog ?? builtInCatalog;
    // Apps and twins are reached through Twinbox's own port, by host name (docs/routing.md). The port is
    // known only once the server listens (PORT=0 in tests), so the URLs are made when a deploy asks.
    const sandboxUrls = () => {
      const hosts = () =>
        sandboxHosts(config.sandboxDomain, new URL(identity.urls(Number(server.info.port)).publicUrl));
      return {
        appUrl: (id: string) => hosts().appUrl(id),
        twinUrl: (id: string, twin: string) => hosts().twinUrl(id, twin),
      };
    };
    // A deployer passed in (tests of the lifecycle) wins; otherwise the embedded engine unless turned off.
    const engine: DeployEngine | undefined =
      options.deployer || config.deployEngine === 'none'
        ? undefined
        : await createDeployEngine({ config, logger, catalog, store, urls: sandboxUrls() });
    const lifecycle = new SandboxLifecycle(
      store,
      logger,
      options.deployer ?? engine?.deployer,
      config.deployConcurrency,
    );
    engine?.attach(lifecycle);
    const scenarioDirectory = new ScenarioDirectory(store);
    const scenarios = new ScenarioService(store, catalog, scenarioDirectory);
    const sandboxes = new SandboxService(store, accounts, catalog, scenarioDirectory, lifecycle, {
      production: config.env === 'production',
      freeTtlCapMinutes: config.freeTtlCapMinutes,
      githubWebHosts: githubWebHosts(config.githubWebUrl),
      sandboxQuota: config.sandboxQuota,
    });
    const timeline = createTimeline({
      store,
      logger,
      lifecycle,
      sandboxes,
      twinSocket: engine && ((id, twin) => engine.directory.socketFor(id, { kind: 'twin', name: twin })),
    });
    if (engine) engine.deployer.onStep = timeline.onStep;
    const reaper = new TtlReaper(store, lifecycle, logger, config.reaperIntervalMs);
    const githubApp = config.githubApp
      ? await createGitHubApp({
          ...config.githubApp,
          apiUrl: config.githubApiUrl,
          store,
          sandboxes,
          lifecycle,
          logger,
          publicUrl: () => identity.urls(Number(server.info.port)).publicUrl,
          freeTtlCapMinutes: config.freeTtlCapMinutes,
        })
      : undefined;
    const server = await createServer({
      port: config.port,
      host: config.bindHost,
      version,
      logger,
      store,
      apiKeys,
      sessions,
      accounts,
      catalog,
      sandboxes,
      scenarios,
      adminToken: config.adminToken,
      appLogs: engine?.deployer.logs,
      timeline: timeline.service,
      twinSocketOf: engine
        ? (id: string, twin: string) => engine.directory.socketFor(id, { kind: 'twin', name: twin })
        : undefined,
      identity,
      githubApp,
      secureCookies: config.publicUrl?.startsWith('https:') ?? false,
      sessionTtlMinutes: config.sessionTtlMinutes,
      validateResponses: options.validateResponses ?? config.env === 'test',
    });
    // Apps and twins are served on Twinbox's own port, by Host, in front of the API (docs/routing.md).
    const router = engine
      ? attachRouter(server, {
          domain: config.sandboxDomain,
          endpoints: engine.directory,
          logger,
          adminToken: config.adminToken,
          observe: timeline.requests.observe,
        })
      : undefined;
    await reaper.start();
    await lifecycle.recover();

    let stopping: Promise<void> | undefined;
    const stop = () =>
      (stopping ??= (async () => {
        await reaper.stop();
        await router?.close();
        await server.stop({ timeout: 5000 });
        await githubApp?.close();
        await lifecycle.stop();
        await engine?.close();
        await timeline.idle();
        await identity.mail.close();
        await store.close();
        lock.release();
      })());
    return {
      config,
      server,
      store,
      logger,
      accounts,
      apiKeys,
      sessions,
      identity,
      lifecycle,
      engine,
      githubApp,
      reaper,
      timeline,
      stop,
    };
  } catch (error) {
    await opened?.close().catch(() => {});
    lock.release();
    throw error;
  }
}
