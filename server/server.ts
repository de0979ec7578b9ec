import Hapi from '@hapi/hapi';
import hapiPino from 'hapi-pino';
import type { Logger } from 'pino';
import type { Store } from './store/store.ts';
import type { ApiKeys } from './auth/api-keys.ts';
import type { Sessions } from './auth/sessions.ts';
import type { Accounts } from './identity/accounts.ts';
import type { TwinCatalog } from './twins/catalog.ts';
import type { SandboxService } from './sandboxes/service.ts';
import type { ScenarioService } from './scenarios/service.ts';
import { scenarioRoutes } from './scenarios/routes.ts';
import { BEARER, bearerAuth } from './auth/bearer.ts';
import { decorateErrorBody, validationFailAction } from './errors.ts';
import { guardClientErrors } from './http/client-errors.ts';
import { sandboxRoutes, type AppLogReader } from './sandboxes/routes.ts';
import { hotSandboxRead } from './sandboxes/hot-read.ts';
import { twinCatalogRoutes } from './twin-catalog/routes.ts';
import { twinSetRoutes } from './twin-sets/routes.ts';
import { openApiRoute } from './http/openapi.ts';
import { healthRoute } from './http/health.ts';
import { adminRoutes } from './admin/routes.ts';
import type { Identity } from './identity/index.ts';
import { identityRoutes } from './identity/routes.ts';
import { defineCookies } from './identity/cookies.ts';
import { apiKeyRoutes } from './auth/api-key-routes.ts';
import { githubRoutes } from './identity/github/routes.ts';
import { webRoutes } from './web/routes.ts';
import { assetRoutes } from './web/assets.ts';
import { renderErrorPages } from './web/respond.ts';
import { WebSessions } from './web/session.ts';
import { dashboardRoutes } from './web/dashboard/routes.ts';
import type { GitHubApp } from '../app/index.ts';
import { githubAppRoutes } from '../app/routes.ts';
import { timelineRoutes, type TimelineService } from './timeline/index.ts';
import type { TwinAdminReach } from './twins/kit/admin-client.ts';

export interface ListenerOptions {
  port: number;
  host: string;
  logger: Logger;
  /** Check every response against its declared schema (tests); off in production for speed. */
  validateResponses: boolean;
}

/**
 * The hapi server Twinbox listens with, bare: made before the parts behind it, which read its port once it
 * listens (public URLs; PORT=0 in tests). mountApi() registers the API on it.
 */
export function createListener(options: ListenerOptions): Hapi.Server {
  const server = Hapi.server({
    port: options.port,
    host: options.host,
    routes: {
      // No byte ranges: no route serves a file, and hapi refuses a bad Range header after onPreResponse,
      // so its 416 had no `detail`. A Range header is now ignored (RFC 9110 allows it): the whole body.
      response: { sample: options.validateResponses ? 100 : 0, failAction: 'error', ranges: false },
      // Our own failAction everywhere, so every 400 says what was wrong in `detail`.
      validate: { failAction: validationFailAction },
      payload: { maxBytes: 256 * 1024 },
    },
    router: { stripTrailingSlash: true },
  });
  guardClientErrors(server.listener, options.logger);
  return server;
}

export interface ApiDeps {
  version: string;
  logger: Logger;
  store: Store;
  apiKeys: ApiKeys;
  sessions: Sessions;
  accounts: Accounts;
  catalog: TwinCatalog;
  sandboxes: SandboxService;
  scenarios: ScenarioService;
  /** GET /sandboxes/{id}/timeline (server/timeline/); absent: the route is not mounted. */
  timeline?: TimelineService;
  /** The deploy engine's logs behind GET /sandboxes/{id}/logs; without it that route answers empty. */
  appLogs?: AppLogReader;
  /** A client of a sandbox's twin wherever the sandbox runs, for the dashboard's twin inspector. */
  twinReach?: TwinAdminReach;
  adminToken: string | undefined;
  /** E-mail sign-up and sign-in, GitHub login and connect, web pages; absent: those routes are not mounted. */
  identity?: Identity;
  /** Session cookies get the Secure flag (the public URL is https). */
  secureCookies?: boolean;
  sessionTtlMinutes?: number;
  /** The GitHub App; present: `POST /github/webhooks` is mounted. */
  githubApp?: GitHubApp;
}

