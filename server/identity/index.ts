import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import type { Store } from '../store/store.ts';
import type { Sessions } from '../auth/sessions.ts';
import { loadOrCreateSecret } from '../auth/sessions.ts';
import { createMailTransport, type MailTransport } from '../mail/index.ts';
import type { Accounts } from './accounts.ts';
import { VerificationCodes } from './codes.ts';
import { EmailAuth } from './email-auth.ts';
import { systemClock, type Clock } from './clock.ts';
import type { ApiKeys } from '../auth/api-keys.ts';
import { createHmac } from 'node:crypto';
import { GitHubOAuthClient } from './github/client.ts';
import { GitHubLinking } from './github/linking.ts';
import { OAuthStates } from './github/state.ts';

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
  };
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
  const mail = createMailTransport({
    smtpUrl: config.smtpUrl,
    from: config.mailFrom,
    dataDir: config.dataDir,
  });
  // Its own key, so a leaked JWT secret does not also open the code hashes (and the reverse).
  const codeKey = await loadOrCreateSecret(join(config.dataDir, 'code-key'));
  const codes = new VerificationCodes(store, new TextEncoder().encode(codeKey), clock);
  const emailAuth = new EmailAuth({
    accounts,
    codes,
    mail,
    sessions,
    logger,
    clock,
    ipLimitPerMinute: config.authIpLimitPerMinute,
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
  const github = {
    client,
    states: new OAuthStates(stateKey, clock),
    linking: new GitHubLinking({ store, accounts, apiKeys, mail, logger }),
  };
  const urls = (port: number) => {
    const publicUrl = config.publicUrl ?? `http://${config.publicHost}:${port}`;
    return { publicUrl, webUrl: config.webUrl ?? publicUrl };
  };
  return { mail, codes, emailAuth, clock, github, csrfKey, urls };
}
