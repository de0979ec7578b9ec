import type { TwinSummary } from '../../contract.ts';
import { engineItems, newestFirst, summaryTable, text } from '../../kit/summary.ts';

const list = (value: unknown) => (Array.isArray(value) ? value.map(text).join(', ') : text(value));

/** The Resend twin's snapshot as the emails sent (newest first), domains and contacts. */
export function summarizeResend(state: unknown): TwinSummary {
  return {
    tables: [
      summaryTable(
        'Emails',
        ['Id', 'From', 'To', 'Subject', 'Status', 'Created'],
        newestFirst(engineItems(state, 'resend.emails')).map((e) => [
          text(e.uuid),
          text(e.from),
          list(e.to),
          text(e.subject),
          text(e.status),
          text(e.created_at),
        ]),
      ),
      summaryTable(
        'Domains',
        ['Name', 'Region', 'Status'],
        newestFirst(engineItems(state, 'resend.domains')).map((d) => [
          text(d.name),
          text(d.region),
          text(d.status),
        ]),
      ),
      summaryTable(
        'Contacts',
        ['Email', 'First name', 'Last name', 'Unsubscribed'],
        newestFirst(engineItems(state, 'resend.contacts')).map((c) => [
          text(c.email),
          text(c.first_name),
          text(c.last_name),
          c.unsubscribed === true ? 'yes' : 'no',
        ]),
      ),
    ],
  };
}
