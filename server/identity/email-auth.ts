import type { Logger } from 'pino';
import type { AccountRecord } from '../store/records.ts';
import type { Sessions } from '../auth/sessions.ts';
import type { MailTransport } from '../mail/transport.ts';
import { apiError, badRequest, conflict } from '../errors.ts';
import { Accounts, EmailTakenError, ONE_ACCOUNT_PER_EMAIL, isVerified } from './accounts.ts';
import { InvalidEmailError, normalizeEmail } from './email.ts';
import type { CodePurpose, VerificationCodes } from './codes.ts';
import type { Clock } from './clock.ts';
import { RateLimiter } from './rate-limit.ts';
import type { Collection } from '../store/store.ts';
import type { RateLimitRecord } from '../store/records.ts';

/** One code mail per address per minute, whatever the purpose. */
export const EMAIL_WINDOW_MS = 60_000;
/** The window of the per-IP limit. */
export const IP_WINDOW_MS = 60_000;
const INVALID_CODE =
  'The code is wrong, expired, already used or has had too many attempts. Request a new one.';

export interface SignedIn {
  account: AccountRecord;
  token: string;
}

export interface EmailAuthOptions {
  accounts: Accounts;
  codes: VerificationCodes;
  mail: MailTransport;
  sessions: Sessions;
  logger: Logger;
  clock: Clock;
  ipLimitPerMinute: number;
  /** Where the counters are kept: the Store's, shared by every process. */
  rateLimits: Collection<RateLimitRecord>;
}

/**
 * E-mail sign-up, verification and sign-in with one-time codes. Every address goes through
 * normalizeEmail first; codes go only to the normalized address, never to the raw input.
 *
 * "Another account" (the spec's 409): for an anonymous caller, a verified account with the address;
 * for a signed-in caller, any account other than the caller's. An unverified account is not "another
 * account" to an anonymous caller: proving the address is how that account gets verified.
 */
export class EmailAuth {
  private readonly perEmail: RateLimiter;
  private readonly perIp: RateLimiter;

  constructor(private readonly o: EmailAuthOptions) {
    this.perEmail = new RateLimiter('email', 1, EMAIL_WINDOW_MS, o.clock, o.rateLimits);
    this.perIp = new RateLimiter('ip', o.ipLimitPerMinute, IP_WINDOW_MS, o.clock, o.rateLimits);
  }

  /** POST /auth/email/signup: an unverified account and a `verify` code by mail. */
  async signup(input: string, ip: string): Promise<AccountRecord> {
    await this.limitIp(ip);
    const email = parseEmail(input);
    let account: AccountRecord;
    try {
      account = await this.o.accounts.create(email, 'free', { verified: false });
    } catch (error) {
      if (error instanceof EmailTakenError) throw conflict(ONE_ACCOUNT_PER_EMAIL, 'email_taken');
      throw error;
    }
    // A new address has no earlier mail; this starts its one-minute window.
    await this.perEmail.take(email);
    await this.sendCode(email, 'verify');
    return account;
  }

  /** POST /auth/email-verification/request. */
  async requestVerification(input: string, ip: string, caller?: AccountRecord): Promise<void> {
    await this.limitIp(ip);
    const email = parseEmail(input);
    await this.refuseIfLinkedElsewhere(email, caller);
    await this.limitEmail(email);
    await this.sendCode(email, caller ? `change:${caller.id}` : 'verify');
  }

  /**
   * POST /auth/email-verification/verify. Anonymous: verifies the unverified account with the address,
   * or creates a verified one. Signed in: moves the caller's account to the address.
   */
  async verify(input: string, code: string, ip: string, caller?: AccountRecord): Promise<SignedIn> {
    await this.limitIp(ip);
    const email = parseEmail(input);
    await this.refuseIfLinkedElsewhere(email, caller);
    const purpose: CodePurpose = caller ? `change:${caller.id}` : 'verify';
    if (!(await this.o.codes.consume(email, purpose, code))) throw badRequest(INVALID_CODE, 'invalid_code');
    let account: AccountRecord | undefined;
    try {
      account = caller
        ? await this.o.accounts.changeEmail(caller.id, email)
        : await this.verifiedAccount(email);
    } catch (error) {
      if (error instanceof EmailTakenError) throw conflict(ONE_ACCOUNT_PER_EMAIL, 'email_taken');
      throw error;
    }
    if (!account) throw conflict(ONE_ACCOUNT_PER_EMAIL, 'email_taken');
    return { account, token: await this.o.sessions.issue(account.id) };
  }

