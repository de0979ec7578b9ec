import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** A random token with a vendor-looking prefix, e.g. `sk_test_...`, `ghp_...`, `xoxb-...`. */
export function randomToken(prefix: string, bytes = 24): string {
  return prefix + randomBytes(bytes).toString('base64url');
}

export function sha256Hex(value: string): string {
  return createHash('sha256').update(value).digest('hex');
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
