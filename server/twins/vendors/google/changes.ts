import { bodyObject, type RequestLogEntry } from '../../runtime/request-log.ts';
import { text } from '../../kit/summary.ts';

/** Gmail, Calendar and Drive writes ("message 18c... sent", "event Standup created"), for the timeline. */
export function describeGoogleChange(entry: RequestLogEntry): string | undefined {
  if (entry.status < 200 || entry.status >= 300 || entry.method === 'GET') return undefined;
  const path = entry.path.split('?')[0] ?? '';
  const response = bodyObject(entry.response_body);
  let m: RegExpExecArray | null;
  if (/^\/gmail\/v1\/users\/[^/]+\/messages\/send$/.test(path)) return `message ${text(response?.id)} sent`;
  if (/^\/gmail\/v1\/users\/[^/]+\/drafts\/send$/.test(path))
    return `draft sent as message ${text(response?.id)}`;
  if ((m = /^\/gmail\/v1\/users\/[^/]+\/messages\/([^/]+)\/(modify|trash|untrash)$/.exec(path)))
    return m[2] === 'modify' ? `labels of message ${m[1]} changed` : `message ${m[1]} ${m[2]}ed`;
  if (/^\/gmail\/v1\/users\/[^/]+\/drafts$/.test(path)) return `draft ${text(response?.id)} saved`;
  if (entry.method === 'POST' && /^\/gmail\/v1\/users\/[^/]+\/labels$/.test(path))
    return `label ${text(response?.name)} created`;
  if ((m = /^\/calendar\/v3\/calendars\/([^/]+)\/events(?:\/([^/]+))?$/.exec(path))) {
    if (entry.method === 'POST')
      return `event ${text(response?.summary)} created on ${decodeURIComponent(m[1]!)}`;
    if (entry.method === 'DELETE') return `event ${m[2]} deleted`;
  }
  if (entry.method !== 'POST' && (m = /^\/drive\/v3\/files\/([^/]+)$/.exec(path)))
    return `file ${m[1]} updated`;
  if (entry.method === 'POST' && /^(\/upload)?\/drive\/v3\/files$/.test(path))
    return `file ${text(response?.name)} created`;
  return undefined;
}
