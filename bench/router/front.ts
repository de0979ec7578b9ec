import Hapi from '@hapi/hapi';
import { Agent } from 'node:http';
import { randomUUID } from 'node:crypto';
import { ProxyServer } from 'http-proxy-3';
import pino from 'pino';
import { attachRouter, parseSandboxHost } from '../../server/router/index.ts';
import {
  forwardRequestHeaders,
  forwardResponseHeaders,
  twinboxCredentials,
} from '../../server/router/headers.ts';

/**
 * Twinbox's side of the router benchmark: a hapi server with the sandbox router in front
 * (BENCH_MODE=listener, what Twinbox does), or the same proxying done from a hapi onRequest extension
 * (BENCH_MODE=hapi-ext, the alternative: every proxied request pays a hapi request lifecycle).
 */
const socketPath = process.env.BENCH_SOCKET!;
const mode = process.env.BENCH_MODE ?? 'listener';
const server = Hapi.server({ port: 0, host: '127.0.0.1' });
server.route({ method: 'GET', path: '/healthz', handler: () => ({ status: 'ok' }) });

if (mode === 'listener') {
  attachRouter(server, {
    domain: 'localhost',
    logger: pino({ level: 'warn' }, pino.destination(2)),
    endpoints: { stateOf: () => ({ state: 'live' }), socketFor: () => socketPath },
  });
} else {
  const agent = new Agent({ keepAlive: true, timeout: 60_000, scheduling: 'lifo' });
  const proxy = new ProxyServer({ agent, selfHandleResponse: true });
  const isTwinboxCredential = twinboxCredentials();
  proxy.on('proxyRes', (proxyRes, req, res) => {
    res.writeHead(
      proxyRes.statusCode ?? 502,
      forwardResponseHeaders(proxyRes.headers, String(req.headers['x-twinbox-request-id'])),
    );
    proxyRes.pipe(res);
  });
  server.ext('onRequest', (request, h) => {
    const { req, res } = request.raw;
    if (!parseSandboxHost(req.headers.host, 'localhost')) return h.continue;
    forwardRequestHeaders(req.headers, {
      requestId: randomUUID(),
      remoteAddress: req.socket.remoteAddress,
      encrypted: false,
      upgrade: false,
      isTwinboxCredential,
    });
    proxy.web(req, res, { target: { socketPath, host: 'localhost', port: 80 } }, () => res.destroy());
    return h.abandon;
  });
}
await server.start();
process.stdout.write(`listening ${server.info.port}\n`);
