import t from 'tap';
import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import '../helpers/sandbox-hosts.ts';
import { missingPart } from '../helpers/ci.ts';
import { createUser } from '../helpers/twinbox.ts';
import { deploySandbox, deployingTwinbox, githubToDeployFrom } from '../helpers/deploy.ts';

// The vendors' own host names reach the sandbox's twins (docs/security.md, "The vendors' host names"):
// clients with their default configuration, in Node, Python and curl, inside the sandbox; the CA's key out
// of the app's reach; one sandbox's CA not trusted in another; a vendor without a twin still blocked.

const python = '/usr/bin/python3';
const hasPythonStripe = (() => {
  try {
    return readFileSync('/usr/lib/python3/dist-packages/stripe/__init__.py', 'utf8').length > 0;
  } catch {
    return false;
  }
})();

// The app: at each GET / it runs its clients, as an app (or a script it starts) would, and reports.
const probeApp = `
const http = require('node:http');
const tls = require('node:tls');
const fs = require('node:fs');
const path = require('node:path');
const { execFile } = require('node:child_process');
const run = (file, args) => new Promise((resolve) => execFile(file, args, { timeout: 30000 }, (error, stdout, stderr) =>
  resolve({ code: error ? (error.code ?? 1) : 0, stdout: String(stdout).trim(), stderr: String(stderr).slice(-500) })));
const why = (e) => String(e.cause?.code || e.cause?.message || e.code || e.message);
const tlsCheck = (ca) => new Promise((resolve) => {
  const socket = tls.connect({ host: 'api.stripe.com', port: 443, servername: 'api.stripe.com', ...(ca ? { ca } : {}) }, () => {
    resolve('verified'); socket.destroy();
  });
  socket.on('error', (e) => resolve(e.code || e.message));
});
// Every readable file that holds a private key, below the places an app can look.
function privateKeys(roots) {
  // Spelt apart, so that this file is not a find itself.
  const marker = ['PRIVATE', 'KEY-----'].join(' ');
  const found = [];
  let files = 0;
  const walk = (dir, depth) => {
    let entries = [];
    try { entries = fs.readdirSync(dir, { withFileTypes: true }); } catch { return; }
    for (const entry of entries) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory() && depth < 6 && entry.name !== 'node_modules') walk(full, depth + 1);
      else if (entry.isFile() && files++ < 20000) {
        try {
          if (fs.statSync(full).size < 1024 * 1024 && fs.readFileSync(full, 'latin1').includes(marker)) found.push(full);
        } catch {}
      }
    }
  };
  for (const root of roots) walk(root, 0);
  return { found, files };
}
async function probe() {
  const env = process.env;
  const caPem = fs.readFileSync('/etc/twinbox/sandbox-ca.pem', 'utf8');
  return {
    trust_env: { NODE_EXTRA_CA_CERTS: env.NODE_EXTRA_CA_CERTS, NODE_OPTIONS: env.NODE_OPTIONS, SSL_CERT_FILE: env.SSL_CERT_FILE, REQUESTS_CA_BUNDLE: env.REQUESTS_CA_BUNDLE },
    ca_pem: caPem,
    system_bundle_has_ca: fs.readFileSync('/etc/ssl/certs/ca-certificates.crt', 'utf8').includes(caPem.trim()),
    // First: Node's list below shows what Python made.
    python_customer: env.RUN_PYTHON ? await run(${JSON.stringify(python)}, ['customer.py']) : null,
    node_stripe: await fetch('https://api.stripe.com/v1/customers?limit=100', { headers: { authorization: 'Bearer ' + env.STRIPE_SECRET_KEY } })
      .then(async (r) => ({ status: r.status, version: r.headers.get('stripe-version'), emails: (await r.json()).data.map((c) => c.email) })).catch(why),
    node_github_repo: await fetch('https://api.github.com/repos/octocat/probe', { headers: { authorization: 'Bearer ' + env.GITHUB_TOKEN } })
      .then(async (r) => ({ status: r.status, url: (await r.json()).url })).catch(why),
    public_github_repo: await fetch(env.GITHUB_API_URL + '/repos/octocat/probe', { headers: { authorization: 'Bearer ' + env.GITHUB_TOKEN } })
      .then(async (r) => ({ status: r.status, url: (await r.json()).url })).catch(why),
    curl_user: await run('curl', ['-sS', '--max-time', '20', 'https://api.github.com/user', '-H', 'Authorization: Bearer ' + env.GITHUB_TOKEN]),
    tls_own_ca: await tlsCheck(caPem),
    tls_other_ca: env.OTHER_CA ? await tlsCheck(env.OTHER_CA) : null,
    slack_without_twin: await fetch('https://slack.com/api/auth.test', { method: 'POST' }).then((r) => r.status).catch(why),
    pod_dir: (() => { try { return fs.readdirSync(env.POD_DIR); } catch (e) { return e.code; } })(),
    private_keys: privateKeys(['/etc', '/tmp', '/run', '/var', '/home', '/root', process.cwd()]),
  };
}
http.createServer(async (q, s) => s.end(q.url === '/probe' ? JSON.stringify(await probe()) : 'up')).listen(Number(process.env.PORT), '0.0.0.0');
`;

