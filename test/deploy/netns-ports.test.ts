import t from 'tap';
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import {
  hostEphemeralRange,
  NetworkNamespaces,
  namespaceEphemeralRange,
} from '../../server/deploy/confinement/netns.ts';
import { trustedExecutables } from '../../server/deploy/confinement/trusted-executables.ts';
import { missingPart } from '../helpers/ci.ts';

t.test('a namespace’s ephemeral ports: apart from the host’s, above them when they fit', async (t) => {
  t.same(namespaceEphemeralRange([32768, 60999]), [61000, 65535], "Linux's default: above it");
  t.same(namespaceEphemeralRange([20000, 65535]), [1024, 19999], 'no room above: below');
  t.equal(namespaceEphemeralRange([1500, 65000]), undefined, 'no room either side: the default is kept');
});

// The pod's guard listens on 0.0.0.0:<the public URLs' port> inside a sandbox's namespace, and that is
// often a port the host's kernel picked for Twinbox from its own ephemeral range. Inside, no socket may
// have taken the same number first: sockets bound to port 0 there (listeners, and the local ends of
// connections) all land outside the host's range.
t.test(
  'inside a sandbox’s namespace, no port-0 socket takes a port of the host’s ephemeral range',
  async (t) => {
    if (process.getuid?.() !== 0) return missingPart(t, 'not root (cannot make network namespaces)');
    const tools = trustedExecutables();
    if (!tools.ip || !tools.nsenter || !tools.sh) return missingPart(t, 'iproute2 or util-linux is missing');
    const namespaces = new NetworkNamespaces(
      { ip: tools.ip, nsenter: tools.nsenter, sh: tools.sh },
      'portstest',
    );
    const name = namespaces.nameOf(randomBytes(4).toString('hex'));
    await namespaces.create(name);
    t.teardown(() => namespaces.remove(name));

    const [hostLow, hostHigh] = hostEphemeralRange();
    const inside = execFileSync(
      tools.ip,
      ['netns', 'exec', name, 'cat', '/proc/sys/net/ipv4/ip_local_port_range'],
      { encoding: 'utf8' },
    )
      .trim()
      .split(/\s+/)
      .map(Number);
    t.same(inside, namespaces.ephemeral, 'the namespace has its own range');

    // 200 listeners on port 0 and 200 connections to one of them, all held at once, inside the namespace.
    const script = `
    const net = require('node:net');
    const ports = [];
    const listen = () => new Promise((r) => { const s = net.createServer(() => {}); s.listen(0, '0.0.0.0', () => r(s)); });
    (async () => {
      const servers = [];
      for (let i = 0; i < 200; i++) servers.push(await listen());
      for (const s of servers) ports.push(s.address().port);
      const target = servers[0].address().port;
      const sockets = [];
      for (let i = 0; i < 200; i++) {
        sockets.push(await new Promise((r) => { const c = net.connect(target, '127.0.0.1', () => r(c)); }));
      }
      for (const c of sockets) ports.push(c.localPort);
      process.stdout.write(JSON.stringify(ports));
      process.exit(0);
    })();`;
    const ports = JSON.parse(
      execFileSync(tools.ip, ['netns', 'exec', name, process.execPath, '-e', script], { encoding: 'utf8' }),
    ) as number[];
    t.equal(ports.length, 400, 'every socket reported its port');
    const inHostRange = ports.filter((port) => port >= hostLow && port <= hostHigh);
    t.same(inHostRange, [], `none of ${ports.length} ports is in the host's range ${hostLow}-${hostHigh}`);
  },
);
