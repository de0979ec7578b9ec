/** One message Twinbox sends: plain text only, to one recipient. */
export interface MailMessage {
  to: string;
  subject: string;
  text: string;
}

/**
 * Where mail goes. The embedded default writes files into the data directory (outbox.ts); SMTP_URL
 * switches to SMTP (smtp.ts). `send` resolves once the message is durably handed over.
 */
export interface MailTransport {
  readonly kind: 'outbox' | 'smtp';
  send(message: MailMessage): Promise<void>;
  close(): Promise<void>;
}
