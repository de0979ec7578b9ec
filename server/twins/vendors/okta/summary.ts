import type { TwinSummary } from '../../contract.ts';
import { bodyObject, type RequestLogEntry } from '../../runtime/request-log.ts';
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

/** Management API writes, from the method and path (`/api/v1/users/{id}/lifecycle/deactivate`, ...). */
export function describeOktaChange(entry: RequestLogEntry): string | undefined {
  if (entry.status < 200 || entry.status >= 300 || entry.method === 'GET') return undefined;
  const path = entry.path.split('?')[0] ?? '';
  const m = /^\/api\/v1\/(users|groups|apps)(?:\/([^/]+))?(?:\/(.+))?$/.exec(path);
  if (!m) return undefined;
  const [, kind, id, rest] = m;
  const noun = kind!.slice(0, -1);
  const created = bodyObject(entry.response_body);
  if (!id && entry.method === 'POST') return `${noun} ${text(created?.id)} created`;
  if (!id) return undefined;
  if (rest?.startsWith('lifecycle/')) {
    const verb = rest.slice('lifecycle/'.length);
    return `${noun} ${id} ${verb}${verb.endsWith('e') ? 'd' : 'ed'}`;
  }
  if (rest?.startsWith('users/')) {
    return `user ${rest.slice('users/'.length)} ${entry.method === 'DELETE' ? 'removed from' : 'added to'} ${noun} ${id}`;
  }
  if (entry.method === 'DELETE') return `${noun} ${id} deleted`;
  return `${noun} ${id} updated`;
}
