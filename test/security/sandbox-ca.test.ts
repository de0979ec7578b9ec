import t from 'tap';
import { connect, createServer, type TLSSocket } from 'node:tls';
import type { AddressInfo } from 'node:net';
import { X509Certificate } from 'node:crypto';
import { SandboxCa } from '../../server/pod/sandbox-ca.ts';

// The sandbox CA alone (server/pod/sandbox-ca.ts): what it issues verifies for the name asked, against
// this CA only; it is a CA that can sign nothing below its server certificates.

async function handshake(
  ca: SandboxCa,
  trusted: string,
  servername: string,
): Promise<{ ok: true; subject: string } | { ok: false; code: string }> {
  const server = createServer({
    SNICallback: (name, done) => ca.contextFor(name).then((context) => done(null, context), done),
  });
  server.on('secureConnection', (socket: TLSSocket) => socket.end());
  server.on('tlsClientError', () => {});
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  try {
    return await new Promise((resolve) => {
      const socket = connect({ host: '127.0.0.1', port, servername, ca: trusted }, () => {
        resolve({ ok: true, subject: String(socket.getPeerCertificate().subject.CN) });
        socket.end();
      });
      socket.on('error', (error: NodeJS.ErrnoException) =>
        resolve({ ok: false, code: error.code ?? error.message }),
      );
    });
  } finally {
    server.close();
  }
}

t.test('a certificate for the name asked, trusted through this CA and no other', async (t) => {
  const [one, other] = await Promise.all([SandboxCa.create('one'), SandboxCa.create('other')]);
  t.not(one.certificatePem, other.certificatePem, 'two CAs, two certificates');

  const good = await handshake(one, one.certificatePem, 'api.stripe.com');
  t.same(good, { ok: true, subject: 'api.stripe.com' }, 'verified, for the name asked');
  const wrongCa = await handshake(one, other.certificatePem, 'api.stripe.com');
  t.equal(wrongCa.ok, false, 'a client trusting another sandbox’s CA refuses it');
  t.match(
    (wrongCa as { code: string }).code,
    /SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT/,
  );

  const ca = new X509Certificate(one.certificatePem);
  t.equal(ca.ca, true, 'the CA certificate is a CA');
  t.match(ca.subject, /Twinbox sandbox CA one/);
  t.notMatch(one.certificatePem, /PRIVATE KEY/, 'what is written out holds no key');
});

t.test('a wildcard name cannot make the CA keep certificates without end', async (t) => {
  const ca = await SandboxCa.create('many');
  const kept = (ca as unknown as { contexts: Map<string, unknown> }).contexts;
  let issued = 0;
  for (let i = 0; i < 600; i++) {
    await ca.contextFor(`org${i}.okta.com`);
    issued++;
  }
  t.equal(issued, 600, 'it issued for every name');
  t.ok(kept.size <= 512, `at most 512 kept (${kept.size})`);
  const again = await handshake(ca, ca.certificatePem, 'org3.okta.com');
  t.same(again, { ok: true, subject: 'org3.okta.com' }, 'a dropped name is issued again when asked');
});
