import {
  bodyField,
  bodyObject,
  successfulMutation,
  type RequestLogEntry,
} from '../../runtime/request-log.ts';

const d = decodeURIComponent;

/** What an Atlas Admin API or Data API call changed ("cluster Analytics created"), for the timeline. */
export function describeMongoAtlasChange(entry: RequestLogEntry): string | undefined {
  const mutation = successfulMutation(entry);
  if (!mutation) return undefined;
  const { method, pathname } = mutation;
  let m: RegExpExecArray | null;
  if (
    (m =
      /^\/app\/data-api\/v1\/action\/(insertOne|insertMany|updateOne|updateMany|deleteOne|deleteMany)$/.exec(
        pathname,
      ))
  ) {
    const where = `${bodyField(entry.request_body, 'database') ?? '?'}.${bodyField(entry.request_body, 'collection') ?? '?'}`;
    const r = bodyObject(entry.response_body);
    const n = r?.insertedIds ?? r?.modifiedCount ?? r?.deletedCount;
    const count = Array.isArray(n) ? n.length : typeof n === 'number' ? n : 1;
    const verb = m[1]!.startsWith('insert')
      ? 'inserted into'
      : m[1]!.startsWith('update')
        ? 'updated in'
        : 'deleted from';
    return `${count} document${count === 1 ? '' : 's'} ${verb} ${where}`;
  }
  if (pathname === '/api/oauth/token' || pathname === '/api/oauth/revoke') return undefined;
  if (method === 'POST' && pathname === '/api/atlas/v2/groups')
    return `project ${bodyField(entry.request_body, 'name') ?? '?'} created`;
  if (method === 'DELETE' && (m = /^\/api\/atlas\/v2\/groups\/([^/]+)$/.exec(pathname)))
    return `project ${m[1]} deleted`;
  if ((m = /^\/api\/atlas\/v2\/groups\/[^/]+\/clusters(?:\/([^/]+))?$/.exec(pathname))) {
    if (method === 'POST') return `cluster ${bodyField(entry.request_body, 'name') ?? '?'} created`;
    if (method === 'PATCH') return `cluster ${d(m[1] ?? '?')} updated`;
    if (method === 'DELETE') return `cluster ${d(m[1] ?? '?')} deleted`;
  }
  if ((m = /^\/api\/atlas\/v2\/groups\/[^/]+\/databaseUsers(?:\/admin\/([^/]+))?$/.exec(pathname))) {
    if (method === 'POST') return `database user ${bodyField(entry.request_body, 'username') ?? '?'} created`;
    if (method === 'DELETE') return `database user ${d(m[1] ?? '?')} deleted`;
  }
  return undefined;
}
