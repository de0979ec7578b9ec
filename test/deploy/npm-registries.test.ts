import t, { type Test } from 'tap';
import { mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { publicAddress, startInstallProxy } from '../../server/deploy/pods/install-proxy.ts';
import {
  machineRegistries,
  parseNpmrc,
  repositoryRegistries,
  type HostPort,
} from '../../server/deploy/steps/npm-registries.ts';
import type { EgressAttempt } from '../../server/pod/egress-guard.ts';

async function scratch(t: Test): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'twinbox-npmrc-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

t.test("a repository's .npmrc: only registry keys, only http(s) URLs of a plain host", async (t) => {
  const named = parseNpmrc(
    [
      '# a company mirror and a scope',
      'registry=https://npm.acme.example/repository/npm/',
      '@acme:registry = "https://npm.pkg.acme.example:8443/"',
      '@legacy:registry=http://legacy.acme.example/',
      '//npm.acme.example/:_authToken=secret-token',
      'proxy=http://proxy.evil.example:3128/',
      'https-proxy=http://proxy.evil.example:3128/',
      '@evil:registry=file:///etc/passwd',
      '@evil2:registry=https://user:pass@creds.evil.example/',
      '@evil3:registry=https://${REGISTRY_HOST}/',
      '@evil4:registry=https://[::1]:6379/',
      'registry-ish=https://not-a-registry-key.example/',
      '; a comment',
    ].join('\n'),
  );
  t.same(
    named.hosts.map((hp) => `${hp.host}:${hp.port}`).sort(),
    ['legacy.acme.example:80', 'npm.acme.example:443', 'npm.pkg.acme.example:8443'],
    'only the registry lines, with their ports',
  );
  t.equal(named.registry, 'https://npm.acme.example/repository/npm/');
  t.same(parseNpmrc('').hosts, [], 'none named');

  const dir = await scratch(t);
  await writeFile(join(dir, '.npmrc'), 'registry=https://mirror.example/\n');
  t.same(
    (await repositoryRegistries(dir)).hosts,
    [{ host: 'mirror.example', port: 443 }],
    'read from the workspace',
  );
  // A link to a file of the host is not followed: Twinbox reads the file as its own user.
  const linked = await scratch(t);
  await writeFile(join(dir, 'elsewhere'), 'registry=https://followed.example/\n');
  await symlink(join(dir, 'elsewhere'), join(linked, '.npmrc'));
  t.same((await repositoryRegistries(linked)).hosts, [], 'a symlinked .npmrc is not read');
  const huge = await scratch(t);
  await writeFile(join(huge, '.npmrc'), `registry=https://huge.example/\n${'#'.repeat(128 * 1024)}\n`);
  t.same((await repositoryRegistries(huge)).hosts, [], 'an oversized .npmrc is not read');
  t.same((await repositoryRegistries(join(dir, 'nonexistent'))).hosts, [], 'no .npmrc, no hosts');
});

t.test("the machine's npm config: its registry and scoped registries, as npm reports them", async (t) => {
  const dir = await scratch(t);
  const userconfig = join(dir, 'npmrc');
  await writeFile(
    userconfig,
    'registry=https://mirror.corp.example:4873/\n@corp:registry=https://npm.corp.example/\n',
  );
  const found = await machineRegistries({ ...process.env, npm_config_userconfig: userconfig });
  t.same(
    found.hosts.map((hp) => `${hp.host}:${hp.port}`).sort(),
    ['mirror.corp.example:4873', 'npm.corp.example:443'],
    'both registries of the config npm reads',
  );
  t.equal(found.registry, 'https://mirror.corp.example:4873/');
  // With npm's defaults, the default registry is whatever npm says it is: nothing is written in our code.
  const plain = await machineRegistries({ ...process.env, npm_config_userconfig: join(dir, 'none') });
  t.equal(plain.hosts.length, 1, 'npm names one default registry');
  t.equal(plain.registry && new URL(plain.registry).host, plain.hosts[0] && plain.hosts[0].host);
});

/** CONNECTs through the proxy's socket; resolves with the status, and the tunnel's first bytes. */
function connectVia(socketPath: string, target: string): Promise<{ status: number; data: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, method: 'CONNECT', path: target });
    req.on('connect', (res, socket, head) => {
      if (res.statusCode !== 200) {
        socket.destroy();
        return resolve({ status: res.statusCode!, data: '' });
      }
      // The first bytes may come with the proxy's answer (`head`), or after it.
      let data = head.toString();
      socket.on('data', (chunk: Buffer) => (data += chunk.toString()));
      socket.on('close', () => resolve({ status: 200, data }));
      socket.on('error', () => resolve({ status: 200, data }));
    });
    req.on('error', reject);
    req.end();
  });
}

