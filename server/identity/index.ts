import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import type { Store } from '../store/store.ts';
import type { Sessions } from '../auth/sessions.ts';
import { sharedSecret } from '../auth/shared-secrets.ts';
import { createMailTransport, type MailTransport } from '../mail/index.ts';
import type { Accounts } from './accounts.ts';
import { VerificationCodes } from './codes.ts';
import { EMAIL_WINDOW_MS, EmailAuth, IP_WINDOW_MS } from './email-auth.ts';
import { systemClock, type Clock } from './clock.ts';
import type { ApiKeys } from '../auth/api-keys.ts';
import { createHmac } from 'node:crypto';
import { GitHubOAuthClient } from './github/client.ts';
import { GitHubLinking } from './github/linking.ts';
import { GitHubConnections } from './github/connections.ts';
import { SecretBox } from './secret-box.ts';
import { OAuthStates, STATE_TTL_MS } from './github/state.ts';
import { ExpirySweeper, swept } from '../store/expiry.ts';

/** The identity parts Twinbox is built with (routes in routes.ts, github/, web/). */
export interface Identity {
  mail: MailTransport;
  codes: VerificationCodes;
  emailAuth: EmailAuth;
  clock: Clock;
  github: {
    /** Undefined until GITHUB_CLIENT_ID and GITHUB_CLIENT_SECRET are set. */
    client: GitHubOAuthClient | undefined;
    states: OAuthStates;
    linking: GitHubLinking;
    /** The token of each GitHub connection, sealed at rest; deploys fetch private repositories with it. */
    connections: GitHubConnections;
  };
  /**
   * Deletes lapsed OAuth flows, rate-limit counters and revocations of expired sessions from the Store;
   * started and stopped with Twinbox.
   */
  sweeper: ExpirySweeper;
  /** Key of the pages' per-session form tokens (web/session.ts), derived from the kept code key. */
  csrfKey: Uint8Array;
  /** This server's browser-facing URL and the web app's, given the port it listens on. */
  urls(port: number): { publicUrl: string; webUrl: string };
}

export async function createIdentity(options: {
  config: Config;
  store: Store;
  accounts: Accounts;
  sessions: Sessions;
  apiKeys: ApiKeys;
  logger: Logger;
  clock?: Clock;
}): Promise<Identity> {
  const { config, store, accounts, sessions, apiKeys, logger } = options;
  const clock = options.clock ?? systemClock;
  const mail = await createMailTransport({
    smtpUrl: config.smtpUrl,
    from: config.mailFrom,
    dataDir: config.dataDir,
  });
  // Its own key, so a leaked JWT secret does not also open the code hashes (and the reverse). Kept in
  // the Store: a code mailed, a sign-in started or a form served by one process checks on any other.
  const codeKey = await sharedSecret(store.serverSecrets, 'code-key', join(config.dataDir, 'code-key'));
  const codes = new VerificationCodes(store, new TextEncoder().encode(codeKey), clock);
  const emailAuth = new EmailAuth({
    accounts,
    codes,
    mail,
    sessions,
    logger,
    clock,
    ipLimitPerMinute: config.authIpLimitPerMinute,
    rateLimits: store.rateLimits,
  });
  const client =
    config.githubClientId && config.githubClientSecret
      ? new GitHubOAuthClient({
          clientId: config.githubClientId,
          clientSecret: config.githubClientSecret,
          oauthUrl: config.githubWebUrl,
          apiUrl: config.githubApiUrl,
        })
      : undefined;
  const stateKey = createHmac('sha256', codeKey).update('oauth-state').digest();
  const csrfKey = createHmac('sha256', codeKey).update('web-form-token').digest();
  // Seals the GitHub tokens at rest: TWINBOX_ENCRYPTION_KEY, required in production.
  const box = await SecretBox.create({
    key: config.encryptionKey,
    dataDir: config.dataDir,
    production: config.env === 'production',
  });
  const github = {
    client,
    connections: new GitHubConnections({ store, box, client, logger }),
    states: new OAuthStates(stateKey, clock, store.oauthStates),
    linking: new GitHubLinking({ store, accounts, apiKeys, mail, logger }),
  };
  const urls = (port: number) => {
    const publicUrl = config.publicUrl ?? `http://${config.publicHost}:${port}`;
    return { publicUrl, webUrl: config.webUrl ?? publicUrl };
  };
  const sweeper = new ExpirySweeper(
    store.sweepCursors,
    [
      swept('oauth_states', store.oauthStates, STATE_TTL_MS),
      swept('rate_limits', store.rateLimits, Math.max(EMAIL_WINDOW_MS, IP_WINDOW_MS)),
      swept('revoked_sessions', store.revokedSessions, sessions.ttlMs),
    ],
    () => clock.now().getTime(),
    (error) => logger.warn({ err: error }, 'could not sweep lapsed sign-in records'),
  );
  return { mail, codes, emailAuth, clock, github, sweeper, csrfKey, urls };
}
