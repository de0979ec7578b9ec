import { join } from 'node:path';
import { OutboxTransport } from './outbox.ts';
import { SmtpTransport } from './smtp.ts';
import type { MailTransport } from './transport.ts';

export type { MailMessage, MailTransport } from './transport.ts';

/** SMTP when `smtpUrl` is set, else files in `<dataDir>/outbox/`. */
export function createMailTransport(options: {
  smtpUrl: string | undefined;
  from: string;
  dataDir: string;
}): MailTransport {
  if (options.smtpUrl) return new SmtpTransport(options.smtpUrl, options.from);
  return new OutboxTransport(join(options.dataDir, 'outbox'), options.from);
}
