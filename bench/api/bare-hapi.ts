import Hapi from '@hapi/hapi';

// Baseline: one hapi route, no auth, no validation, no logging.
const server = Hapi.server({ port: 0, host: '127.0.0.1' });
server.route({
  method: 'GET',
  path: '/sandboxes/{id}',
  handler: (request) => ({ sandbox_id: request.params.id, status: 'queued', app_url: null }),
});
await server.start();
process.stdout.write(`listening ${server.info.port}\n`);
