/**
 * The Google twin's scenario presets: ready-made seeds and the counts each one promises. GET /scenarios
 * lists them (server/scenarios/presets.ts sets the order); test/scenarios/presets.test.ts starts each one
 * and checks every promised count through the official SDK, before and after a reset.
 */
import type { TwinPresets } from '../../contract.ts';

export const googlePresets: TwinPresets = {
  promiseKeys: {
    messages: "messages in the first account's mailbox",
    labels: "its user labels, not Gmail's system ones",
  },
  presets: [
    {
      id: 'preset_google_workspace',
      name: 'Google Workspace account',
      description:
        'Two Google Workspace accounts at acme.dev; the first has an inbox of three messages (one labelled Customers), two calendar events and a Drive document, and signs in through GOOGLE_REFRESH_TOKEN.',
      twins: ['google'],
      seed: {
        google: {
          users: [
            { email: 'ada@acme.dev', name: 'Ada Lovelace', hd: 'acme.dev' },
            { email: 'grace@acme.dev', name: 'Grace Hopper', hd: 'acme.dev' },
          ],
          labels: [{ name: 'Customers' }],
          messages: [
            {
              from: 'Grace Hopper <grace@acme.dev>',
              to: 'ada@acme.dev',
              subject: 'Launch checklist',
              body_text: 'Can you review the checklist before Friday?',
            },
            {
              from: 'orders@customer.example',
              to: 'ada@acme.dev',
              subject: 'Order #1042 question',
              body_text: 'When will my order ship?',
              label_ids: ['INBOX', 'UNREAD', 'Customers'],
            },
            {
              from: 'billing@vendor.example',
              to: 'ada@acme.dev',
              subject: 'Your invoice',
              body_text: 'Invoice 42 is attached.',
              label_ids: ['INBOX'],
            },
          ],
          calendar_events: [
            {
              summary: 'Launch review',
              start_date_time: '2026-01-12T15:00:00Z',
              end_date_time: '2026-01-12T15:30:00Z',
              attendees: [{ email: 'grace@acme.dev' }],
            },
            {
              summary: 'Customer call',
              start_date_time: '2026-01-13T10:00:00Z',
              end_date_time: '2026-01-13T11:00:00Z',
            },
          ],
          drive_files: [{ name: 'Launch plan.txt', mime_type: 'text/plain', data: 'Ship on Friday.' }],
        },
      },
      promises: { google: { messages: 3, labels: 1 } },
    },
  ],
};
