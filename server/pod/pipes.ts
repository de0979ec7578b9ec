import { rm } from 'node:fs/promises';
import { connect, createServer, type NetConnectOpts, type Server } from 'node:net';

/**
 * Resolves true once `target` accepts a TCP connection, tried every `everyMs` (closed at once: the app's
 * server sees a connection that sends nothing), or false once `timeoutMs` has passed or `stop` aborts. A
 * refused connect on loopback costs tens of microseconds, where an HTTP probe through the pod costs two
 * processes a request each.
 */
export async function accepts(
  target: NetConnectOpts,
  timeoutMs: number,
  stop?: AbortSignal,
  everyMs = 2,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (stop?.aborted) return false;
    const accepted = await new Promise<boolean>((resolve) => {
      const socket = connect(target);
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (accepted) return true;
    if (Date.now() >= deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

/**
 * A byte pipe: every connection accepted on `listenOn` is joined to a new connection to `target`. The pod
 * uses it across the namespace boundary (Unix sockets cross it; TCP does not), so it never parses HTTP.
 */
export async function startPipe(
  listenOn: { path: string } | { port: number; host: string },
  target: () => NetConnectOpts | undefined,
): Promise<Server> {
  const server = createServer((inbound) => {
    const to = target();
    if (!to) return inbound.destroy();
    const outbound = connect(to);
    inbound.on('error', () => outbound.destroy());
    outbound.on('error', () => inbound.destroy());
    inbound.pipe(outbound);
    outbound.pipe(inbound);
  });
  if ('path' in listenOn) await rm(listenOn.path, { force: true });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    const done = () => {
      server.off('error', reject);
      resolve();
    };
    if ('path' in listenOn) server.listen(listenOn.path, done);
    else server.listen(listenOn.port, listenOn.host, done);
  });
  return server;
}
