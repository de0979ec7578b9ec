import type { TwinSummary } from '../../contract.ts';
import { engineItems, summaryTable, text } from '../../kit/summary.ts';

/** The Apple twin's snapshot as the Apple Accounts that can sign in. */
export function summarizeApple(state: unknown): TwinSummary {
  return {
    tables: [
      summaryTable(
        'Apple Accounts',
        ['Email', 'Name', 'Private relay address'],
        engineItems(state, 'apple.users').map((u) => [
          text(u.email),
          text(u.name),
          text(u.private_relay_email),
        ]),
      ),
    ],
  };
}
