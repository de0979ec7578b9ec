import { randomUUID } from 'node:crypto';
import type { Store } from '../store/store.ts';
import { UniqueViolationError } from '../store/store.ts';
import type { AccountRecord, IdentityRecord, Plan } from '../store/records.ts';
import { normalizeEmail } from './email.ts';

export const ONE_ACCOUNT_PER_EMAIL =
  'Only one account can use an email address. This email is already linked to another account.';

export class EmailTakenError extends Error {
  constructor() {
    super(ONE_ACCOUNT_PER_EMAIL);
    this.name = 'EmailTakenError';
  }
}

export class Accounts {
  constructor(private readonly store: Store) {}

  /**
   * Creates an account; the store's unique index on e-mail makes this atomic under concurrency.
   * Accounts made by an operator (or the local owner) are verified; e-mail sign-up passes
   * `verified: false` until the code comes back.
   */
  async create(
    email: string,
    plan: Plan = 'free',
    options: { verified?: boolean } = {},
  ): Promise<AccountRecord> {
    const record: AccountRecord = {
      id: randomUUID(),
      email: normalizeEmail(email),
      plan,
      email_verified: options.verified ?? true,
      created_at: new Date().toISOString(),
    };
    try {
      return await this.store.accounts.insert(record);
    } catch (error) {
      if (error instanceof UniqueViolationError) throw new EmailTakenError();
      throw error;
    }
  }

  get(id: string): Promise<AccountRecord | undefined> {
    return this.store.accounts.get(id);
  }

  findByEmail(email: string): Promise<AccountRecord | undefined> {
    return this.store.accounts.findOneBy('email', normalizeEmail(email));
  }

  /** Marks the account's e-mail as proven (a code came back, or GitHub vouched for it). */
  markVerified(id: string): Promise<AccountRecord | undefined> {
    return this.store.accounts.update(id, (current) =>
      current.email_verified === false ? { ...current, email_verified: true } : current,
    );
  }

  /** Moves the account to another (already normalized, proven) address; EmailTakenError if taken. */
  async changeEmail(id: string, email: string): Promise<AccountRecord | undefined> {
    try {
      return await this.store.accounts.update(id, (current) => ({ ...current, email, email_verified: true }));
    } catch (error) {
      if (error instanceof UniqueViolationError) throw new EmailTakenError();
      throw error;
    }
  }

  setPlan(id: string, plan: Plan): Promise<AccountRecord | undefined> {
    return this.store.accounts.update(id, (current) => ({ ...current, plan }));
  }

  /** The account's GitHub identity, if one is connected. */
  async githubIdentity(id: string): Promise<IdentityRecord | undefined> {
    return (await this.store.identities.findBy('account_id', id)).find(
      (identity) => identity.provider === 'github',
    );
  }

  /** Whether the account has a source-code host identity connected (GitHub). */
  async hasScmConnected(id: string): Promise<boolean> {
    return (await this.store.identities.findBy('account_id', id)).length > 0;
  }
}

/** Whether the account's e-mail is proven. Records from before the field existed count as verified. */
export function isVerified(account: AccountRecord): boolean {
  return account.email_verified !== false;
}
