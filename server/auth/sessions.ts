import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { SignJWT, jwtVerify } from 'jose';
import type { Store } from '../store/store.ts';
import { SAFE_RECORD_ID, UniqueViolationError } from '../store/store.ts';
import { expiresAt } from '../store/expiry.ts';
import { sharedSecret } from './shared-secrets.ts';

/** Pinned so a token minted elsewhere, or for another audience, is never accepted. */
const ALGORITHM = 'HS256';
const ISSUER = 'twinbox';
const AUDIENCE = 'twinbox-api';

export interface SessionClaims {
  accountId: string;
  /** The token's `jti`: what a sign-out revokes. */
  sessionId: string;
  expiresAt: Date;
}

/**
 * JWT sessions for the web app and user-scoped flows. A session signed out before it expires is kept
 * in the Store's `revokedSessions` under its `jti` until it would have expired; every check looks it up
 * there by primary key (one indexed read), so a sign-out on any process holds on every other at once.
 */
export class Sessions {
  private constructor(
    private readonly key: Uint8Array,
    private readonly ttlMinutes: number,
    private readonly store: Pick<Store, 'revokedSessions'>,
  ) {}

  /**
   * Uses `secret` (TWINBOX_JWT_SECRET) when configured; otherwise a secret generated once and kept in
   * the Store, so every process sharing it accepts the others' sessions and a restart keeps them. A
   * secret kept by an earlier Twinbox in `<dataDir>/jwt-secret` is taken over.
   */
  static async create(options: {
    secret: string | undefined;
    store: Pick<Store, 'revokedSessions' | 'serverSecrets'>;
    dataDir: string;
    ttlMinutes: number;
  }): Promise<Sessions> {
    const secret =
      options.secret ??
      (await sharedSecret(options.store.serverSecrets, 'jwt', join(options.dataDir, 'jwt-secret')));
    return new Sessions(new TextEncoder().encode(secret), options.ttlMinutes, options.store);
  }

  /** The longest a session lives: how long a revocation must be kept at most. */
  get ttlMs(): number {
    return this.ttlMinutes * 60_000;
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

  /**
   * The claims of a valid session token; undefined for anything else (bad signature, expired, signed
   * out, ...).
   */
  async verify(token: string): Promise<SessionClaims | undefined> {
    const claims = await this.decode(token);
    if (!claims) return undefined;
    return (await this.store.revokedSessions.get(claims.sessionId)) ? undefined : claims;
  }

  /**
   * Signs the session of `token` out on every process: kept as revoked until it would have expired.
   * False when the token is no valid session (nothing to revoke); true when revoked, or already was.
   */
  async revoke(token: string): Promise<boolean> {
    const claims = await this.decode(token);
    if (!claims) return false;
    try {
      await this.store.revokedSessions.insert({
        id: claims.sessionId,
        account_id: claims.accountId,
        revoked_at: new Date().toISOString(),
        ...expiresAt(claims.expiresAt),
      });
    } catch (error) {
      if (!(error instanceof UniqueViolationError)) throw error;
    }
    return true;
  }

  /** The claims of a genuine, unexpired token, revoked or not. */
  private async decode(token: string): Promise<SessionClaims | undefined> {
    try {
      const { payload } = await jwtVerify(token, this.key, {
        algorithms: [ALGORITHM],
        issuer: ISSUER,
        audience: AUDIENCE,
        requiredClaims: ['exp', 'sub', 'jti'],
      });
      // Every session Twinbox issues has a hex jti; one that could not be a record id is not ours.
      if (!payload.sub || !payload.jti || !SAFE_RECORD_ID.test(payload.jti)) return undefined;
      return { accountId: payload.sub, sessionId: payload.jti, expiresAt: new Date(payload.exp! * 1000) };
    } catch {
      return undefined;
    }
  }
}
