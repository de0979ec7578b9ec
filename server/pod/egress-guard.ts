import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { createServer, type Server, type Socket } from 'node:net';
import dnsPacket from 'dns-packet';
import { GUARDED_PORTS } from './layout.ts';

/** One refused attempt to leave the sandbox. */
export interface EgressAttempt {
  host: string;
  port: number;
  at: string;
}

/** The guarded ports where a sandbox may reach its own twins over HTTP(S) (the pod's front door). */
export const WEB_PORTS: readonly number[] = [80, 443];

/** Who takes the connections to the web ports (server/pod/front-door.ts); the guard records the rest. */
export interface WebDoor {
  accept(socket: Socket, port: number): void;
}

/** Sinkhole addresses handed out for names, one per name, so a connection tells which name it was for. */
const SINKHOLE_BASE = (198 << 24) | (18 << 16); // 198.18.0.0/15, the benchmarking range: never real

/**
 * The outbound-call guard of one sandbox (it runs in the sandbox pod, inside the namespace). Its DNS
 * server answers every name with a sinkhole address; its listeners catch connections to those (or to any
 * literal address) on the usual service ports and report host and port before closing them.
 */
export class EgressGuard {
  private readonly names = new Map<string, string>(); // sinkhole address -> name
  private readonly addresses = new Map<string, string>(); // name -> sinkhole address
  private readonly servers: Server[] = [];
  private dns: UdpSocket | undefined;

  private readonly listening = new Set<number>();
  /** The ports whose connections go to the door once it is set: 80, 443, and the public URLs' port. */
  private readonly webPorts = new Set<number>(WEB_PORTS);
  /** Set once the sandbox's twins are known: until then the web ports are guarded like the others. */
  door: WebDoor | undefined;

  constructor(private readonly report: (attempt: EgressAttempt) => void) {}

  async start(): Promise<void> {
    await Promise.all([this.startDns(), ...GUARDED_PORTS.map((port) => this.listen(port))]);
  }

  /**
   * Also serves `port` through the door: the public URLs' port (`TWINBOX_PORT`, 3000 by default), so a
   * twin's public URL works inside the sandbox too. Nothing else of the sandbox listens there: the app
   * is given another port (server/deploy/local-runner.ts).
   */
  async openWebPort(port: number): Promise<void> {
    if (this.listening.has(port)) return;
    this.webPorts.add(port);
    await this.listen(port);
  }

  /** The name a sinkhole address was handed out for, or the address itself. */
  nameOf(address: string): string {
    return this.names.get(address) ?? address;
  }

  private addressFor(name: string): string {
    const key = name.toLowerCase().replace(/\.$/, '');
    let address = this.addresses.get(key);
    if (!address) {
      const n = SINKHOLE_BASE + 1 + (this.addresses.size % 131_000);
      address = [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
      this.addresses.set(key, address);
      this.names.set(address, key);
    }
    return address;
  }

  private startDns(): Promise<void> {
    const socket = createSocket('udp4');
    this.dns = socket;
    socket.on('message', (message, remote) => {
      let query: dnsPacket.Packet;
      try {
        query = dnsPacket.decode(message);
      } catch {
        return; // not DNS: nothing to answer
      }
      const question = query.questions?.[0];
      if (!question) return;
      const answers: dnsPacket.Answer[] =
        question.type === 'A'
          ? [{ type: 'A', name: question.name, ttl: 5, class: 'IN', data: this.addressFor(question.name) }]
          : [];
      const reply = dnsPacket.encode({
        id: query.id,
        type: 'response',
        flags: dnsPacket.RECURSION_DESIRED | dnsPacket.RECURSION_AVAILABLE,
        questions: [question],
        answers,
      });
      socket.send(reply, remote.port, remote.address);
    });
    return new Promise((resolve, reject) => {
      socket.once('error', reject);
      socket.bind(53, '127.0.0.1', () => {
        socket.off('error', reject);
        socket.on('error', () => {});
        resolve();
      });
    });
  }

  private listen(port: number): Promise<void> {
    this.listening.add(port);
    const server = createServer((socket) => {
      if (this.door && this.webPorts.has(port)) {
        this.door.accept(socket, port);
        return;
      }
      const local = (socket.localAddress ?? '').replace(/^::ffff:/, '');
      this.report({ host: this.names.get(local) ?? local, port, at: new Date().toISOString() });
      socket.on('error', () => {});
      socket.destroy();
    });
    this.servers.push(server);
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '0.0.0.0', () => {
        server.off('error', reject);
        resolve();
      });
    });
  }

  close(): void {
    for (const server of this.servers) server.close();
    this.dns?.close();
  }
}
