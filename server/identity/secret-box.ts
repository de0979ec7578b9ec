import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

const ALGORITHM = 'aes-256-gcm';
/** Sealed values start with this, so a format change can be told apart from tampering. */
const VERSION = 'v1';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** Production was asked to keep secrets at rest without a configured key. */
export class EncryptionKeyMissingError extends Error {
  constructor() {
    super(
      'TWINBOX_ENCRYPTION_KEY is required in production: GitHub tokens are sealed with it at rest, and every ' +
        'Twinbox process sharing the store must hold the same key. Make one with: openssl rand -base64 32',
    );
    this.name = 'EncryptionKeyMissingError';
  }
}

/** A sealed value that does not open: another key, another record, or altered bytes. */
export class SealBrokenError extends Error {
  constructor() {
    super('a sealed secret could not be opened (wrong TWINBOX_ENCRYPTION_KEY, or the value was altered)');
    this.name = 'SealBrokenError';
  }
}

/**
 * Secrets Twinbox must read back (GitHub tokens it calls GitHub with), sealed with AES-256-GCM before they
 * reach the store. Each value is bound to what it belongs to (`context`, e.g. the identity's id) as
 * additional data, so a sealed token copied onto another record does not open there.
 */
export class SecretBox {
  private constructor(private readonly key: Buffer) {}

  /**
   * The configured key; without one, outside production, a key generated once and kept (mode 0600) in
   * the data directory, as the JWT secret is. In production a missing key is an error: a generated key
   * would differ between processes and be lost with the machine.
   */
  static async create(options: {
    key: Buffer | undefined;
    dataDir: string;
    production: boolean;
  }): Promise<SecretBox> {
    if (options.key) return new SecretBox(options.key);
    if (options.production) throw new EncryptionKeyMissingError();
    return new SecretBox(await loadOrCreateKey(join(options.dataDir, 'encryption-key')));
  }

  seal(plaintext: string, context: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv(ALGORITHM, this.key, iv);
    cipher.setAAD(Buffer.from(context, 'utf8'));
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    const tag = cipher.getAuthTag();
    return [VERSION, iv, tag, body]
      .map((part) => (typeof part === 'string' ? part : part.toString('base64url')))
      .join('.');
  }

  open(sealed: string, context: string): string {
    const [version, iv, tag, body, ...rest] = sealed.split('.');
    if (version !== VERSION || !iv || !tag || body === undefined || rest.length) throw new SealBrokenError();
    try {
      const decipher = createDecipheriv(ALGORITHM, this.key, Buffer.from(iv, 'base64url'));
      decipher.setAAD(Buffer.from(context, 'utf8'));
      const tagBytes = Buffer.from(tag, 'base64url');
      if (tagBytes.length !== TAG_BYTES) throw new SealBrokenError();
      decipher.setAuthTag(tagBytes);
      return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString(
        'utf8',
      );
    } catch {
      throw new SealBrokenError();
    }
  }
}

/** A 32-byte key kept base64 in `path` (mode 0600), made on first use, so it survives restarts. */
async function loadOrCreateKey(path: string): Promise<Buffer> {
  try {
    const key = Buffer.from((await readFile(path, 'utf8')).trim(), 'base64');
    if (key.length !== 32) throw new Error(`${path} does not hold a 32-byte base64 key`);
    return key;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const key = randomBytes(32);
  try {
    await writeFile(path, key.toString('base64'), { mode: 0o600, flag: 'wx' });
  } catch (error) {
    // Another start won the race: its key is the one.
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return loadOrCreateKey(path);
    throw error;
  }
  return key;
}
