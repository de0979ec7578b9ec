import { randomBytes } from 'node:crypto';
import type { Store } from '../store/store.ts';
import type { AccountRecord, ApiKeyRecord } from '../store/records.ts';
import { forbidden } from '../errors.ts';
import { displayPrefix, generateApiKey, hasValidChecksum, hashApiKey } from './api-key-format.ts';

/** last_used_at is written at most this often per key, so a busy key does not write on every call. */
const LAST_USED_RESOLUTION_MS = 60_000;

export interface IssuedApiKey {
  record: ApiKeyRecord;
  /** The only time the key exists in plain text: hand it to the owner and forget it. */
  key: string;
}

export interface PublicApiKey {
  id: string;
  name: string;
  prefix: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

export class ApiKeys {
  private readonly touching = new Set<string>();

  constructor(
    private readonly store: Store,
    private readonly onBackgroundError: (error: unknown) => void = () => {},
  ) {}

  /** Refuses (403) an account whose e-mail is not verified: a pre-created account must hold nothing. */
  async issue(accountId: string, name = 'default'): Promise<IssuedApiKey> {
    const account = await this.store.accounts.get(accountId);
    if (account && account.email_verified === false) {
      throw forbidden(
        'Verify the e-mail address of this account before creating API keys.',
        'email_unverified',
      );
    }
    const key = generateApiKey();
    const record: ApiKeyRecord = {
      id: `key_${randomBytes(12).toString('hex')}`,
      account_id: accountId,
      hash: hashApiKey(key),
      prefix: displayPrefix(key),
      name,
      created_at: new Date().toISOString(),
      last_used_at: null,
      revoked_at: null,
    };
    await this.store.apiKeys.insert(record);
    return { record, key };
  }

  /** The account a key belongs to, or undefined for a malformed, unknown or revoked key. */
  async authenticate(key: string, now = new Date()): Promise<AccountRecord | undefined> {
    if (!hasValidChecksum(key)) return undefined;
    const record = await this.store.apiKeys.findOneBy('hash', hashApiKey(key));
    if (!record || record.revoked_at) return undefined;
    const account = await this.store.accounts.get(record.account_id);
    if (!account || account.email_verified === false) return undefined;
    this.touch(record, now);
    return account;
  }

  async list(accountId: string): Promise<PublicApiKey[]> {
    const records = await this.store.apiKeys.findBy('account_id', accountId);
    return records.sort((a, b) => a.created_at.localeCompare(b.created_at)).map(toPublicApiKey);
  }

  /** Revokes one of the account's keys; false when the account has no such key. */
  async revoke(accountId: string, keyId: string): Promise<boolean> {
    const updated = await this.store.apiKeys.update(keyId, (current) => {
      if (current.account_id !== accountId) return current;
      return current.revoked_at ? current : { ...current, revoked_at: new Date().toISOString() };
    });
    return updated !== undefined && updated.account_id === accountId;
  }

  /** Revokes the key given (its holder signing out, e.g. `twinbox logout`); undefined when it is unknown. */
  async revokeKey(key: string): Promise<PublicApiKey | undefined> {
    const record = await this.store.apiKeys.findOneBy('hash', hashApiKey(key));
    if (!record) return undefined;
    const updated = await this.store.apiKeys.update(record.id, (current) =>
      current.revoked_at ? current : { ...current, revoked_at: new Date().toISOString() },
    );
    return updated && toPublicApiKey(updated);
  }

  /** Records the use without holding up the request that used the key. */
  private touch(record: ApiKeyRecord, now: Date): void {
    const last = record.last_used_at ? Date.parse(record.last_used_at) : 0;
    if (now.getTime() - last < LAST_USED_RESOLUTION_MS || this.touching.has(record.id)) return;
    this.touching.add(record.id);
    this.store.apiKeys
      .update(record.id, (current) => ({ ...current, last_used_at: now.toISOString() }))
      .catch(this.onBackgroundError)
      .finally(() => this.touching.delete(record.id));
  }
}

export function toPublicApiKey(record: ApiKeyRecord): PublicApiKey {
  const { id, name, prefix, created_at, last_used_at, revoked_at } = record;
  return { id, name, prefix, created_at, last_used_at, revoked_at };
}
