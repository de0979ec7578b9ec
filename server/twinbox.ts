import type { Server } from '@hapi/hapi';
import type { Logger } from 'pino';
import { readFileSync } from 'node:fs';
import type { Config } from './config.ts';
import type { Store } from './store/store.ts';
import { openLowdbStore } from './store/lowdb-store.ts';
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
import { DeployEvents } from './sandboxes/deploy-events.ts';
import { jobQueueIdentity, openJobQueue, type JobQueue } from './jobs/index.ts';
import { SandboxService } from './sandboxes/service.ts';
import { TtlReaper } from './sandboxes/reaper.ts';
import type { Deployer } from './sandboxes/deployer.ts';
import { createDeployEngine, type DeployEngine } from './deploy/index.ts';
import { sandboxSourceCredentials } from './deploy/steps/source-credentials.ts';
import { createListener, mountApi } from './server.ts';
import type { GitHubApp } from '../app/index.ts';
import { loadPart } from './load-part.ts';
import { chooseLogFormat, createLogger } from './logger.ts';
import { githubWebHosts } from './sandboxes/pull-request-url.ts';
import { attachRouter, sandboxHosts } from './router/index.ts';
import { createTimeline, type Timeline } from './timeline/index.ts';
import { Cluster, localTwinReach, NO_LOCAL_SANDBOXES, processRole } from './runners/index.ts';

const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
  version: string;
};

/** A promise and the function that keeps it: a seam that breaks a cycle of createTwinbox's wiring. */
function promiseOf<T>(): { promise: Promise<T>; keep: (value: T) => void } {
  let keep: (value: T) => void = () => {};
  const promise = new Promise<T>((resolve) => (keep = resolve));
  return { promise, keep };
}

