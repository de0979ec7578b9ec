import { randomUUID } from 'node:crypto';
import type { Store } from '../store/store.ts';
import { UniqueViolationError } from '../store/store.ts';
import type { AccountRecord, Plan } from '../store/records.ts';
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

  /** Creates an account; the store's unique index on e-mail makes this atomic under concurrency. */
  async create(email: string, plan: Plan = 'free'): Promise<AccountRecord> {
    const record: AccountRecord = {
      id: randomUUID(),
      email: normalizeEmail(email),
      plan,
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

  setPlan(id: string, plan: Plan): Promise<AccountRecord | undefined> {
    return this.store.accounts.update(id, (current) => ({ ...current, plan }));
  }

  /** Whether the account has a source-code host identity connected (GitHub). */
  async hasScmConnected(id: string): Promise<boolean> {
    return (await this.store.identities.findBy('account_id', id)).length > 0;
  }
}
