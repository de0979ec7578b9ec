import nodemailer, { type Transporter } from 'nodemailer';
import type { MailMessage, MailTransport } from './transport.ts';

/** Sends through an SMTP server given as a URL: `smtp://user:pass@host:587` or `smtps://...:465`. */
export class SmtpTransport implements MailTransport {
  readonly kind = 'smtp';
  private readonly transporter: Transporter;

  constructor(
    url: string,
    private readonly from: string,
  ) {
    // No pool: sign-in mail is rare, and a pooled connection would outlive a test's SMTP server.
    this.transporter = nodemailer.createTransport(url);
  }

  async send(message: MailMessage): Promise<void> {
    await this.transporter.sendMail({ from: this.from, ...message });
  }

  async close(): Promise<void> {
    this.transporter.close();
  }
}
