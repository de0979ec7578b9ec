import { createHash, randomBytes } from 'node:crypto';
import { crc32 } from 'node:zlib';

/**
 * API keys look like `twinbox_sk_<33 base62 chars: 192 random bits><6 base62 chars: CRC32 of the body>`.
 * The prefix lets secret scanners and people recognise a key; the checksum lets us turn away a typo or
 * a made-up key without touching the store.
 */
export const API_KEY_PREFIX = 'twinbox_sk_';
const BODY_LENGTH = 33;
const CHECKSUM_LENGTH = 6;
const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const KEY_PATTERN = new RegExp(
  `^${API_KEY_PREFIX}([0-9A-Za-z]{${BODY_LENGTH}})([0-9A-Za-z]{${CHECKSUM_LENGTH}})$`,
);

function base62(value: bigint, length: number): string {
  let text = '';
  for (let rest = value; rest > 0n; rest /= 62n) text = ALPHABET[Number(rest % 62n)] + text;
  return text.padStart(length, '0');
}

/** CRC32 of the body in base62. Plain numbers, not BigInt: it runs on every authenticated request. */
function checksumOf(body: string): string {
  let text = '';
  for (let rest = crc32(body); rest > 0; rest = Math.floor(rest / 62)) text = ALPHABET[rest % 62] + text;
  return text.padStart(CHECKSUM_LENGTH, '0');
}

export function generateApiKey(): string {
  const body = base62(BigInt(`0x${randomBytes(24).toString('hex')}`), BODY_LENGTH);
  return `${API_KEY_PREFIX}${body}${checksumOf(body)}`;
}

export function looksLikeApiKey(token: string): boolean {
  return token.startsWith(API_KEY_PREFIX);
}

/** True when `token` has the shape of a key and its checksum matches. */
export function hasValidChecksum(token: string): boolean {
  const match = KEY_PATTERN.exec(token);
  return match !== null && checksumOf(match[1]!) === match[2];
}

/** The stored form of a key: SHA-256, hex. Keys carry 192 random bits, so a fast hash is enough. */
export function hashApiKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

/** What may be shown of a key after creation, so a person can tell keys apart. */
export function displayPrefix(key: string): string {
  return key.slice(0, API_KEY_PREFIX.length + 4);
}
