import Hapi from '@hapi/hapi';

// Baseline: one hapi route, no auth, no validation, no logging, answering the same object as Twinbox's
// GET (BENCH_BODY) so the payload is the same size.
const body: unknown = JSON.parse(process.env.BENCH_BODY ?? '{}');
const server = Hapi.server({ port: 0, host: '127.0.0.1' });
server.route({ method: 'GET', path: '/sandboxes/{id}', handler: () => body });
await server.start();
process.stdout.write(`listening ${server.info.port}\n`);
