import t from 'tap';
import { request } from 'node:http';
import { connect, createServer, type AddressInfo } from 'node:net';
import { call, createUser } from '../helpers/twinbox.ts';
import { deploySandbox, deployingTwinbox, githubToDeployFrom } from '../helpers/deploy.ts';

// A hostile app: at start it tries every way out of its sandbox and reports what happened at GET /.
const probeApp = `
const http = require('node:http');
const net = require('node:net');
const tryConnect = (host, port) => new Promise((resolve) => {
  const socket = net.connect({ host, port, timeout: 3000 });
  socket.once('connect', () => { socket.destroy(); resolve('connected'); });
  socket.once('timeout', () => { socket.destroy(); resolve('timeout'); });
  socket.once('error', (e) => resolve(e.code || e.message));
});
const tryHttp = (url, headers = {}) => fetch(url, { headers, signal: AbortSignal.timeout(4000) })
  .then((r) => r.status).catch((e) => String(e.cause?.code || e.cause?.message || e.message));
async function probe() {
  const env = process.env;
  return {
    // Inside, Twinbox's port is the pod's front door (the twins' public URLs): Twinbox's API is not there.
    twinbox_api: await tryHttp('http://127.0.0.1:' + env.TWINBOX_PORT + '/twins'),
    twinbox_api_host_ip: await tryHttp('http://' + env.HOST_IP + ':' + env.TWINBOX_PORT + '/twins'),
    twinbox_api_by_name: await tryHttp('http://localhost:' + env.TWINBOX_PORT + '/twins'),
    other_twin: await tryHttp(env.OTHER_TWIN_URL + '/v1/customers', { authorization: 'Bearer ' + env.OTHER_TWIN_KEY }),
    other_app: await tryHttp(env.OTHER_APP_URL),
    // Its own twin answers for the vendor's host; a vendor without a twin here stays out of reach.
    intercepted_stripe: await tryHttp('https://api.stripe.com/v1/customers', { authorization: 'Bearer ' + env.STRIPE_SECRET_KEY }),
    real_resend: await tryHttp('https://api.resend.com/emails'),
    literal_ip: await tryHttp('http://93.184.216.34/'),
    registry_after_install: await new Promise((resolve) => {
      const req = http.request({ host: '127.0.0.1', port: 3128, method: 'CONNECT', path: 'registry.npmjs.org:443' });
      req.on('connect', (res, socket) => { socket.destroy(); resolve(res.statusCode); });
      req.on('error', (e) => resolve(e.code || e.message));
      req.end();
    }),
    own_twin: await tryHttp(env.STRIPE_API_BASE + '/v1/customers', { authorization: 'Bearer ' + env.STRIPE_SECRET_KEY }),
  };
}
const results = probe();
http.createServer(async (q, s) => s.end(JSON.stringify(await results))).listen(Number(env().PORT), '0.0.0.0');
net.createServer(() => {}).listen(4444, '0.0.0.0');
function env() { return process.env; }
`;

const plainApp = `require('node:http').createServer((q, s) => s.end('plain')).listen(Number(process.env.PORT), '0.0.0.0');`;

function viaSocket(socketPath: string, path = '/'): Promise<string> {
  return new Promise((resolve, reject) => {
    request({ socketPath, path }, (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve(body));
    })
      .on('error', reject)
      .end();
  });
}

// The three tests are independent (a GitHub twin, a Twinbox and sandboxes each) and mostly wait on
// deploys: two run at once. Each still makes every attempt it makes alone.
t.jobs = 2;

