import type { Logger } from 'pino';
import { KeyedLock } from '../../keyed-lock.ts';
import type { IdentityRecord, SealedGitHubToken } from '../../store/records.ts';
import type { Store } from '../../store/store.ts';
import type { SecretBox } from '../secret-box.ts';
import { RefreshRefusedError, type GitHubOAuthClient, type GitHubTokenSet } from './client.ts';

/** A token this close to its expiry is refreshed first: a deploy's fetch takes a while. */
const REFRESH_MARGIN_MS = 5 * 60_000;

/**
 * The GitHub token of each account's GitHub connection: kept sealed on the identity record (SecretBox,
 * AES-256-GCM, bound to the identity's id), refreshed when it has expired (GitHub Apps' user tokens last
 * 8 hours), dropped on disconnect. Deploys ask for it when they fetch the account's repositories.
 */
export class GitHubConnections {
  /** One refresh per identity at a time: GitHub spends a refresh token on first use. */
  private readonly refreshing = new KeyedLock();

  constructor(
    private readonly o: {
      store: Store;
      box: SecretBox;
      /** Undefined when GitHub sign-in is not configured: stored tokens are used, never refreshed. */
      client: GitHubOAuthClient | undefined;
      logger: Logger;
    },
  ) {}

  /** Keeps the token GitHub just issued on the identity of GitHub user `githubId`. */
  async save(githubId: number, tokens: GitHubTokenSet): Promise<void> {
    const identity = await this.o.store.identities.findOneBy('provider_key', `github:${githubId}`);
    if (!identity) return;
    await this.o.store.identities.update(identity.id, (current) => ({
      ...current,
      github_token: this.sealed(current.id, tokens),
    }));
  }

  /**
   * A token that acts as `accountId`'s GitHub connection, refreshed first when it has expired; undefined
   * when the account has no connection, the connection has no token, or GitHub refused the refresh
   * (the stored token is then dropped: only connecting again helps).
   */
  async tokenFor(accountId: string): Promise<string | undefined> {
    const identity = await this.identityOf(accountId);
    if (!identity?.github_token) return undefined;
    if (!expiring(identity.github_token))
      return this.o.box.open(identity.github_token.access_token, identity.id);
    return this.refreshing.run(identity.id, async () => {
      // Another deploy may have refreshed it while this one waited.
      const current = await this.o.store.identities.get(identity.id);
      const token = current?.github_token;
      if (!current || !token) return undefined;
      if (!expiring(token)) return this.o.box.open(token.access_token, current.id);
      return this.refresh(current, token);
    });
  }

  /** Unlinks the account's GitHub connection, its token with it. False when there was none. */
  async disconnect(accountId: string): Promise<IdentityRecord | undefined> {
    const identity = await this.identityOf(accountId);
    if (!identity) return undefined;
    await this.o.store.identities.delete(identity.id);
    this.o.logger.info(
      { audit: 'github_identity_unlinked', account_id: accountId, github_login: identity.login },
      'github_identity_unlinked',
    );
    return identity;
  }

  private async refresh(identity: IdentityRecord, token: SealedGitHubToken): Promise<string | undefined> {
    const refreshToken = token.refresh_token ? this.o.box.open(token.refresh_token, identity.id) : undefined;
    const refreshable =
      refreshToken &&
      this.o.client &&
      (!token.refresh_expires_at || Date.parse(token.refresh_expires_at) > Date.now());
    if (!refreshable) {
      // Past its expiry and nothing to renew it with: GitHub would refuse it anyway.
      if (token.expires_at && Date.parse(token.expires_at) <= Date.now()) {
        await this.drop(identity, 'the token expired and cannot be refreshed');
        return undefined;
      }
      return this.o.box.open(token.access_token, identity.id);
    }
    try {
      const fresh = await this.o.client!.refresh(refreshToken);
      await this.o.store.identities.update(identity.id, (current) => ({
        ...current,
        github_token: this.sealed(current.id, fresh),
      }));
      return fresh.accessToken;
    } catch (error) {
      if (!(error instanceof RefreshRefusedError)) throw error;
      // Another process sharing the store may have spent the refresh token first: use what it got.
      const now = (await this.o.store.identities.get(identity.id))?.github_token;
      if (now && now.updated_at !== token.updated_at && !expiring(now))
        return this.o.box.open(now.access_token, identity.id);
      await this.drop(identity, error.message);
      return undefined;
    }
  }

  private async drop(identity: IdentityRecord, reason: string): Promise<void> {
    await this.o.store.identities.update(identity.id, (current) => ({ ...current, github_token: null }));
    this.o.logger.warn(
      { account_id: identity.account_id, github_login: identity.login, reason },
      'dropped a GitHub token that can no longer be used; the account must connect GitHub again',
    );
  }

  private async identityOf(accountId: string): Promise<IdentityRecord | undefined> {
    const identities = await this.o.store.identities.findBy('account_id', accountId);
    return identities.find((identity) => identity.provider === 'github');
  }

  private sealed(identityId: string, tokens: GitHubTokenSet): SealedGitHubToken {
    return {
      access_token: this.o.box.seal(tokens.accessToken, identityId),
      refresh_token: tokens.refreshToken ? this.o.box.seal(tokens.refreshToken, identityId) : null,
      expires_at: tokens.expiresAt?.toISOString() ?? null,
      refresh_expires_at: tokens.refreshExpiresAt?.toISOString() ?? null,
      updated_at: new Date().toISOString(),
    };
  }
}

function expiring(token: SealedGitHubToken): boolean {
  return token.expires_at !== null && Date.parse(token.expires_at) - REFRESH_MARGIN_MS <= Date.now();
}
