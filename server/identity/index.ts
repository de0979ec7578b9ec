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

/** The identity parts Twinbox is built with (routes in routes.ts, github/, web/). */
export interface Identity {
  mail: MailTransport;
  codes: VerificationCodes;
  emailAuth: EmailAuth;
  clock: Clock;
}

export async function createIdentity(options: {
  config: Config;
  store: Store;
  accounts: Accounts;
  sessions: Sessions;
  logger: Logger;
  clock?: Clock;
}): Promise<Identity> {
  const { config, store, accounts, sessions, logger } = options;
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
  return { mail, codes, emailAuth, clock };
}
