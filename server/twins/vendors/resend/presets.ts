/**
 * The Resend twin's scenario presets: ready-made seeds and the counts each one promises. GET /scenarios
 * lists them (server/scenarios/presets.ts sets the order); test/scenarios/presets.test.ts starts each one
 * and checks every promised count through the official SDK, before and after a reset.
 */
import type { TwinPresets } from '../../contract.ts';

export const resendPresets: TwinPresets = {
  promiseKeys: {
    domains: 'domains',
    contacts: 'contacts, in every audience',
    emails: 'emails',
  },
  presets: [
    {
      id: 'preset_transactional_email',
      name: 'Transactional email',
      description:
        'A Resend account with a verified sending domain, a newsletter audience of two contacts and two emails already delivered (a welcome and a receipt).',
      twins: ['resend'],
      seed: {
        resend: {
          domains: [{ name: 'mail.acme.dev', region: 'eu-west-1' }],
          contacts: [
            { email: 'ada@example.com', first_name: 'Ada', last_name: 'Lovelace', audience: 'Newsletter' },
            { email: 'grace@example.com', first_name: 'Grace', last_name: 'Hopper', audience: 'Newsletter' },
          ],
          emails: [
            {
              from: 'Acme <hello@mail.acme.dev>',
              to: 'ada@example.com',
              subject: 'Welcome to Acme',
              html: '<p>Thanks for signing up.</p>',
            },
            {
              from: 'Acme Billing <billing@mail.acme.dev>',
              to: 'grace@example.com',
              subject: 'Your receipt #1042',
              text: 'You paid $29.00.',
            },
          ],
        },
      },
      promises: { resend: { domains: 1, contacts: 2, emails: 2 } },
    },
  ],
};
