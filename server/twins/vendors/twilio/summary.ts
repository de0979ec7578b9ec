import type { TwinSummary } from '../../contract.ts';
import { engineItems, newestFirst, summaryTable, text } from '../../kit/summary.ts';

/** The Twilio twin's snapshot as messages (newest first), phone numbers and verifications. */
export function summarizeTwilio(state: unknown): TwinSummary {
  return {
    tables: [
      summaryTable(
        'Messages',
        ['Sid', 'From', 'To', 'Body', 'Status', 'Created'],
        newestFirst(engineItems(state, 'twilio.messages')).map((m) => [
          text(m.sid),
          text(m.from),
          text(m.to),
          text(m.body),
          text(m.status),
          text(m.created_at),
        ]),
      ),
      summaryTable(
        'Phone numbers',
        ['Number', 'Name', 'SMS URL'],
        newestFirst(engineItems(state, 'twilio.phone_numbers')).map((p) => [
          text(p.phone_number),
          text(p.friendly_name),
          text(p.sms_url),
        ]),
      ),
      summaryTable(
        'Verifications',
        ['Sid', 'To', 'Channel', 'Status'],
        newestFirst(engineItems(state, 'twilio.verifications')).map((v) => [
          text(v.sid),
          text(v.to),
          text(v.channel),
          text(v.status),
        ]),
      ),
    ],
  };
}