  /**
   * POST /auth/email/login: the same 202 whether or not an account has the address. The code is made
   * and mailed after the answer, so neither the answer nor its timing tells the two apart.
   */
  async requestLogin(input: string, ip: string): Promise<void> {
    await this.limitIp(ip);
    const email = parseEmail(input);
    await this.limitEmail(email);
    void (async () => {
      if (await this.o.accounts.findByEmail(email)) await this.sendCode(email, 'login');
    })().catch((error: unknown) => this.o.logger.error({ err: error }, 'could not send a sign-in code'));
  }

  /** POST /auth/email/login/verify. The code proves the address, so an unverified account becomes verified. */
  async verifyLogin(input: string, code: string, ip: string): Promise<SignedIn> {
    await this.limitIp(ip);
    const email = parseEmail(input);
    if (!(await this.o.codes.consume(email, 'login', code))) throw badRequest(INVALID_CODE, 'invalid_code');
    const found = await this.o.accounts.findByEmail(email);
    const account = found && (await this.o.accounts.markVerified(found.id));
    if (!account) throw badRequest(INVALID_CODE, 'invalid_code');
    return { account, token: await this.o.sessions.issue(account.id) };
  }

  private async refuseIfLinkedElsewhere(email: string, caller: AccountRecord | undefined): Promise<void> {
    const holder = await this.o.accounts.findByEmail(email);
    if (!holder) return;
    const elsewhere = caller ? holder.id !== caller.id : isVerified(holder);
    if (elsewhere) throw conflict(ONE_ACCOUNT_PER_EMAIL, 'email_taken');
  }

  /** The account an anonymous verification ends in: the unverified one with the address, or a new one. */
  private async verifiedAccount(email: string): Promise<AccountRecord | undefined> {
    const existing = await this.o.accounts.findByEmail(email);
    if (existing) return isVerified(existing) ? undefined : this.o.accounts.markVerified(existing.id);
    return this.o.accounts.create(email, 'free', { verified: true });
  }

  private async sendCode(email: string, purpose: CodePurpose): Promise<void> {
    const code = await this.o.codes.issue(email, purpose);
    const what = purpose === 'login' ? 'sign in to Twinbox' : 'confirm this e-mail address for Twinbox';
    await this.o.mail.send({
      to: email,
      subject: `Your Twinbox code: ${code}`,
      text: `Your code to ${what} is ${code}.\n\nIt expires in 10 minutes and works once. If you did not ask for it, ignore this message.\n`,
    });
    // The address and purpose only: the code never reaches a log.
    this.o.logger.info({ purpose: purpose.split(':')[0], transport: this.o.mail.kind }, 'code mailed');
  }

  private async limitIp(ip: string): Promise<void> {
    const wait = await this.perIp.take(ip);
    if (wait !== undefined)
      throw tooManyRequests('Too many requests from this address. Try again later.', wait);
  }

  private async limitEmail(email: string): Promise<void> {
    const wait = await this.perEmail.take(email);
    if (wait !== undefined) {
      throw tooManyRequests(
        'A code was sent to this address less than a minute ago. Wait before asking again.',
        wait,
      );
    }
  }
}

export function parseEmail(input: string): string {
  try {
    return normalizeEmail(input);
  } catch (error) {
    if (error instanceof InvalidEmailError) throw badRequest(error.message, 'invalid_email');
    throw error;
  }
}

function tooManyRequests(message: string, retryAfterSeconds: number) {
  const error = apiError(429, message, 'rate_limited');
  error.output.headers['Retry-After'] = String(retryAfterSeconds);
  return error;
}
