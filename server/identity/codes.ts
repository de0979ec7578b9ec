import { createHash, createHmac, randomInt, timingSafeEqual } from 'node:crypto';
import type { Store } from '../store/store.ts';
import { UniqueViolationError } from '../store/store.ts';
import type { VerificationCodeRecord } from '../store/records.ts';
import type { Clock } from './clock.ts';

export const CODE_TTL_MS = 10 * 60_000;
/** Wrong guesses a code survives; the next try fails whatever it holds. 5 in 10^6 per code. */
export const MAX_ATTEMPTS = 5;

/**
 * What a code is for. `verify` confirms the e-mail of an anonymous caller (sign-up or request), `login`
 * signs in, `change:<account id>` confirms an address for one signed-in account.
 */
export type CodePurpose = 'verify' | 'login' | `change:${string}`;

/**
 * Six-digit one-time codes sent by mail. One live code per (e-mail, purpose): issuing another replaces
 * it. Stored as HMAC-SHA256 under a server key (a 6-digit code's plain hash is reversed at once),
 * compared in constant time, single use, and burned after MAX_ATTEMPTS wrong guesses. The store
 * serializes updates per record, so two concurrent checks of one code cannot both consume it.
 */
export class VerificationCodes {
  constructor(
    private readonly store: Store,
    private readonly key: Uint8Array,
    private readonly clock: Clock,
  ) {}

  /** Issues a fresh code for (email, purpose), replacing any earlier one; returns it in plain text. */
  async issue(email: string, purpose: CodePurpose): Promise<string> {
    const code = String(randomInt(0, 1_000_000)).padStart(6, '0');
    const now = this.clock.now();
    const record: VerificationCodeRecord = {
      id: recordId(email, purpose),
      email,
      purpose,
      code_hash: this.hash(email, purpose, code).toString('hex'),
      attempts: 0,
      created_at: now.toISOString(),
      expires_at: new Date(now.getTime() + CODE_TTL_MS).toISOString(),
      consumed_at: null,
    };
    // Insert, or replace the live record. The collection refuses an insert while a write to the same
    // id is in flight, so retry until one of the two lands.
    for (let attempt = 0; ; attempt++) {
      try {
        await this.store.verificationCodes.insert(record);
        break;
      } catch (error) {
        if (!(error instanceof UniqueViolationError) || attempt >= 20) throw error;
      }
      if (await this.store.verificationCodes.update(record.id, () => record)) break;
      await new Promise((resolve) => setImmediate(resolve));
    }
    return code;
  }

  /** True exactly once for the right, live code of (email, purpose); every other call is false. */
  async consume(email: string, purpose: CodePurpose, code: string): Promise<boolean> {
    const given = this.hash(email, purpose, code);
    const now = this.clock.now();
    let accepted = false;
    await this.store.verificationCodes.update(recordId(email, purpose), (current) => {
      if (current.consumed_at || current.attempts >= MAX_ATTEMPTS) return current;
      if (now.getTime() >= Date.parse(current.expires_at)) return current;
      if (!timingSafeEqual(given, Buffer.from(current.code_hash, 'hex'))) {
        return { ...current, attempts: current.attempts + 1 };
      }
      accepted = true;
      return { ...current, consumed_at: now.toISOString() };
    });
    return accepted;
  }

  /** Bound to e-mail and purpose as well as the code, so a record can never verify another pair. */
  private hash(email: string, purpose: string, code: string): Buffer {
    return createHmac('sha256', this.key).update(`${purpose}\0${email}\0${code}`).digest();
  }
}

/** Record ids become file names; the hash keeps addresses out of them. */
function recordId(email: string, purpose: string): string {
  return `vc_${createHash('sha256').update(`${purpose}\0${email}`).digest('hex').slice(0, 40)}`;
}
