import Hapi from '@hapi/hapi';
import pino from 'pino';
import { attachRouter } from '../../server/router/index.ts';

/**
 * Twinbox's side of the router benchmark: a hapi server with the sandbox router in front of it, as
 * Twinbox runs it, serving one live sandbox whose app is at BENCH_SOCKET.
 */
const socketPath = process.env.BENCH_SOCKET!;
const server = Hapi.server({ port: 0, host: '127.0.0.1' });
server.route({ method: 'GET', path: '/healthz', handler: () => ({ status: 'ok' }) });
attachRouter(server, {
  domain: 'localhost',
  logger: pino({ level: 'warn' }, pino.destination(2)),
  endpoints: { stateOf: () => ({ state: 'live' }), socketFor: () => socketPath },
});
await server.start();
process.stdout.write(`listening ${server.info.port}\n`);
