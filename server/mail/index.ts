import { join } from 'node:path';
import { OutboxTransport } from './outbox.ts';
import { loadPart } from '../load-part.ts';
import type { MailTransport } from './transport.ts';

export type { MailMessage, MailTransport } from './transport.ts';

/** SMTP when `smtpUrl` is set (nodemailer loads only then: load-part.ts), else files in `<dataDir>/outbox/`. */
export async function createMailTransport(options: {
  smtpUrl: string | undefined;
  from: string;
  dataDir: string;
}): Promise<MailTransport> {
  if (options.smtpUrl) {
    const { SmtpTransport } = await loadPart('SMTP mail (nodemailer)', () => import('./smtp.ts'));
    return new SmtpTransport(options.smtpUrl, options.from);
  }
  return new OutboxTransport(join(options.dataDir, 'outbox'), options.from);
}
