import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Clock } from '../clock.ts';
import type { Collection } from '../../store/store.ts';
import type { OAuthStateRecord } from '../../store/records.ts';
import { expiresAt, lapsed } from '../../store/expiry.ts';

export const STATE_TTL_MS = 10 * 60_000;

export type OAuthPurpose = 'login' | 'connect';

export interface OAuthFlow {
  purpose: OAuthPurpose;
  /** connect only: the signed-in account, kept here and never in a URL. */
  accountId: string | undefined;
  /** PKCE verifier, sent at the code exchange. */
  codeVerifier: string;
  /** login only: the page of this site to land on once signed in (already checked by `safeNext`). */
  next: string | undefined;
}

export type TakeResult = { ok: true; flow: OAuthFlow } | { ok: false; reason: string };

/**
 * OAuth `state` values: `<nonce>.<HMAC of nonce>`, each tied to a server-side record (purpose, account,
 * PKCE verifier) and to a random value in the starting browser's cookie. Single use: taking a state
 * removes it, whatever the outcome. The records are in the Store (`oauthStates`, keyed by nonce), so a
 * flow started on one Twinbox process may finish on another; the key is the Store's shared code key.
 * Abandoned flows lapse after 10 minutes and are swept (store/expiry.ts).
 */
export class OAuthStates {
  constructor(
    private readonly key: Uint8Array,
    private readonly clock: Clock,
    private readonly records: Collection<OAuthStateRecord>,
  ) {}

  /** Starts a flow: the `state` for the URL, the browser binding for the cookie, the PKCE challenge. */
  async start(flow: { purpose: OAuthPurpose; accountId?: string; next?: string }): Promise<{
    state: string;
    binding: string;
    codeChallenge: string;
  }> {
    const nonce = randomBytes(24).toString('base64url');
    const binding = randomBytes(24).toString('base64url');
    const codeVerifier = randomBytes(48).toString('base64url');
    const now = this.clock.now();
    await this.records.insert({
      id: nonce,
      purpose: flow.purpose,
      account_id: flow.accountId ?? null,
      code_verifier: codeVerifier,
      next: flow.next ?? null,
      binding_hash: sha256(binding).toString('base64url'),
      created_at: now.toISOString(),
      ...expiresAt(now.getTime() + STATE_TTL_MS),
    });
    return {
      state: `${nonce}.${this.sign(nonce)}`,
      binding,
      codeChallenge: createHash('sha256').update(codeVerifier).digest('base64url'),
    };
  }

  /** Consumes `state` if it is genuine, live, unused and was started by the browser holding `binding`. */
  async take(state: unknown, binding: unknown): Promise<TakeResult> {
    if (typeof state !== 'string' || state === '')
      return { ok: false, reason: 'The sign-in link has no state.' };
    const [nonce, signature, ...rest] = state.split('.');
    if (!nonce || !signature || rest.length > 0 || !safeEqual(signature, this.sign(nonce))) {
      return { ok: false, reason: 'The sign-in state is not one Twinbox issued.' };
    }
    const record = await this.records.get(nonce);
    // Only the process whose delete removed it may use it: two callbacks racing get one success.
    if (!record || !(await this.records.delete(nonce)))
      return { ok: false, reason: 'The sign-in state is unknown or was already used. Start again.' };
    if (lapsed(record, this.clock.now().getTime())) {
      return { ok: false, reason: 'The sign-in took longer than 10 minutes. Start again.' };
    }
    if (
      typeof binding !== 'string' ||
      !timingSafeEqual(sha256(binding), Buffer.from(record.binding_hash, 'base64url'))
    ) {
      return {
        ok: false,
        reason: 'The sign-in was finished in a different browser from the one that started it.',
      };
    }
    return {
      ok: true,
      flow: {
        purpose: record.purpose,
        accountId: record.account_id ?? undefined,
        codeVerifier: record.code_verifier,
        next: record.next ?? undefined,
      },
    };
  }

  private sign(nonce: string): string {
    return createHmac('sha256', this.key).update(`oauth-state\0${nonce}`).digest('base64url');
  }
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

function safeEqual(a: string, b: string): boolean {
  return timingSafeEqual(sha256(a), sha256(b));
}