// stripe-python as its README writes it: the key from the environment, nothing else configured.
const customerPy = `import os
import stripe

stripe.api_key = os.environ["STRIPE_SECRET_KEY"]
customer = stripe.Customer.create(email="python@example.com", name="From stripe-python")
print(customer.id)
`;

function viaSocket(socketPath: string): Promise<any> {
  return new Promise((resolve, reject) => {
    request({ socketPath, path: '/probe', timeout: 120_000 }, (res) => {
      let body = '';
      res.on('data', (c) => (body += c));
      res.on('end', () => {
        try {
          resolve(JSON.parse(body));
        } catch (error) {
          reject(new Error(`not JSON: ${body.slice(0, 500)} (${(error as Error).message})`));
        }
      });
    })
      .on('error', reject)
      .end();
  });
}

t.test('unmodified clients inside a sandbox reach its twins at the vendors’ host names', async (t) => {
  if (!hasPythonStripe) {
    missingPart(t, "Debian's python3-stripe (apt-get install python3-stripe)");
    return;
  }
  const gh = await githubToDeployFrom(t);
  await gh.createRepo({
    owner: 'octocat',
    name: 'probe',
    files: {
      'package.json': JSON.stringify({ name: 'probe', private: true, scripts: { start: 'node server.js' } }),
      'server.js': probeApp,
      'customer.py': customerPy,
    },
  });
  const tb = await deployingTwinbox(t, gh);
  const user = await createUser(tb);
  const deploy = (env: Record<string, string>) =>
    deploySandbox(tb, user, { repo: 'octocat/probe', branch: 'main', twins: ['stripe', 'github'], env });

  const a = await deploy({ RUN_PYTHON: '1' });
  t.equal(a.status, 'ready', a.error ?? '');
  t.equal(a.isolation, 'full', 'the sandbox records full isolation');
  const podA = tb.engine!.deployer.podOf(a.sandbox_id)!;
  // A repository on the sandbox's GitHub twin, made through its public URL.
  const created = await fetch(`${a.twins.github.base_url}/user/repos`, {
    method: 'POST',
    headers: { authorization: `Bearer ${a.env_vars.GITHUB_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'probe' }),
  });
  t.equal(created.status, 201, 'a repository is made on the sandbox’s GitHub twin');
  const caA = readFileSync(podA.layout.caCertificate, 'utf8');
  t.match(caA, /^-----BEGIN CERTIFICATE-----/, "the pod wrote its CA's certificate");

  // One URL per twin: the env vars hold the public URLs, which answer inside the sandbox too.
  t.equal(a.env_vars.GITHUB_API_URL, a.twins.github.base_url, 'GITHUB_API_URL is the public base_url');
  t.equal(a.env_vars.STRIPE_API_BASE, a.twins.stripe.base_url, 'STRIPE_API_BASE is the public base_url');

  const seen = await viaSocket(podA.appSocket());
  t.comment(JSON.stringify({ ...seen, ca_pem: '(pem)' }).slice(0, 3000));
  t.same(
    seen.trust_env,
    {
      // Node reads the bundle through OpenSSL, lazily (server/pod/layout.ts trustEnv).
      NODE_OPTIONS: '--use-openssl-ca',
      SSL_CERT_FILE: '/etc/twinbox/ca-certificates.crt',
      REQUESTS_CA_BUNDLE: '/etc/twinbox/ca-certificates.crt',
    },
    'the app is told where its CA is',
  );
  t.equal(seen.ca_pem, caA, "the app sees its own sandbox's CA certificate");
  t.equal(seen.system_bundle_has_ca, true, 'the system bundle the sandbox sees holds the CA');

  t.equal(seen.python_customer.code, 0, `stripe-python ran: ${seen.python_customer.stderr}`);
  t.match(seen.python_customer.stdout, /^cus_\w+$/, 'stripe-python created a customer at api.stripe.com');
  t.equal(seen.node_stripe.status, 200, 'fetch to https://api.stripe.com is answered by the twin');
  t.ok(
    seen.node_stripe.emails.includes('python@example.com'),
    "Node sees the customer Python made: it's one twin",
  );
  t.match(seen.node_stripe.version, /^\d{4}-\d{2}-\d{2}/, 'with a Stripe-Version header');

  const user_ = JSON.parse(seen.curl_user.stdout || '{}');
  t.equal(seen.curl_user.code, 0, `curl ran: ${seen.curl_user.stderr}`);
  t.type(user_.login, 'string', 'curl https://api.github.com/user answers the twin’s user');
  const outside = await fetch(`${a.twins.github.base_url}/user`, {
    headers: { authorization: `Bearer ${a.env_vars.GITHUB_TOKEN}` },
  }).then((r) => r.json() as Promise<{ login: string }>);
  t.equal(user_.login, outside.login, 'the same user as the public URL answers outside');

  // Each URL a twin writes follows the host the request came to.
  t.same(
    seen.node_github_repo,
    { status: 200, url: 'https://api.github.com/repos/octocat/probe' },
    'intercepted: the repository’s url names api.github.com',
  );
  t.same(
    seen.public_github_repo,
    { status: 200, url: `${a.twins.github.base_url}/repos/octocat/probe` },
    'inside, at the public URL: the url names the public URL',
  );
  const fromOutside = await fetch(`${a.twins.github.base_url}/repos/octocat/probe`, {
    headers: { authorization: `Bearer ${a.env_vars.GITHUB_TOKEN}` },
  }).then((r) => r.json() as Promise<{ url: string }>);
  t.equal(fromOutside.url, `${a.twins.github.base_url}/repos/octocat/probe`, 'outside: the public URL too');

  t.equal(seen.tls_own_ca, 'verified', 'the twin’s certificate verifies against the sandbox’s own CA');
  t.type(seen.slack_without_twin, 'string', 'slack.com, with no Slack twin here, is out of reach');

  // The CA's key is in the pod's memory only: no file the app can read holds a private key.
  t.ok(seen.private_keys.files > 20, `the search looked at files (${seen.private_keys.files})`);
  t.same(seen.private_keys.found, [], 'no readable file holds a private key');

  // A second sandbox has a CA of its own: what the first one's CA signs is not trusted there.
  const b = await deploy({ OTHER_CA: caA, POD_DIR: podA.dir });
  t.equal(b.status, 'ready', b.error ?? '');
  const podB = tb.engine!.deployer.podOf(b.sandbox_id)!;
  const caB = readFileSync(podB.layout.caCertificate, 'utf8');
  t.not(caB, caA, 'each sandbox has its own CA');
  const seenB = await viaSocket(podB.appSocket());
  t.equal(seenB.tls_own_ca, 'verified');
  t.match(
    String(seenB.tls_other_ca),
    /UNABLE_TO_GET_ISSUER_CERT|UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED|CERT_SIGNATURE_FAILURE/,
    'a client that trusts only the first sandbox’s CA refuses the second sandbox’s certificate',
  );
  t.type(seenB.pod_dir, 'string', `the other sandbox’s pod directory is out of reach (${seenB.pod_dir})`);
  t.same(seenB.private_keys.found, [], 'no readable file holds a private key there either');
  t.notOk(seenB.node_stripe.emails.includes('python@example.com'), 'and its Stripe is its own');

  const logs = await fetch(`http://127.0.0.1:${tb.server.info.port}/sandboxes/${a.sandbox_id}/logs`, {
    headers: { authorization: `Bearer ${user.key}` },
  }).then((r) => r.text());
  t.match(logs, 'blocked outbound call to slack.com:443', 'the blocked vendor host is named in the log');
});
