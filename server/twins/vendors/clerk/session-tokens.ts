/**
 * Session tokens signed with the instance's own RSA key (persisted with its credentials), where the engine
 * signs every instance's tokens with one key made per process: a token of one sandbox would verify in
 * another, and none would verify after a restart. `GET /v1/jwks` publishes the key, CLERK_JWT_KEY hands it
 * out as PEM for @clerk/backend's networkless `jwtKey`.
 */
import { createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';
import { exportJWK, SignJWT } from 'jose';
import type { EngineStore } from '../../engine/emulate.ts';
import { clerkError, clerkJson } from './shape.ts';

/** How long a session token lives unless `expires_in_seconds` says otherwise: Clerk's default (60 s). */
const TOKEN_TTL_SECONDS = 60;
/** Issued tokens remembered for masking in the request log. */
const ISSUED_MAX = 1000;

export class SessionTokens {
  private readonly privateKey: KeyObject;
  private readonly publicKey: KeyObject;
  readonly kid: string;
  private readonly recent: string[] = [];

  constructor(
    private readonly store: EngineStore,
    private readonly issuer: string,
    privatePem: string,
  ) {
    this.privateKey = createPrivateKey(privatePem);
    this.publicKey = createPublicKey(this.privateKey);
    const der = this.publicKey.export({ type: 'spki', format: 'der' });
    // A stable id per key, as Clerk's `ins_...` kids are per instance.
    this.kid = `ins_${Buffer.from(der.subarray(-24)).toString('base64url')}`;
  }

  publicKeyPem(): string {
    return this.publicKey.export({ type: 'spki', format: 'pem' }).toString();
  }

  async jwks(): Promise<{ keys: unknown[] }> {
    const jwk = await exportJWK(this.publicKey);
    return { keys: [{ use: 'sig', kty: 'RSA', kid: this.kid, alg: 'RS256', n: jwk.n, e: jwk.e }] };
  }

  issued(): string[] {
    return this.recent;
  }

  /**
   * `POST /v1/sessions/{id}/tokens[/{template}]`: a token for an active session, with the organization
   * claims (v1 names) of the user's first membership, and `metadata` from the user's public metadata.
   */
  async issue(sessionId: string, template: string | undefined, request: Request): Promise<Response> {
    const body = (await request.json().catch(() => ({}))) as { expires_in_seconds?: unknown } | null;
    const ttl = body?.expires_in_seconds ?? TOKEN_TTL_SECONDS;
    // The description's bounds for the lifetime override.
    if (typeof ttl !== 'number' || !Number.isInteger(ttl) || ttl < 30 || ttl > 315360000)
      return clerkError(
        422,
        'form_param_value_invalid',
        'is invalid',
        'expires_in_seconds must be an integer between 30 and 315360000.',
        { param_name: 'expires_in_seconds' },
      );
    const session = this.store
      .collection('clerk.sessions', ['clerk_id', 'user_id'])
      .findOneBy('clerk_id', sessionId);
    if (!session) return clerkError(404, 'resource_not_found', 'not found', 'Resource not found');
    if (session.status !== 'active')
      return clerkError(404, 'resource_not_found', 'not found', 'Resource not found');
    const user = this.store
      .collection('clerk.users', ['clerk_id', 'username'])
      .findOneBy('clerk_id', session.user_id);
    if (!user) return clerkError(404, 'resource_not_found', 'not found', 'Resource not found');
    if (template !== undefined)
      // The twin has no JWT templates (an instance setting in Clerk's dashboard): Clerk's 404 for an unknown one.
      return clerkError(404, 'resource_not_found', 'not found', `JWT template ${template} not found`);
    const claims: Record<string, unknown> = { sid: sessionId };
    const membership = this.store
      .collection('clerk.memberships', ['membership_id', 'org_id', 'user_id'])
      .findBy('user_id', String(user.clerk_id))[0];
    const org =
      membership &&
      this.store.collection('clerk.orgs', ['clerk_id', 'slug']).findOneBy('clerk_id', membership.org_id);
    if (membership && org) {
      claims.org_id = org.clerk_id;
      claims.org_slug = org.slug;
      claims.org_role = membership.role;
      claims.org_permissions = membership.permissions ?? [];
    }
    const metadata = user.public_metadata as Record<string, unknown> | undefined;
    if (metadata && Object.keys(metadata).length) claims.metadata = metadata;
    const now = Math.floor(Date.now() / 1000);
    const jwt = await new SignJWT(claims)
      .setProtectedHeader({ alg: 'RS256', kid: this.kid, typ: 'JWT' })
      .setIssuer(this.issuer)
      .setSubject(String(user.clerk_id))
      .setIssuedAt(now)
      .setNotBefore(now - 10)
      .setExpirationTime(now + ttl)
      .sign(this.privateKey);
    const sessions = this.store.collection('clerk.sessions', ['clerk_id', 'user_id']);
    sessions.update(session.id, { last_active_at: now, updated_at_unix: now });
    this.recent.push(jwt);
    if (this.recent.length > ISSUED_MAX) this.recent.shift();
    return clerkJson(200, { object: 'token', jwt });
  }
}
