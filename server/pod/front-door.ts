import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { createServer as createTlsServer, type TLSSocket } from 'node:tls';
import type { TwinHost } from '../twins/runtime/host.ts';
import type { EgressAttempt } from './egress-guard.ts';
import type { SandboxCa } from './sandbox-ca.ts';

/** The HTTPS port of the vendors' hosts. */
export const TLS_PORT = 443;

/**
 * The pod's front door: what a connection from inside the sandbox to a guarded web port (80, 443, the
 * public URLs' port) meets. A request for one of this sandbox's twins, by a vendor host it declares
 * (`api.stripe.com`) or by its public URL's host, is served by that twin in this process; HTTPS is
 * terminated with a certificate the sandbox's CA issues for the name asked (SNI). Anything else is an
 * outbound call the sandbox may not make: reported, with the name it asked for, and closed, as the
 * guard does on its other ports.
 */
export class FrontDoor {
  private readonly http = createServer();
  private readonly tls;

  constructor(
    private readonly twins: TwinHost,
    private readonly ca: Promise<SandboxCa>,
    private readonly report: (attempt: EgressAttempt) => void,
    /** The name a connection's local (sinkhole) address was handed out for, for reports without a name. */
    private readonly nameOf: (address: string) => string,
  ) {
    this.http.keepAliveTimeout = 5_000;
    this.http.on('request', (req, res) => this.onRequest(req, res));
    this.http.on('checkContinue', (req, res) => this.onRequest(req, res));
    this.http.on('upgrade', (req, socket, head) => this.onUpgrade(req, socket, head));
    this.http.on('clientError', (_error, socket) => socket.destroy());
    this.tls = createTlsServer({
      SNICallback: (servername, done) => {
        const name = servername.toLowerCase();
        if (!this.twins.byHost(name)) {
          done(new Error(`no twin answers for ${name}`));
          return;
        }
        this.ca
          .then((ca) => ca.contextFor(name))
          .then(
            (context) => done(null, context),
            (error: Error) => done(error),
          );
      },
    });
    this.tls.on('secureConnection', (socket: TLSSocket) => this.http.emit('connection', socket));
    this.tls.on('tlsClientError', (_error, socket: TLSSocket) => {
      const name = (socket as TLSSocket & { servername?: string | false }).servername;
      this.blocked(typeof name === 'string' && name ? name : this.localName(socket), TLS_PORT);
      socket.destroy();
    });
  }

  /** Takes a connection accepted on `port` of the sandbox's namespace. */
  accept(socket: Socket, port: number): void {
    socket.on('error', () => socket.destroy());
    if (port === TLS_PORT) this.tls.emit('connection', socket);
    else this.http.emit('connection', socket);
  }

  private twinFor(req: IncomingMessage) {
    return this.twins.byHost(hostnameOf(req.headers.host ?? ''));
  }

  private onRequest(req: IncomingMessage, res: ServerResponse): void {
    const twin = this.twinFor(req);
    if (twin) twin.serve(req, res);
    else {
      this.blocked(hostnameOf(req.headers.host ?? '') || this.localName(req.socket), req.socket.localPort);
      req.socket.destroy();
    }
  }

  private onUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const twin = this.twinFor(req);
    if (twin) twin.onUpgrade(req, socket, head);
    else {
      this.blocked(hostnameOf(req.headers.host ?? '') || this.localName(req.socket), req.socket.localPort);
      socket.destroy();
    }
  }

  private localName(socket: Socket): string {
    return this.nameOf((socket.localAddress ?? '').replace(/^::ffff:/, ''));
  }

  private blocked(host: string, port: number | undefined): void {
    this.report({ host, port: port ?? 0, at: new Date().toISOString() });
  }

  close(): void {
    this.http.closeAllConnections();
  }
}

/** The host name of a `Host` header: lower case, without its port or IPv6 brackets. */
export function hostnameOf(host: string): string {
  const lower = host.trim().toLowerCase();
  if (lower.startsWith('[')) return lower.slice(1, lower.indexOf(']'));
  return lower.replace(/:\d*$/, '').replace(/\.$/, '');
}
