import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Store } from '../../store/store.ts';
import { UniqueViolationError } from '../../store/store.ts';
import type { AccountRecord, IdentityRecord } from '../../store/records.ts';
import type { MailTransport } from '../../mail/transport.ts';
import type { ApiKeys } from '../../auth/api-keys.ts';
import { Accounts, EmailTakenError } from '../accounts.ts';
import { InvalidEmailError, normalizeEmail } from '../email.ts';
import type { GitHubProfile } from './client.ts';

export const ALREADY_LINKED = 'scm_identity_already_linked';

export type LinkOutcome =
  | { ok: true; account: AccountRecord; change: 'none' | 'linked' | 'created' }
  | { ok: false; error: string; detail: string };

const IDENTITY_TAKEN: LinkOutcome = {
  ok: false,
  error: ALREADY_LINKED,
  detail: 'This GitHub account is already linked to another Twinbox account.',
};
const EMAIL_TAKEN: LinkOutcome = {
  ok: false,
  error: ALREADY_LINKED,
  detail:
    'The e-mail address of this GitHub account is already linked to another Twinbox account. Only one account can use an email address.',
};

/** GitHub's "keep my address private" addresses: verified, but nobody's inbox to link by. */
const NOREPLY = /@(?:[a-z0-9-]+\.)*users\.noreply\.[a-z0-9.-]+$/;

/**
 * The GitHub linking rules. Identities are keyed on GitHub's numeric id (a login can be renamed and
 * reused); e-mail counts only when GitHub says it is the primary address AND verified, and never a
 * noreply address. The store's unique indexes (accounts.email, identities.provider_key) settle races;
 * a lost race is decided again from the new state, and ends as a sign-in or as
 * scm_identity_already_linked, never as an error.
 */
export class GitHubLinking {
  constructor(
    private readonly o: {
      store: Store;
      accounts: Accounts;
      apiKeys: ApiKeys;
      mail: MailTransport;
      logger: Logger;
    },
  ) {}

  /** The e-mail Twinbox may use from a profile: primary, verified, not noreply, valid. */
  static usableEmail(profile: GitHubProfile): string | undefined {
    const primary = profile.emails.find((e) => e.primary && e.verified);
    if (!primary) return undefined;
    try {
      const email = normalizeEmail(primary.email);
      return NOREPLY.test(email) ? undefined : email;
    } catch (error) {
      if (error instanceof InvalidEmailError) return undefined;
      throw error;
    }
  }

  /** purpose `login`: sign in, link by e-mail, or create; see docs/identity.md for the table. */
  login(profile: GitHubProfile): Promise<LinkOutcome> {
    return this.retrying(() => this.loginOnce(profile));
  }

  /** purpose `connect`: link `profile` to the signed-in account `accountId`. */
  connect(accountId: string, profile: GitHubProfile): Promise<LinkOutcome> {
    return this.retrying(() => this.connectOnce(accountId, profile));
  }

  private async loginOnce(profile: GitHubProfile): Promise<LinkOutcome> {
    const known = await this.identityOf(profile);
    if (known) {
      // The identity wins over whatever e-mail GitHub now reports: no re-link, no takeover.
      const account = await this.o.accounts.get(known.account_id);
      if (!account) return IDENTITY_TAKEN;
      await this.refreshLogin(known, profile);
      return { ok: true, account, change: 'none' };
    }
    const email = GitHubLinking.usableEmail(profile);
    if (!email) {
      return {
        ok: false,
        error: 'github_email_unverified',
        detail:
          'Your GitHub account has no verified primary e-mail address Twinbox can use (private noreply addresses do not count). Add or verify one on GitHub, or sign up with e-mail and connect GitHub afterwards.',
      };
    }
    const existing = await this.o.accounts.findByEmail(email);
    if (existing) {
      const linked = await this.o.accounts.githubIdentity(existing.id);
      // Linked since this attempt looked (a concurrent callback for this same GitHub id): sign in.
      if (linked?.provider_key === `github:${profile.id}`)
        return { ok: true, account: existing, change: 'none' };
      if (linked) return EMAIL_TAKEN;
      await this.insertIdentity(existing.id, profile);
      if (existing.email_verified === false) {
        // A pre-created, unverified account: GitHub proves the address now. Whatever it held is
        // dropped (by construction it can hold no key; this is the belt to those braces).
        for (const key of await this.o.apiKeys.list(existing.id))
          await this.o.apiKeys.revoke(existing.id, key.id);
        await this.o.accounts.markVerified(existing.id);
      }
      await this.announceLink(existing, profile);
      return { ok: true, account: (await this.o.accounts.get(existing.id))!, change: 'linked' };
    }
    const account = await this.o.accounts.create(email, 'free', { verified: true });
    // If another callback for this GitHub id links it first (to this same account, found by the
    // address), the insert fails and the retry signs in through the identity.
    await this.insertIdentity(account.id, profile);
    this.audit('github_account_created', account, profile);
    return { ok: true, account, change: 'created' };
  }