/** Registers every plugin of the API on the listener, not yet listening (tests use .inject). */
export async function mountApi(server: Hapi.Server, deps: ApiDeps): Promise<void> {
  await server.register({
    plugin: hapiPino,
    options: {
      instance: deps.logger,
      // Health checks would drown the log.
      ignorePaths: ['/healthz'],
      logPayload: false,
      // Bind only the request id: serializing the whole request (headers included) for every
      // request's child logger cost a fifth of an authenticated GET, and headers carry credentials.
      // The completion line still names method, path, status and time.
      getChildBindings: (request: { info: { id: string } }) => ({ req_id: request.info.id }),
      // The completion line is `info`: below that level, skip building its message and fields at all.
      logRequestComplete: () => deps.logger.isLevelEnabled('info'),
    },
  });
  await server.register({
    plugin: bearerAuth,
    options: {
      store: deps.store,
      apiKeys: deps.apiKeys,
      sessions: deps.sessions,
      adminToken: deps.adminToken,
    },
  });
  server.auth.default(BEARER);
  server.ext('onPreResponse', decorateErrorBody);

  await server.register({ plugin: twinCatalogRoutes, options: { catalog: deps.catalog } });
  await server.register({ plugin: openApiRoute, options: { version: deps.version } });
  await server.register({ plugin: healthRoute });
  await server.register({
    plugin: sandboxRoutes,
    options: { sandboxes: deps.sandboxes, appLogs: deps.appLogs },
  });
  // GET /sandboxes/{id}, the read clients poll, answered in front of hapi's lifecycle (hot-read.ts).
  await server.register({
    plugin: hotSandboxRead,
    options: {
      sandboxes: deps.sandboxes,
      store: deps.store,
      apiKeys: deps.apiKeys,
      sessions: deps.sessions,
      logger: deps.logger,
    },
  });
  await server.register({
    plugin: twinSetRoutes,
    options: { sandboxes: deps.sandboxes, appLogs: deps.appLogs },
  });
  if (deps.timeline) await server.register({ plugin: timelineRoutes, options: { timeline: deps.timeline } });
  await server.register({ plugin: scenarioRoutes, options: { scenarios: deps.scenarios } });
  await server.register({ plugin: apiKeyRoutes, options: { apiKeys: deps.apiKeys } });
  if (deps.identity) {
    defineCookies(server, {
      secure: deps.secureCookies ?? false,
      sessionTtlMinutes: deps.sessionTtlMinutes ?? 1440,
    });
    await server.register({
      plugin: identityRoutes,
      options: { emailAuth: deps.identity.emailAuth, sessions: deps.sessions, store: deps.store },
    });
    const identity = deps.identity;
    await server.register({
      plugin: githubRoutes,
      options: {
        ...identity.github,
        sessions: deps.sessions,
        store: deps.store,
        urls: () => identity.urls(Number(server.info.port)),
      },
    });
    const web = new WebSessions(
      deps.sessions,
      deps.store,
      identity.csrfKey,
      () => identity.urls(Number(server.info.port)).publicUrl,
    );
    renderErrorPages(server);
    await server.register({ plugin: assetRoutes });
    await server.register({
      plugin: webRoutes,
      options: {
        emailAuth: identity.emailAuth,
        apiKeys: deps.apiKeys,
        store: deps.store,
        web,
        githubConnections: identity.github.connections,
      },
    });
    await server.register({
      plugin: dashboardRoutes,
      options: {
        web,
        sandboxes: deps.sandboxes,
        appLogs: deps.appLogs,
        twinReach: deps.twinReach,
        timeline: deps.timeline,
      },
    });
  }
  if (deps.githubApp) {
    await server.register({ plugin: githubAppRoutes, options: { app: deps.githubApp } });
  }
  if (deps.adminToken) {
    await server.register({
      plugin: adminRoutes,
      options: { accounts: deps.accounts, apiKeys: deps.apiKeys },
    });
  }
}
