import type { TwinSummary } from '../../contract.ts';
import { engineItems, summaryTable, text } from '../../kit/summary.ts';

/** The Microsoft twin's snapshot as the tenant's users and the app registrations. */
export function summarizeMicrosoft(state: unknown): TwinSummary {
  return {
    tables: [
      summaryTable(
        'Users',
        ['User principal name', 'Display name', 'Object id'],
        engineItems(state, 'microsoft.users').map((u) => [
          text(u.preferred_username),
          text(u.name),
          text(u.oid),
        ]),
      ),
      summaryTable(
        'App registrations',
        ['Client id', 'Name', 'Redirect URIs'],
        engineItems(state, 'microsoft.oauth_clients').map((c) => [
          text(c.client_id),
          text(c.name),
          Array.isArray(c.redirect_uris) ? c.redirect_uris.map(text).join(', ') : '',
        ]),
      ),
    ],
  };
}
