import Joi from 'joi';
import type { Plugin } from '@hapi/hapi';
import { ADMIN } from '../auth/bearer.ts';
import type { AppLogReader } from '../sandboxes/routes.ts';

/** Where a runner serves its sandboxes' deploy logs to the API processes (admin token). */
export const RUNNER_LOGS_PATH = '/runner/sandboxes/{id}/logs';

/**
 * What API processes read from a runner besides the router's traffic (docs/scaling.md): a sandbox's
 * deploy and app log, by byte offset. Internal: authenticated with TWINBOX_ADMIN_TOKEN, which every
 * process of one installation shares; not in the public API description.
 */
export const runnerRoutes: Plugin<{ logs: AppLogReader }> = {
  name: 'twinbox-runner',
  register(server, { logs }) {
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
  },
};
