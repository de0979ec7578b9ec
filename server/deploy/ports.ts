import { createServer } from 'node:net';

/**
 * A loopback port free right now. The app binds it a moment later; a collision in between is possible but
 * shows up as a failed health check, not as two apps sharing a port.
 */
export function freePort(host = '127.0.0.1'): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, host, () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}
