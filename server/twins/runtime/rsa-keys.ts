import { createPrivateKey, generateKeyPair } from 'node:crypto';
import { promisify } from 'node:util';

/**
 * RSA keys of the kind twins hand out (2048 bits, PKCS#1 PEM: a GitHub App's private key, a Clerk
 * instance's signing key). Each is a prime search of 100 ms to seconds on one core. A host may make them
 * outside the process that runs the twins and hand them over (`giveRsaKeys`): Twinbox makes a first pod's
 * keys while that pod's code loads (server/deploy/pods/key-stock.ts), so the search is off the first
 * deploy's path. Each key given is taken once, by the first twin that asks; a process given none makes its
 * own. A key made elsewhere is no weaker: it is made the same way and used once.
 */
export const RSA_MODULUS_BITS = 2048;

const generateKeyPairAsync = promisify(generateKeyPair);

/** A new key, made off the event loop (on libuv's pool). */
export function makeRsaKey(): Promise<string> {
  return generateKeyPairAsync('rsa', {
    modulusLength: RSA_MODULUS_BITS,
    publicKeyEncoding: { type: 'pkcs1', format: 'pem' },
    privateKeyEncoding: { type: 'pkcs1', format: 'pem' },
  }).then(({ privateKey }) => privateKey);
}

const given: string[] = [];

/**
 * Keys made elsewhere, for this process's twins to take. Only what is an RSA key of RSA_MODULUS_BITS in
 * PKCS#1 PEM is kept (it comes from a file another process wrote); the rest is dropped, and its twin makes
 * its own. Returns how many were kept.
 */
export function giveRsaKeys(keys: readonly unknown[]): number {
  let kept = 0;
  for (const pem of keys) {
    if (typeof pem !== 'string' || !pem.startsWith('-----BEGIN RSA PRIVATE KEY-----')) continue;
    try {
      const key = createPrivateKey(pem);
      if (key.asymmetricKeyType !== 'rsa' || key.asymmetricKeyDetails?.modulusLength !== RSA_MODULUS_BITS)
        continue;
    } catch {
      continue;
    }
    given.push(pem);
    kept++;
  }
  return kept;
}

/** A key given to this process and not taken yet (it is taken now), or undefined. */
export function takeGivenRsaKey(): string | undefined {
  return given.shift();
}

/** A key given to this process if one is left, else a new one. */
export function rsaKey(): Promise<string> {
  const key = takeGivenRsaKey();
  return key ? Promise.resolve(key) : makeRsaKey();
}