t.test('an app in its own network namespace reaches its own twins and nothing else', async (t) => {
  const gh = await githubToDeployFrom(t);
  const files = (source: string) => ({
    'package.json': JSON.stringify({ name: 'probe', private: true, scripts: { start: 'node server.js' } }),
    'server.js': source,
  });
  await gh.createRepo({ owner: 'octocat', name: 'victim', files: files(plainApp) });
  await gh.createRepo({ owner: 'octocat', name: 'attacker', files: files(probeApp) });
  const tb = await deployingTwinbox(t, gh);
  const user = await createUser(tb);
  const create = (repo: string, env: Record<string, string> = {}) =>
    deploySandbox(tb, user, { repo, branch: 'main', twins: ['stripe'], env });
  const victim = await create('octocat/victim');
  t.equal(victim.status, 'ready', victim.error ?? '');
  t.equal(victim.isolation, 'full', 'the sandbox records full isolation');
  const attacker = await create('octocat/attacker', {
    TWINBOX_PORT: String(tb.server.info.port),
    HOST_IP: '10.0.2.15',
    OTHER_TWIN_URL: victim.twins.stripe.env_vars.STRIPE_API_BASE,
    OTHER_TWIN_KEY: victim.twins.stripe.env_vars.STRIPE_SECRET_KEY,
    OTHER_APP_URL: victim.app_url,
  });
  t.equal(attacker.status, 'ready', attacker.error ?? '');
  const pod = tb.engine!.deployer.podOf(attacker.sandbox_id)!;
  const results = JSON.parse(await viaSocket(pod.appSocket()));
  t.comment(JSON.stringify(results));
  t.equal(results.own_twin, 200, 'its own Stripe twin answers at the URL its env_vars name');
  t.type(results.twinbox_api, 'string', "Twinbox's API is out of reach (no HTTP status came back)");
  t.type(results.twinbox_api_host_ip, 'string', "Twinbox's API is out of reach on the host's address");
  t.type(results.twinbox_api_by_name, 'string', "Twinbox's API is out of reach by its name");
  t.not(results.other_twin, 200, "another sandbox's twin is out of reach, even with its key");
  t.not(results.other_app, 200, "another sandbox's app is out of reach");
  t.equal(results.intercepted_stripe, 200, 'api.stripe.com reaches its own Stripe twin');
  t.type(results.real_resend, 'string', 'the real Resend is out of reach (no HTTP status came back)');
  t.type(results.literal_ip, 'string', 'an address on the internet is out of reach');

  t.equal(results.registry_after_install, 403, 'the install proxy lets nothing out once install is over');

  // Listening on 0.0.0.0 inside exposes nothing on the host.
  const outside = await new Promise<string>((resolve) => {
    const socket = connect({ host: '127.0.0.1', port: 4444 });
    socket.once('connect', () => (socket.destroy(), resolve('connected')));
    socket.once('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? 'error'));
  });
  t.not(outside, 'connected', 'a port the app opened on 0.0.0.0 is not on the host');

  // The outbound-call guard names the attempt on the sandbox and in its log.
  const after = (await call(tb, { url: `/sandboxes/${attacker.sandbox_id}`, token: user.key })).body;
  const resend = after.blocked_egress.find((b: { host: string }) => b.host === 'api.resend.com');
  t.ok(resend, 'blocked_egress names api.resend.com');
  t.equal(resend?.port, 443);
  t.ok(resend?.count >= 1);
  t.notOk(
    after.blocked_egress.find((b: { host: string }) => b.host === 'api.stripe.com'),
    'a call its own twin answered is not a blocked one',
  );
  t.ok(
    after.blocked_egress.find(
      (b: { host: string; port: number }) => b.host === '93.184.216.34' && b.port === 80,
    ),
  );
  t.ok(
    after.blocked_egress.find(
      (b: { host: string; port: number }) => b.host === 'registry.npmjs.org' && b.port === 443,
    ),
    'the refused proxy request is recorded too',
  );
  const logs = (await call(tb, { url: `/sandboxes/${attacker.sandbox_id}/logs`, token: user.key })).body;
  t.match(
    logs,
    'blocked outbound call to api.resend.com:443 (this code tried to call the real resend, and this sandbox has no resend twin',
  );
});

// During install the registry proxy is open, but only to the hosts of TWINBOX_INSTALL_EGRESS.
const installProbe = `
const http = require('node:http');
const target = process.argv[2];
const req = http.request({ host: '127.0.0.1', port: 3128, method: 'CONNECT', path: target });
req.on('connect', (res, socket) => { console.log('install CONNECT ' + target + ' -> ' + res.statusCode); socket.destroy(); });
req.on('error', (e) => console.log('install CONNECT ' + target + ' -> ' + e.code));
req.end();
`;

t.test(
  'an install step reaches only the allowed registry hosts; anything else is refused and recorded',
  async (t) => {
    const gh = await githubToDeployFrom(t);
    await gh.createRepo({
      owner: 'octocat',
      name: 'installer',
      files: {
        'package.json': JSON.stringify({
          name: 'installer',
          private: true,
          scripts: { start: 'node server.js' },
        }),
        'server.js': plainApp,
        'probe.js': installProbe,
        '.github/twinbox.yml': 'install: node probe.js example.com:443 && node probe.js evil.example:22\n',
      },
    });
    const tb = await deployingTwinbox(t, gh);
    const user = await createUser(tb);
    const sandbox = await deploySandbox(tb, user, { repo: 'octocat/installer', branch: 'main' });
    t.equal(sandbox.status, 'ready', sandbox.error ?? '');
    const logs = (await call(tb, { url: `/sandboxes/${sandbox.sandbox_id}/logs`, token: user.key })).body;
    t.match(
      logs,
      'install CONNECT example.com:443 -> 403',
      'a host outside TWINBOX_INSTALL_EGRESS is refused',
    );
    t.match(logs, 'install CONNECT evil.example:22 -> 403');
    const hosts = sandbox.blocked_egress.map((b: { host: string; port: number }) => `${b.host}:${b.port}`);
    t.ok(hosts.includes('example.com:443') && hosts.includes('evil.example:22'), 'both are recorded');
  },
);

t.test(
  "a repository's .npmrc opens its registry for the install, never this machine; the operator's list does",
  async (t) => {
    // Stands for a registry mirror on this machine: a greeting on connect.
    const mirror = createServer((socket) => socket.end('mirror\n'));
    await new Promise<void>((resolve) => mirror.listen(0, '127.0.0.1', resolve));
    t.teardown(() => mirror.close());
    const port = (mirror.address() as AddressInfo).port;
    const gh = await githubToDeployFrom(t);
    await gh.createRepo({
      owner: 'octocat',
      name: 'own-registry',
      files: {
        'package.json': JSON.stringify({ name: 'own', private: true, scripts: { start: 'node server.js' } }),
        'server.js': plainApp,
        'probe.js': installProbe,
        // The repository aims its registry at this machine (where PostgreSQL or Twinbox's API could be).
        '.npmrc': `registry=https://localhost:${port}/\n`,
        '.github/twinbox.yml': `install: node probe.js localhost:${port} && node probe.js 127.0.0.1:${port}\n`,
      },
    });
    // The operator names 127.0.0.1:<port>: a mirror on the LAN or this machine is the operator's to allow.
    const tb = await deployingTwinbox(t, gh, { TWINBOX_INSTALL_EGRESS: `127.0.0.1:${port}` });
    const user = await createUser(tb);
    const sandbox = await deploySandbox(tb, user, { repo: 'octocat/own-registry', branch: 'main' });
    t.equal(sandbox.status, 'ready', sandbox.error ?? '');
    const logs = (await call(tb, { url: `/sandboxes/${sandbox.sandbox_id}/logs`, token: user.key })).body;
    t.match(
      logs,
      `the repository's .npmrc names localhost:${port}`,
      'the deploy log says what the .npmrc opened',
    );
    t.match(
      logs,
      `install CONNECT localhost:${port} -> 403`,
      "a repository's registry on loopback is refused",
    );
    t.match(logs, `install CONNECT 127.0.0.1:${port} -> 200`, "the operator's host is reached");
    const hosts = sandbox.blocked_egress.map((b: { host: string; port: number }) => `${b.host}:${b.port}`);
    t.ok(hosts.includes(`localhost:${port}`), 'the refusal is recorded');
  },
);
