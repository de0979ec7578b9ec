import { createHmac, randomBytes } from 'node:crypto';
import type { WebhookSigner } from '../runtime/webhooks.ts';

/** A `whsec_` secret as Svix issues them: base64 of 24 random bytes (standard base64, which verifiers decode). */
export function standardWebhookSecret(): string {
  return `whsec_${randomBytes(24).toString('base64')}`;
}

/**
 * Standard Webhooks / Svix signing (what Resend and Clerk send): `v1,<base64 HMAC-SHA256>` of
 * `<id>.<timestamp>.<body>` keyed with the secret's base64 part. Sent under both header families, since
 * Svix's verifiers read `svix-*` and the Standard Webhooks ones `webhook-*`.
 */
export const standardWebhookSigner: WebhookSigner = ({ body, secret, guid }) => {
  const id = `msg_${guid.replaceAll('-', '')}`;
  const ts = String(Math.floor(Date.now() / 1000));
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const signature = `v1,${createHmac('sha256', key).update(`${id}.${ts}.${body}`).digest('base64')}`;
  return {
    'user-agent': 'Svix-Webhooks/1.0',
    'svix-id': id,
    'svix-timestamp': ts,
    'svix-signature': signature,
    'webhook-id': id,
    'webhook-timestamp': ts,
    'webhook-signature': signature,
  };
};