/** How often lapsed sign-in records (OAuth flows, rate-limit counters, revocations) are swept. */
const SWEEP_INTERVAL_MS = 10 * 60_000;

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
  /** The durable job queue: deploys and GitHub deliveries (server/jobs/). */
  jobs: JobQueue;
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
  let openedJobs: JobQueue | undefined;
  try {
    // The PostgreSQL stack and the GitHub App (probot) load only when configured (load-part.ts).
    const store = (opened = config.databaseUrl
      ? await (
          await loadPart('the PostgreSQL store', () => import('./store/postgres/store.ts'))
        ).openPostgresStore({
          url: config.databaseUrl,
          log: (level, message) => logger[level](message),
        })
      : await openLowdbStore(config.dataDir));
    // Beside the Store it goes with: pg-boss on its database (migrated by now), else its `jobs` collection.
    const jobs = (openedJobs = await openJobQueue({
      databaseUrl: config.databaseUrl,
      store,
      logger,
      leaseSeconds: config.jobLeaseSeconds,
      identity: jobQueueIdentity(config),
      keyRetentionDays: config.jobKeyRetentionDays,
    }));
    const accounts = new Accounts(store);
    const apiKeys = new ApiKeys(store, (error) =>
      logger.warn({ err: error }, 'could not record API key use'),
    );
    const sessions = await Sessions.create({
      secret: config.jwtSecret,
      store,
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
    // The listener before what is behind it: its port, known only once it listens (PORT=0 in tests), makes
    // the public URLs, so they are made when asked for.
    const server = createListener({
      port: config.port,
      host: config.bindHost,
      logger,
      validateResponses: options.validateResponses ?? config.env === 'test',
    });
    const publicUrl = () => identity.urls(Number(server.info.port)).publicUrl;
    // Apps and twins are reached through Twinbox's own port, by host name (docs/routing.md).
    const sandboxUrls = () => {
      const hosts = () => sandboxHosts(config.sandboxDomain, new URL(publicUrl()));
      return {
        appUrl: (id: string) => hosts().appUrl(id),
        twinUrl: (id: string, twin: string) => hosts().twinUrl(id, twin),
      };
    };
    // Each deploy fetches with its sandbox's own GitHub token, asked for when its source step runs: the
    // installation's when the GitHub App started it, else the owner's connection. A cycle: the App mints
    // those tokens, yet is built on the sandboxes it deploys (App -> sandboxes -> lifecycle -> deployer ->
    // these credentials). Its seam is this promise of the App, made here and kept where the App is built;
    // no deploy runs before then (startDeploying comes last).
    const builtGitHubApp = promiseOf<GitHubApp>();
    const sourceCredentials = sandboxSourceCredentials({
      installationToken: config.githubApp
        ? async (id) => (await builtGitHubApp.promise).installationToken(id)
        : undefined,
      connectionToken: (accountId) => identity.github.connections.tokenFor(accountId),
      // In production each owner's own credentials are used, never a server-wide token.
      serverToken: config.env === 'production' ? undefined : config.githubToken,
      logger,
    });
    // API, runner or both (TWINBOX_ROLE, docs/scaling.md): an API process runs no sandbox.
    const role = processRole(config);
    // The deployer and the lifecycle need each other: what the engine tells (a step, a crash, blocked
    // egress) goes through this channel, made before both; the lifecycle and the timeline subscribe to it.
    const deployEvents = new DeployEvents();
    // A deployer passed in (tests of the lifecycle) wins; otherwise the embedded engine unless turned off.
    const engine: DeployEngine | undefined =
      options.deployer || config.deployEngine === 'none' || !role.runsSandboxes
        ? undefined
        : await createDeployEngine({
            config,
            logger,
            catalog,
            store,
            urls: sandboxUrls(),
            sourceCredentials,
            events: deployEvents,
          });
    const lifecycle = new SandboxLifecycle({
      store,
      logger,
      deployer: options.deployer ?? engine?.deployer,
      concurrency: config.deployConcurrency,
      jobs,
      runnerId: role.runnerId,
      queuesForRunners: !role.runsSandboxes,
      deployEvents,
      // The router's directory of this process's sandboxes stays current.
      onChange: engine && ((sandbox) => engine.directory.observe(sandbox)),
    });
    const twinSocket =
      engine && ((id: string, twin: string) => engine.directory.socketFor(id, { kind: 'twin', name: twin }));
    const cluster = role.shared
      ? new Cluster({
          config,
          role,
          store,
          logger,
          lifecycle,
          localLogs: engine?.deployer.logs,
          twinSocket,
          local: engine && {
            release: (sandbox) => engine.deployer.teardown(sandbox),
            observe: (sandbox) => engine.directory.observe(sandbox),
          },
        })
      : undefined;
    // The inspector and the timeline reach twins wherever their sandbox runs (server/runners/twins.ts).
    const twinReach = cluster?.twins.reach ?? localTwinReach(twinSocket);
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
      deployEvents,
      sandboxes,
      twinReach,
    });
    const reaper = new TtlReaper(store, lifecycle, logger, config.reaperIntervalMs);
    const githubApp = config.githubApp
      ? await (
          await loadPart('the GitHub App', () => import('../app/index.ts'))
        ).createGitHubApp({
          ...config.githubApp,
          apiUrl: config.githubApiUrl,
          store,
          sandboxes,
          lifecycle,
          logger,
          publicUrl,
          freeTtlCapMinutes: config.freeTtlCapMinutes,
          jobs,
        })
      : undefined;
    if (githubApp) builtGitHubApp.keep(githubApp);
    await mountApi(server, {
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
      appLogs: cluster?.logs ?? engine?.deployer.logs,
      timeline: timeline.service,
      twinReach,
      identity,
      githubApp,
      secureCookies: config.publicUrl?.startsWith('https:') ?? false,
      sessionTtlMinutes: config.sessionTtlMinutes,
    });
    // Apps and twins are served on Twinbox's own port, by Host, in front of the API (docs/routing.md).
    await cluster?.attach(server);
    const router =
      // An `all` process without the deploy engine (API tests) keeps no router, as before roles.
      engine || (cluster && !role.runsSandboxes)
        ? attachRouter(server, {
            domain: config.sandboxDomain,
            endpoints: engine?.directory ?? NO_LOCAL_SANDBOXES,
            remote: cluster?.locator,
            logger,
            adminToken: config.adminToken,
            observe: timeline.requests.observe,
          })
        : undefined;
    await reaper.start();
    identity.sweeper.start(SWEEP_INTERVAL_MS);
    timeline.start(SWEEP_INTERVAL_MS);
    await lifecycle.recover();
    await cluster?.start();
    // Only now: a deploy job cut off by a crash runs again, and must find its sandbox `queued` again.
    if (config.jobWorkers) {
      await lifecycle.startDeploying();
      await githubApp?.startWorking();
    }

    let stopping: Promise<void> | undefined;
    const stop = () =>
      (stopping ??= (async () => {
        await reaper.stop();
        await identity.sweeper.stop();
        await router?.close();
        await server.stop({ timeout: 5000 });
        await cluster?.stop();
        // Running jobs are cut off and handed back before what they use closes.
        await jobs.stop();
        await githubApp?.close();
        await lifecycle.stop();
        await engine?.close();
        await timeline.stop();
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
      jobs,
      engine,
      githubApp,
      reaper,
      timeline,
      stop,
    };
  } catch (error) {
    await openedJobs?.stop().catch(() => {});
    await opened?.close().catch(() => {});
    lock.release();
    throw error;
  }
}
