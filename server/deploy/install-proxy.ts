import { createServer, type Server } from 'node:http';
import { rm } from 'node:fs/promises';
import { connect } from 'node:net';
import type { EgressAttempt } from '../pod/egress-guard.ts';

export interface InstallProxyOptions {
  /** The Unix socket the pod's proxy port is piped to. */
  socketPath: string;
  /** `host:port` pairs that may be reached, while `open()` says so. */
  allowed: Array<{ host: string; port: number }>;
  /** True during the install step only: at any other time nothing gets through. */
  open: () => boolean;
  /** A refused attempt, for the sandbox's `blocked_egress`. */
  onBlocked: (attempt: EgressAttempt) => void;
}

/**
 * The only way out of a sandbox's network namespace: an HTTP CONNECT proxy on a Unix socket, outside the
 * namespace, that lets an install step reach the package registry and nothing else. The tunnel is a plain
 * socket pipe (TLS stays end to end); all that is ours here is the decision, so no proxy library is used.
 */
export async function startInstallProxy(opts: InstallProxyOptions): Promise<Server> {
  const allowed = new Set(opts.allowed.map(({ host, port }) => `${host}:${port}`));
  const server = createServer((req, res) => {
    // Plain-HTTP proxying (`GET http://...`) is never allowed: registries are reached over TLS.
    const target = safeUrl(req.url);
    opts.onBlocked({
      host: target?.hostname ?? 'unknown',
      port: Number(target?.port || 80),
      at: new Date().toISOString(),
    });
    res.writeHead(403, { 'content-type': 'text/plain' });
    res.end('Twinbox: only the package registry may be reached, over HTTPS, during install\n');
  });
  server.on('connect', (req, client, head) => {
    const match = /^([A-Za-z0-9.-]+):(\d{1,5})$/.exec(req.url ?? '');
    // The target is the sandbox's text: recorded and logged, so kept to a host name's length.
    const host = (match?.[1]?.toLowerCase() ?? String(req.url)).slice(0, 253);
    const port = Number(match?.[2] ?? 0);
    client.on('error', () => {});
    if (!match || !opts.open() || !allowed.has(`${host}:${port}`)) {
      opts.onBlocked({ host, port, at: new Date().toISOString() });
      client.end('HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n');
      return;
    }
    const upstream = connect({ host, port });
    upstream.on('error', () => client.destroy());
    upstream.once('connect', () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    client.on('close', () => upstream.destroy());
  });
  await rm(opts.socketPath, { force: true });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.socketPath, () => resolve());
  });
  return server;
}

function safeUrl(text: string | undefined): URL | undefined {
  try {
    return new URL(text ?? '');
  } catch {
    return undefined;
  }
}
