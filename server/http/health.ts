import type { Plugin } from '@hapi/hapi';

/** GET /healthz: liveness, for load balancers and orchestrators (not logged: server.ts). */
export const healthRoute: Plugin<void> = {
  name: 'twinbox-health',
  register(server) {
    server.route({
      method: 'GET',
      path: '/healthz',
      options: { auth: false, description: 'Liveness: 200 while the server runs' },
      handler: () => ({ status: 'ok' }),
    });
  },
};
