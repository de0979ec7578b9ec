/**
 * `auth.revoke`: a revoked token stops working at once, and Slack then answers it with `token_revoked`
 * (an unknown one is `invalid_auth`). Only SHA-256 digests of revoked tokens are kept, and saved with the
 * twin's state so a restart does not bring a revoked token back as merely unknown.
 */
import type { Engine } from '../../engine/emulate.ts';
import { json } from '../../runtime/http.ts';
import { sha256Hex } from '../../runtime/secrets.ts';

export class TokenRevocations {
  private readonly digests = new Set<string>();

  has(token: string | undefined): boolean {
    return !!token && this.digests.has(sha256Hex(token));
  }

  /** The error Slack gives a token the twin does not accept. */
  errorFor(token: string | undefined): 'token_revoked' | 'invalid_auth' {
    return this.has(token) ? 'token_revoked' : 'invalid_auth';
  }

  /** Answers `auth.revoke` for the caller's own token; with `test` set nothing is revoked, as on Slack. */
  revoke(engine: Engine, token: string, test: boolean): Response {
    if (test) return json(200, { ok: true, revoked: false });
    engine.tokenMap.delete(token);
    const stored = engine.store.collection('slack.tokens', ['token', 'user_id', 'app_id', 'team_id']);
    for (const record of stored.findBy('token', token)) stored.delete(record.id);
    this.digests.add(sha256Hex(token));
    return json(200, { ok: true, revoked: true });
  }

  list(): string[] {
    return [...this.digests];
  }

  restore(digests: string[]): void {
    this.digests.clear();
    for (const d of digests) this.digests.add(d);
  }

  clear(): void {
    this.digests.clear();
  }
}
