// @peculiar/x509 resolves its services through tsyringe, which needs the Reflect metadata polyfill loaded
// first. Only the pod process imports this module.
import 'reflect-metadata';
import { webcrypto } from 'node:crypto';
type CryptoKeyPair = webcrypto.CryptoKeyPair;
import { createSecureContext, type SecureContext } from 'node:tls';
import * as x509 from '@peculiar/x509';

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

const ALGORITHM = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' } as const;
const DAY_MS = 24 * 60 * 60 * 1000;
/** Certificates are valid from an hour ago (clocks differ a little) for a year: longer than any sandbox. */
const VALID_BEFORE_MS = 60 * 60 * 1000;
const VALID_FOR_MS = 365 * DAY_MS;
const SERVER_AUTH = '1.3.6.1.5.5.7.3.1';
/** Certificates kept at once; beyond it they are made again on demand. */
const MAX_KEPT_CONTEXTS = 512;

function serial(): string {
  // Positive and unique: 16 random bytes with the top bit cleared.
  const bytes = webcrypto.getRandomValues(new Uint8Array(16));
  bytes[0]! &= 0x7f;
  return Buffer.from(bytes).toString('hex');
}

function pem(label: string, der: ArrayBuffer): string {
  const body = Buffer.from(der).toString('base64').replace(/.{64}/g, '$&\n');
  return `-----BEGIN ${label}-----\n${body.replace(/\n$/, '')}\n-----END ${label}-----\n`;
}

/**
 * The certificate authority of one sandbox, made by its pod when the pod starts. Its certificate is
 * trusted by every process of the sandbox (the pod writes it where the app's view shows it); its private
 * key never leaves this process's memory, so nothing in the sandbox can read it and no other sandbox
 * trusts what it signs (docs/security.md, "The vendors' host names"). Server certificates are issued on
 * demand, one per host name the pod's front door answers for, and kept for the pod's life.
 */
export class SandboxCa {
  private readonly contexts = new Map<string, Promise<SecureContext>>();

  private constructor(
    private readonly caKeys: CryptoKeyPair,
    private readonly caCert: x509.X509Certificate,
    private readonly serverKeys: CryptoKeyPair,
    private readonly serverKeyPem: string,
  ) {}

  static async create(label: string): Promise<SandboxCa> {
    const [caKeys, serverKeys] = await Promise.all([
      webcrypto.subtle.generateKey(ALGORITHM, false, ['sign', 'verify']) as Promise<CryptoKeyPair>,
      webcrypto.subtle.generateKey(ALGORITHM, true, ['sign', 'verify']) as Promise<CryptoKeyPair>,
    ]);
    const now = Date.now();
    const caCert = await x509.X509CertificateGenerator.createSelfSigned({
      serialNumber: serial(),
      name: `CN=Twinbox sandbox CA ${label}, O=Twinbox`,
      notBefore: new Date(now - VALID_BEFORE_MS),
      notAfter: new Date(now + VALID_FOR_MS),
      keys: caKeys,
      signingAlgorithm: ALGORITHM,
      extensions: [
        new x509.BasicConstraintsExtension(true, 0, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
        await x509.SubjectKeyIdentifierExtension.create(caKeys.publicKey),
      ],
    });
    const serverKey = await webcrypto.subtle.exportKey('pkcs8', serverKeys.privateKey);
    return new SandboxCa(caKeys, caCert, serverKeys, pem('PRIVATE KEY', serverKey));
  }

  /** The CA's certificate (public), PEM. */
  get certificatePem(): string {
    return this.caCert.toString('pem') + '\n';
  }

  /** A TLS context whose certificate names `hostname`, issued by this CA (once per name). */
  contextFor(hostname: string): Promise<SecureContext> {
    let context = this.contexts.get(hostname);
    if (!context) {
      // A `*` host name matches endless names: the app could make the pod keep a certificate for each.
      if (this.contexts.size >= MAX_KEPT_CONTEXTS) this.contexts.clear();
      context = this.issue(hostname).then((certPem) =>
        createSecureContext({ key: this.serverKeyPem, cert: certPem + this.certificatePem }),
      );
      context.catch(() => this.contexts.delete(hostname));
      this.contexts.set(hostname, context);
    }
    return context;
  }

  private async issue(hostname: string): Promise<string> {
    const now = Date.now();
    const cert = await x509.X509CertificateGenerator.create({
      serialNumber: serial(),
      subject: `CN=${hostname}`,
      issuer: this.caCert.subject,
      notBefore: new Date(now - VALID_BEFORE_MS),
      notAfter: new Date(now + VALID_FOR_MS),
      signingKey: this.caKeys.privateKey,
      publicKey: this.serverKeys.publicKey,
      signingAlgorithm: ALGORITHM,
      extensions: [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
        new x509.ExtendedKeyUsageExtension([SERVER_AUTH]),
        new x509.SubjectAlternativeNameExtension([{ type: 'dns', value: hostname }]),
        await x509.AuthorityKeyIdentifierExtension.create(this.caKeys.publicKey),
      ],
    });
    return cert.toString('pem') + '\n';
  }
}
