import { bodyObject, type RequestLogEntry } from '../../runtime/request-log.ts';
import { text } from '../../kit/summary.ts';

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
