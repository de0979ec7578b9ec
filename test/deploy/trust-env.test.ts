// The variables that make a sandbox's commands trust its CA (server/pod/layout.ts trustEnv): Node reads
// the bundle through OpenSSL where it can, and falls back to NODE_EXTRA_CA_CERTS where the bundle would
// not do. The interception test shows real clients trusting the CA this way inside a sandbox.
import t from 'tap';
import { spawnSync } from 'node:child_process';
import { trustEnv, TRUST_PATHS } from '../../server/pod/layout.ts';

const host = { systemBundle: true };
const files = { SSL_CERT_FILE: TRUST_PATHS.bundle, REQUESTS_CA_BUNDLE: TRUST_PATHS.bundle };

t.test('Node reads the bundle through OpenSSL, the app’s own NODE_OPTIONS kept after it', async (t) => {
  t.same(trustEnv({ PORT: '3000' }, host), { ...files, PORT: '3000', NODE_OPTIONS: '--use-openssl-ca' });
  t.same(trustEnv({ NODE_OPTIONS: '--max-old-space-size=256' }, host), {
    ...files,
    NODE_OPTIONS: '--use-openssl-ca --max-old-space-size=256',
  });
  t.same(
    trustEnv({ NODE_OPTIONS: '--use-openssl-ca' }, host).NODE_OPTIONS,
    '--use-openssl-ca',
    'not named twice',
  );
  t.equal(trustEnv({ PORT: '1' }, host).NODE_EXTRA_CA_CERTS, undefined, 'no eager store at start-up');
});

t.test('NODE_EXTRA_CA_CERTS where the bundle would not do', async (t) => {
  const extra = { ...files, NODE_EXTRA_CA_CERTS: TRUST_PATHS.certificate };
  t.same(trustEnv({}, { systemBundle: false }), extra, 'no system bundle: the CA alone would be trusted');
  t.same(
    trustEnv({ SSL_CERT_FILE: '/app/ca.pem' }, host),
    { ...extra, SSL_CERT_FILE: '/app/ca.pem' },
    'the app names its own file: Node still trusts the CA',
  );
  t.same(
    trustEnv({ NODE_OPTIONS: '--use-bundled-ca' }, host),
    { ...extra, NODE_OPTIONS: '--use-bundled-ca' },
    'the app picks Node’s bundled store: the two flags would refuse each other',
  );
  t.equal(
    trustEnv({ NODE_EXTRA_CA_CERTS: '/app/extra.pem' }, { systemBundle: false }).NODE_EXTRA_CA_CERTS,
    '/app/extra.pem',
    'the app’s own value wins',
  );
});

t.test('the NODE_OPTIONS it makes are ones Node starts with', async (t) => {
  for (const own of ['', '--max-old-space-size=256', '--use-openssl-ca --enable-source-maps']) {
    const env = trustEnv(own ? { NODE_OPTIONS: own } : {}, host);
    const run = spawnSync(process.execPath, ['-e', 'process.stdout.write("ok")'], {
      env: { PATH: process.env.PATH, NODE_OPTIONS: env.NODE_OPTIONS },
      encoding: 'utf8',
    });
    t.equal(run.stdout, 'ok', `node starts with NODE_OPTIONS=${env.NODE_OPTIONS}: ${run.stderr}`);
  }
});
