import type { TwinSummary } from '../../contract.ts';
import { engineItems, newestFirst, summaryTable, text } from '../../kit/summary.ts';

const list = (value: unknown) => (Array.isArray(value) ? value.map(text).join(', ') : text(value));

/** The Google twin's snapshot as accounts, Gmail messages, calendar events and Drive files, newest first. */
export function summarizeGoogle(state: unknown): TwinSummary {
  return {
    tables: [
      summaryTable(
        'Accounts',
        ['Email', 'Name'],
        engineItems(state, 'google.users').map((u) => [text(u.email), text(u.name)]),
      ),
      summaryTable(
        'Gmail messages',
        ['Mailbox', 'From', 'To', 'Subject', 'Labels'],
        newestFirst(engineItems(state, 'google.messages')).map((m) => [
          text(m.user_email),
          text(m.from),
          text(m.to),
          text(m.subject),
          list(m.label_ids),
        ]),
      ),
      summaryTable(
        'Calendar events',
        ['Calendar owner', 'Summary', 'Start', 'End', 'Status'],
        newestFirst(engineItems(state, 'google.calendar_events')).map((e) => [
          text(e.user_email),
          text(e.summary),
          text(e.start_date_time ?? e.start_date),
          text(e.end_date_time ?? e.end_date),
          text(e.status),
        ]),
      ),
      summaryTable(
        'Drive files',
        ['Owner', 'Name', 'Type'],
        newestFirst(engineItems(state, 'google.drive_items')).map((f) => [
          text(f.user_email),
          text(f.name),
          text(f.mime_type),
        ]),
      ),
    ],
  };
}
