import Joi from 'joi';
import type { Plugin, Request, ResponseToolkit } from '@hapi/hapi';
import { ADMIN } from '../auth/bearer.ts';
import { apiError, notFound } from '../errors.ts';
import type { AppLogReader } from '../sandboxes/routes.ts';
import { ADMIN_PREFIX } from '../twins/runtime/admin.ts';
import type { TwinAdminClient } from '../twins/kit/admin-client.ts';

/** Where a runner serves its sandboxes' deploy logs to the API processes (admin token). */
export const RUNNER_LOGS_PATH = '/runner/sandboxes/{id}/logs';

/**
 * Where a runner passes calls on to the admin API (ADMIN_PREFIX, `/_twinbox`) of a twin in one of its
 * pods, for the twin inspector and the timeline of other processes (admin token). A client whose
 * `adminUrl` is runnerTwinAdminUrl(...) is an ordinary TwinAdminClient.
 */
export const RUNNER_TWIN_ADMIN_PATH = `/runner/sandboxes/{id}/twins/{twin}${ADMIN_PREFIX}/{path*}`;

/** The `adminUrl` of a TwinAdminClient of twin `twin` of sandbox `id`, through the runner at `runnerUrl`. */
export function runnerTwinAdminUrl(runnerUrl: string, sandboxId: string, twin: string): string {
  return `${runnerUrl}/runner/sandboxes/${encodeURIComponent(sandboxId)}/twins/${encodeURIComponent(twin)}${ADMIN_PREFIX}`;
}

/** The twins of the sandboxes this runner holds, as the twin admin route reaches them. */
export interface HeldTwins {
  /**
   * A client of twin `twin` of sandbox `sandboxId` in this process's pod, or why there is none: no such
   * sandbox, no such twin in it, or its pod is not here (not yet, or no longer).
   */
  here(sandboxId: string, twin: string): Promise<TwinAdminClient | 'no-sandbox' | 'no-twin' | 'not-here'>;
}

const ids = {
  id: Joi.string().max(128).required(),
  // The router's rule for twin names (server/router/hosts.ts), so nothing else reaches a socket path.
  twin: Joi.string()
    .pattern(/^[a-z0-9](?:[a-z0-9-]{0,23}[a-z0-9])?$/)
    .required(),
  // The admin API's paths (`state`, `webhooks/deliveries/3/redeliver`): no dots, so no `..`.
  path: Joi.string()
    .pattern(/^[A-Za-z0-9_/-]*$/)
    .max(256)
    .allow(''),
};

/**
 * What API processes read from a runner besides the router's traffic (docs/scaling.md): a sandbox's
 * deploy and app log, by byte offset, and its twins' admin API. Internal: authenticated with
 * TWINBOX_ADMIN_TOKEN, which every process of one installation shares; not in the public API
 * description. The twin's own admin token never leaves the runner's side of the call: the runner reads
 * it from the sandbox's record.
 */
export const runnerRoutes: Plugin<{ logs: AppLogReader; twins: HeldTwins }> = {
  name: 'twinbox-runner',
  register(server, { logs, twins }) {
    server.route({
      method: 'GET',
      path: RUNNER_LOGS_PATH,
      options: {
        auth: { strategy: ADMIN },
        description: "A sandbox's log on this runner, from a byte offset (internal)",
        validate: {
          params: Joi.object({ id: Joi.string().max(128).required() }),
          query: Joi.object({ offset: Joi.number().integer().min(0).default(0) }),
        },
      },
      async handler(request) {
        const { offset } = request.query as { offset: number };
        return logs.slice(String(request.params.id), offset);
      },
    });

    const passOn = async (request: Request, h: ResponseToolkit) => {
      const { id, twin, path } = request.params as { id: string; twin: string; path?: string };
      const client = await twins.here(id, twin);
      if (client === 'no-sandbox') throw notFound(`There is no sandbox ${id}.`);
      if (client === 'no-twin') throw notFound(`Sandbox ${id} has no twin ${twin}.`);
      if (client === 'not-here')
        throw apiError(
          503,
          `The ${twin} twin of sandbox ${id} is not running on this runner.`,
          'twin_not_running',
        );
      const payload = request.payload;
      const body = Buffer.isBuffer(payload) && payload.length > 0 ? payload.toString('utf8') : undefined;
      let answer: { status: number; text: string };
      try {
        answer = await client.send(request.method.toUpperCase(), `/${path ?? ''}${request.url.search}`, body);
      } catch (error) {
        throw apiError(
          502,
          `The ${twin} twin did not answer: ${(error as Error).message}.`,
          'twin_unreachable',
        );
      }
      // The twin's own status and JSON body, so the caller's client reads them as if it had called it.
      return h.response(answer.text).code(answer.status).type('application/json; charset=utf-8');
    };
    const description = 'A call to the admin API of a twin of a sandbox on this runner (internal)';
    server.route({
      method: 'GET',
      path: RUNNER_TWIN_ADMIN_PATH,
      options: { auth: { strategy: ADMIN }, description, validate: { params: Joi.object(ids) } },
      handler: passOn,
    });
    server.route({
      method: ['POST', 'PUT', 'DELETE'],
      path: RUNNER_TWIN_ADMIN_PATH,
      options: {
        auth: { strategy: ADMIN },
        description,
        validate: { params: Joi.object(ids) },
        // Passed on as it came: the twin validates its own bodies.
        payload: { parse: false, output: 'data', maxBytes: 1024 * 1024 },
      },
      handler: passOn,
    });
  },
};