  private async connectOnce(accountId: string, profile: GitHubProfile): Promise<LinkOutcome> {
    const account = await this.o.accounts.get(accountId);
    if (!account) return { ok: false, error: 'session_expired', detail: 'Sign in again to connect GitHub.' };
    const known = await this.identityOf(profile);
    if (known) {
      if (known.account_id !== accountId) return IDENTITY_TAKEN;
      await this.refreshLogin(known, profile);
      return { ok: true, account, change: 'none' };
    }
    const current = await this.o.accounts.githubIdentity(accountId);
    if (current) {
      return {
        ok: false,
        error: 'github_already_connected',
        detail: `Your Twinbox account is already connected to the GitHub account @${current.login}. One GitHub account per Twinbox account.`,
      };
    }
    const email = GitHubLinking.usableEmail(profile);
    if (email) {
      const holder = await this.o.accounts.findByEmail(email);
      if (holder && holder.id !== accountId) return EMAIL_TAKEN;
    }
    await this.insertIdentity(accountId, profile);
    await this.announceLink(account, profile);
    return { ok: true, account, change: 'linked' };
  }

  private identityOf(profile: GitHubProfile): Promise<IdentityRecord | undefined> {
    return this.o.store.identities.findOneBy('provider_key', `github:${profile.id}`);
  }

  private async insertIdentity(accountId: string, profile: GitHubProfile): Promise<void> {
    await this.o.store.identities.insert({
      id: randomUUID(),
      account_id: accountId,
      provider: 'github',
      provider_key: `github:${profile.id}`,
      login: profile.login,
      created_at: new Date().toISOString(),
    });
  }

  private async refreshLogin(identity: IdentityRecord, profile: GitHubProfile): Promise<void> {
    if (identity.login === profile.login) return;
    await this.o.store.identities.update(identity.id, (current) => ({ ...current, login: profile.login }));
  }

  /** Audit line and a mail to the account's address, so a link its owner did not make is noticed. */
  private async announceLink(account: AccountRecord, profile: GitHubProfile): Promise<void> {
    this.audit('github_identity_linked', account, profile);
    try {
      await this.o.mail.send({
        to: account.email,
        subject: 'GitHub account connected to Twinbox',
        text: `The GitHub account @${profile.login} (id ${profile.id}) is now connected to your Twinbox account. You can sign in with it.\n\nIf this was not you, contact your Twinbox operator.\n`,
      });
    } catch (error) {
      this.o.logger.error({ err: error }, 'could not send the GitHub link notice');
    }
  }

  private audit(event: string, account: AccountRecord, profile: GitHubProfile): void {
    this.o.logger.info({ audit: event, account_id: account.id, github_id: profile.id }, event);
  }

  private async retrying(attempt: () => Promise<LinkOutcome>): Promise<LinkOutcome> {
    for (let i = 0; i < 6; i++) {
      try {
        return await attempt();
      } catch (error) {
        if (!(error instanceof UniqueViolationError) && !(error instanceof EmailTakenError)) throw error;
      }
      // The winning write becomes visible once it is durable (fsync); give it that long.
      await new Promise((resolve) => setTimeout(resolve, 10 * 2 ** i));
    }
    return IDENTITY_TAKEN;
  }
}
