import type { TwinSummary } from '../../contract.ts';
import { engineItems, newestFirst, summaryTable, text } from '../../kit/summary.ts';

/** The Okta twin's snapshot as users and groups (with their member counts), newest first. */
export function summarizeOkta(state: unknown): TwinSummary {
  const memberships = engineItems(state, 'okta.group_memberships');
  return {
    tables: [
      summaryTable(
        'Users',
        ['Login', 'Name', 'Status', 'Id'],
        newestFirst(engineItems(state, 'okta.users')).map((u) => [
          text(u.login),
          `${text(u.first_name)} ${text(u.last_name)}`.trim(),
          text(u.status),
          text(u.okta_id),
        ]),
      ),
      summaryTable(
        'Groups',
        ['Name', 'Members', 'Id'],
        newestFirst(engineItems(state, 'okta.groups')).map((g) => [
          text(g.name),
          String(memberships.filter((m) => m.group_okta_id === g.okta_id).length),
          text(g.okta_id),
        ]),
      ),
    ],
  };
}
