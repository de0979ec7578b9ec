import {
  bodyField,
  bodyObject,
  successfulMutation,
  type RequestLogEntry,
} from '../../runtime/request-log.ts';

/** What a Resend API call changed ("email 4ef9... sent to ada@example.com"), for the timeline. */
export function describeResendChange(entry: RequestLogEntry): string | undefined {
  const mutation = successfulMutation(entry);
  if (!mutation) return undefined;
  const { method, pathname } = mutation;
  const response = bodyObject(entry.response_body);
  const request = bodyObject(entry.request_body);
  if (method === 'POST' && pathname === '/emails') {
    const to = request?.to;
    const recipients = Array.isArray(to) ? to.join(', ') : String(to ?? '?');
    return `email ${String(response?.id ?? '')} sent to ${recipients}`;
  }
  if (method === 'POST' && pathname === '/emails/batch') {
    const data = response?.data;
    return `${Array.isArray(data) ? data.length : '?'} emails sent in a batch`;
  }
  let m: RegExpExecArray | null;
  if ((m = /^\/emails\/([^/]+)\/cancel$/.exec(pathname))) return `scheduled email ${m[1]} canceled`;
  if (method === 'POST' && pathname === '/domains')
    return `domain ${bodyField(entry.request_body, 'name') ?? '?'} added`;
  if ((m = /^\/domains\/([^/]+)\/verify$/.exec(pathname))) return `domain ${m[1]} verified`;
  if (method === 'DELETE' && (m = /^\/domains\/([^/]+)$/.exec(pathname))) return `domain ${m[1]} deleted`;
  if (method === 'POST' && pathname === '/api-keys')
    return `API key ${bodyField(entry.request_body, 'name') ?? '?'} created`;
  if (method === 'DELETE' && (m = /^\/api-keys\/([^/]+)$/.exec(pathname))) return `API key ${m[1]} deleted`;
  if (method === 'POST' && pathname === '/audiences')
    return `audience ${bodyField(entry.request_body, 'name') ?? '?'} created`;
  if (method === 'DELETE' && (m = /^\/audiences\/([^/]+)$/.exec(pathname))) return `audience ${m[1]} deleted`;
  if (method === 'POST' && (m = /^\/audiences\/([^/]+)\/contacts$/.exec(pathname)))
    return `contact ${bodyField(entry.request_body, 'email') ?? '?'} added to audience ${m[1]}`;
  if (method === 'DELETE' && (m = /^\/audiences\/([^/]+)\/contacts\/([^/]+)$/.exec(pathname)))
    return `contact ${m[2]} removed from audience ${m[1]}`;
  return undefined;
}
