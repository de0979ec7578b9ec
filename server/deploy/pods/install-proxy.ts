import { lookup } from 'node:dns/promises';
import { createServer, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { rm } from 'node:fs/promises';
import { BlockList, connect, isIP } from 'node:net';
import type { EgressAttempt } from '../../pod/egress-guard.ts';
import type { HostPort } from '../steps/npm-registries.ts';

export interface InstallProxyOptions {
  /** The Unix socket the pod's proxy port is piped to. */
  socketPath: string;
  /**
   * `host:port` pairs the operator allows (the machine's npm registries, TWINBOX_INSTALL_EGRESS), while
   * `open()` says so: reached at whatever address they resolve to, a registry mirror on the LAN too.
   */
  allowed: HostPort[];
  /**
   * The pairs the repository's own `.npmrc` names, for the install under way: the repository chose them,
   * so they are reached only at public addresses (`isPublic`), never this machine or its network.
   */
  repositoryAllowed?: () => readonly HostPort[];
  /** Whether an address may be reached for a repository-named host; default: publicAddress. */
  isPublic?: (address: string) => boolean;
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
  const isPublic = opts.isPublic ?? publicAddress;
  /** Where to connect for `host:port`, or undefined when it may not be reached now. */
  const destination = async (host: string, port: number): Promise<string | undefined> => {
    if (!opts.open()) return undefined;
    if (allowed.has(`${host}:${port}`)) return host;
    if (!(opts.repositoryAllowed?.() ?? []).some((hp) => hp.host === host && hp.port === port))
      return undefined;
    // Resolved once and connected by address, so the name cannot resolve elsewhere between check and use.
    const addresses = await lookup(host, { all: true }).catch(() => []);
    if (!addresses.length || !addresses.every(({ address }) => isPublic(address))) return undefined;
    return addresses[0]!.address;
  };
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
    void (match ? destination(host, port) : Promise.resolve(undefined)).then((address) => {
      if (!address || client.destroyed) {
        opts.onBlocked({ host, port, at: new Date().toISOString() });
        client.end('HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n');
        return;
      }
      tunnel(client, head, address, port);
    });
  });
  await rm(opts.socketPath, { force: true });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.socketPath, () => resolve());
  });
  return server;
}

/** A plain socket pipe: TLS stays end to end between the install and the registry. */
function tunnel(client: Duplex, head: Buffer, host: string, port: number): void {
  const upstream = connect({ host, port });
  upstream.on('error', () => client.destroy());
  upstream.once('connect', () => {
    client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    if (head.length) upstream.write(head);
    upstream.pipe(client);
    client.pipe(upstream);
  });
  client.on('close', () => upstream.destroy());
}

/** Addresses that are not this machine, its networks, or special-purpose (RFC 6890 and friends). */
const NOT_PUBLIC = new BlockList();
for (const [net, bits] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['224.0.0.0', 3],
] as const)
  NOT_PUBLIC.addSubnet(net, bits, 'ipv4');
for (const [net, bits] of [
  ['::', 127],
  ['64:ff9b::', 96],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const)
  NOT_PUBLIC.addSubnet(net, bits, 'ipv6');

/** Whether `address` is a public unicast address. */
export function publicAddress(address: string): boolean {
  const family = isIP(address);
  if (!family) return false;
  // IPv4-mapped IPv6 (::ffff:a.b.c.d) names an IPv4 host in disguise; a registry has no need of it. (Not
  // a BlockList rule: BlockList matches every IPv4 address against an IPv6 rule in mapped form.)
  if (family === 6 && /^::ffff:/i.test(address)) return false;
  return !NOT_PUBLIC.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

function safeUrl(text: string | undefined): URL | undefined {
  try {
    return new URL(text ?? '');
  } catch {
    return undefined;
  }
}
