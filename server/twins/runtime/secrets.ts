import { hash, randomBytes, timingSafeEqual } from 'node:crypto';

// crypto.hash, one call, not createHash's object and its update and digest: a token is checked on every
// request a twin serves, and the one-shot form took less than half the time (bench/twins).

/** A random token with a vendor-looking prefix, e.g. `sk_test_...`, `ghp_...`, `xoxb-...`. */
export function randomToken(prefix: string, bytes = 24): string {
  return prefix + randomBytes(bytes).toString('base64url');
}

export function sha256Hex(value: string): string {
  return hash('sha256', value, 'hex');
}

/**
 * Compares a presented token with a stored SHA-256 hash in constant time. Hashing first makes the
 * comparison length-independent, and lets us persist the hash instead of the admin token itself.
 */
export function tokenMatchesHash(presented: string, expectedHash: string): boolean {
  const a = Buffer.from(sha256Hex(presented), 'hex');
  const b = Buffer.from(expectedHash, 'hex');
  return a.length === b.length && timingSafeEqual(a, b);
}

/** Compares two secrets in constant time (SHA-256 digests of equal length, whatever the inputs' lengths). */
export function secretEquals(presented: string, expected: string): boolean {
  const a = hash('sha256', presented, 'buffer');
  const b = hash('sha256', expected, 'buffer');
  return timingSafeEqual(a, b);
}

/**
 * Whether `presented` is one of `known`, in time that depends on how many secrets there are but not on
 * their contents: every candidate is compared, with no early exit.
 */
export function isKnownSecret(presented: string, known: Iterable<string>): boolean {
  if (!presented) return false;
  const digest = hash('sha256', presented, 'buffer');
  let found = false;
  for (const candidate of known) {
    const match = timingSafeEqual(digest, knownDigest(candidate));
    found = found || match;
  }
  return found;
}

/**
 * Digests of the secrets a twin knows, so a twin with many issued tokens hashes only the presented one
 * per request. Only known secrets are cached (never what a caller presents), and the cache is bounded.
 */
const knownDigests = new Map<string, Buffer>();
const KNOWN_DIGESTS_MAX = 10_000;

function knownDigest(secret: string): Buffer {
  let digest = knownDigests.get(secret);
  if (!digest) {
    if (knownDigests.size >= KNOWN_DIGESTS_MAX) knownDigests.clear();
    digest = hash('sha256', secret, 'buffer');
    knownDigests.set(secret, digest);
  }
  return digest;
}

/** The token of an `Authorization` header: `Bearer x`, `token x`, or the password (else user) of Basic. */
export function presentedToken(
  header: string | null | undefined,
): { scheme: string; token: string } | undefined {
  const m = /^\s*(\w+)\s+(\S+)\s*$/.exec(header ?? '');
  if (!m) return undefined;
  const scheme = m[1]!.toLowerCase();
  if (scheme !== 'basic') return { scheme, token: m[2]! };
  const decoded = Buffer.from(m[2]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  const user = colon === -1 ? decoded : decoded.slice(0, colon);
  const password = colon === -1 ? '' : decoded.slice(colon + 1);
  return { scheme, token: password || user };
}
