import { randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { SignJWT, jwtVerify } from 'jose';

/** Pinned so a token minted elsewhere, or for another audience, is never accepted. */
const ALGORITHM = 'HS256';
const ISSUER = 'twinbox';
const AUDIENCE = 'twinbox-api';

export interface SessionClaims {
  accountId: string;
}

/** JWT sessions for the web app and user-scoped flows. */
export class Sessions {
  private constructor(
    private readonly key: Uint8Array,
    private readonly ttlMinutes: number,
  ) {}

  /**
   * Uses `secret` when configured; otherwise a secret generated once and kept (mode 0600) in the data
   * directory, so sessions survive a restart.
   */
  static async create(options: {
    secret: string | undefined;
    dataDir: string;
    ttlMinutes: number;
  }): Promise<Sessions> {
    const secret = options.secret ?? (await loadOrCreateSecret(join(options.dataDir, 'jwt-secret')));
    return new Sessions(new TextEncoder().encode(secret), options.ttlMinutes);
  }

  async issue(accountId: string): Promise<string> {
    return new SignJWT({})
      .setProtectedHeader({ alg: ALGORITHM, typ: 'JWT' })
      .setSubject(accountId)
      .setIssuer(ISSUER)
      .setAudience(AUDIENCE)
      .setIssuedAt()
      .setJti(randomBytes(12).toString('hex'))
      .setExpirationTime(`${this.ttlMinutes}m`)
      .sign(this.key);
  }

  /** The claims of a valid session token; undefined for anything else (bad signature, expired, ...). */
  async verify(token: string): Promise<SessionClaims | undefined> {
    try {
      const { payload } = await jwtVerify(token, this.key, {
        algorithms: [ALGORITHM],
        issuer: ISSUER,
        audience: AUDIENCE,
        requiredClaims: ['exp', 'sub'],
      });
      return payload.sub ? { accountId: payload.sub } : undefined;
    } catch {
      return undefined;
    }
  }
}

/** A secret kept in `path` (mode 0600), made on first use, so it survives restarts. */
export async function loadOrCreateSecret(path: string): Promise<string> {
  try {
    return (await readFile(path, 'utf8')).trim();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
  const secret = randomBytes(48).toString('base64url');
  await writeFile(path, secret, { mode: 0o600, flag: 'wx' });
  return secret;
}