t.test('the install proxy: repository-named registries pass at public addresses only', async (t) => {
  // A "registry" that greets every connection: a tunnel that reached it reads the greeting.
  const registry = createServer((socket) => socket.end('registry here\n'));
  await new Promise<void>((resolve) => registry.listen(0, '127.0.0.1', resolve));
  t.teardown(() => registry.close());
  const port = (registry.address() as AddressInfo).port;
  const dir = await scratch(t);

  const blocked: EgressAttempt[] = [];
  const start = async (
    name: string,
    repositoryAllowed: HostPort[],
    isPublic?: (address: string) => boolean,
  ) => {
    const socketPath = join(dir, `${name}.sock`);
    const proxy = await startInstallProxy({
      socketPath,
      allowed: [],
      repositoryAllowed: () => repositoryAllowed,
      isPublic,
      open: () => true,
      onBlocked: (attempt) => blocked.push(attempt),
    });
    t.teardown(() => new Promise<void>((resolve) => proxy.close(() => resolve())));
    return socketPath;
  };

  // The repository's .npmrc names localhost:<port>. Under a policy that counts loopback as public (this
  // machine has no internet to stand for a public registry), the named host passes and one not named
  // does not: the allowlist is the .npmrc's.
  const named = parseNpmrc(`registry=https://localhost:${port}/\n`).hosts;
  const lenient = await start('lenient', named, () => true);
  const through = await connectVia(lenient, `localhost:${port}`);
  t.equal(through.status, 200, 'the host the .npmrc names is let through');
  t.equal(through.data, 'registry here\n', 'and the tunnel reaches it');
  t.equal((await connectVia(lenient, `127.0.0.1:${port}`)).status, 403, 'a host it does not name is not');
  t.equal((await connectVia(lenient, `localhost:${port + 1}`)).status, 403, 'nor another port of it');

  // The real policy: a repository cannot aim the install at this machine (PostgreSQL, Twinbox's API) or
  // its network, whatever name it uses.
  const strict = await start('strict', named);
  t.equal(
    (await connectVia(strict, `localhost:${port}`)).status,
    403,
    'loopback is refused for a repository',
  );
  t.ok(
    blocked.some((b) => b.host === 'localhost' && b.port === port),
    'and the refusal is recorded for blocked_egress',
  );
  for (const address of [
    '127.0.0.1',
    '10.1.2.3',
    '172.16.0.1',
    '192.168.1.1',
    '169.254.169.254',
    '::1',
    'fd00::1',
    '::ffff:127.0.0.1',
    '0.0.0.0',
  ])
    t.notOk(publicAddress(address), `${address} is not public`);
  for (const address of ['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946'])
    t.ok(publicAddress(address), `${address} is public`);
});

t.test('the operator allowlist passes at any address; the proxy is shut outside install', async (t) => {
  const registry = createServer((socket) => socket.end('mirror\n'));
  await new Promise<void>((resolve) => registry.listen(0, '127.0.0.1', resolve));
  t.teardown(() => registry.close());
  const port = (registry.address() as AddressInfo).port;
  const dir = await scratch(t);
  let open = true;
  const socketPath = join(dir, 'proxy.sock');
  const proxy = await startInstallProxy({
    socketPath,
    allowed: [{ host: '127.0.0.1', port }],
    open: () => open,
    onBlocked: () => {},
  });
  t.teardown(() => new Promise<void>((resolve) => proxy.close(() => resolve())));
  const through = await connectVia(socketPath, `127.0.0.1:${port}`);
  t.equal(through.data, 'mirror\n', 'a mirror on this machine, named by the operator, is reached');
  open = false;
  t.equal((await connectVia(socketPath, `127.0.0.1:${port}`)).status, 403, 'not once install is over');
});
