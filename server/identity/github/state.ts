import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Clock } from '../clock.ts';

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

interface Pending extends OAuthFlow {
  bindingHash: Buffer;
  expiresAt: number;
}

export type TakeResult = { ok: true; flow: OAuthFlow } | { ok: false; reason: string };

/**
 * OAuth `state` values: `<nonce>.<HMAC of nonce>`, each tied to a server-side record (purpose, account,
 * PKCE verifier) and to a random value in the starting browser's cookie. Single use: taking a state
 * removes it, whatever the outcome. Kept in memory: a flow lasts minutes, and a restart only makes
 * people click "Sign in with GitHub" again.
 */
export class OAuthStates {
  private readonly pending = new Map<string, Pending>();

  constructor(
    private readonly key: Uint8Array,
    private readonly clock: Clock,
  ) {}

  /** Starts a flow: the `state` for the URL, the browser binding for the cookie, the PKCE challenge. */
  start(flow: { purpose: OAuthPurpose; accountId?: string; next?: string }): {
    state: string;
    binding: string;
    codeChallenge: string;
  } {
    this.prune();
    const nonce = randomBytes(24).toString('base64url');
    const binding = randomBytes(24).toString('base64url');
    const codeVerifier = randomBytes(48).toString('base64url');
    this.pending.set(nonce, {
      purpose: flow.purpose,
      accountId: flow.accountId,
      codeVerifier,
      next: flow.next,
      bindingHash: sha256(binding),
      expiresAt: this.clock.now().getTime() + STATE_TTL_MS,
    });
    return {
      state: `${nonce}.${this.sign(nonce)}`,
      binding,
      codeChallenge: createHash('sha256').update(codeVerifier).digest('base64url'),
    };
  }

  /** Consumes `state` if it is genuine, live, unused and was started by the browser holding `binding`. */
  take(state: unknown, binding: unknown): TakeResult {
    if (typeof state !== 'string' || state === '')
      return { ok: false, reason: 'The sign-in link has no state.' };
    const [nonce, signature, ...rest] = state.split('.');
    if (!nonce || !signature || rest.length > 0 || !safeEqual(signature, this.sign(nonce))) {
      return { ok: false, reason: 'The sign-in state is not one Twinbox issued.' };
    }
    const record = this.pending.get(nonce);
    this.pending.delete(nonce);
    if (!record)
      return { ok: false, reason: 'The sign-in state is unknown or was already used. Start again.' };
    if (this.clock.now().getTime() >= record.expiresAt) {
      return { ok: false, reason: 'The sign-in took longer than 10 minutes. Start again.' };
    }
    if (typeof binding !== 'string' || !timingSafeEqual(sha256(binding), record.bindingHash)) {
      return {
        ok: false,
        reason: 'The sign-in was finished in a different browser from the one that started it.',
      };
    }
    return {
      ok: true,
      flow: {
        purpose: record.purpose,
        accountId: record.accountId,
        codeVerifier: record.codeVerifier,
        next: record.next,
      },
    };
  }

  private sign(nonce: string): string {
    return createHmac('sha256', this.key).update(`oauth-state\0${nonce}`).digest('base64url');
  }

  private prune(): void {
    const now = this.clock.now().getTime();
    for (const [nonce, record] of this.pending) if (now >= record.expiresAt) this.pending.delete(nonce);
  }
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

function safeEqual(a: string, b: string): boolean {
  return timingSafeEqual(sha256(a), sha256(b));
}
