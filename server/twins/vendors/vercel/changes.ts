import {
  bodyField,
  bodyObject,
  successfulMutation,
  type RequestLogEntry,
} from '../../runtime/request-log.ts';

const d = decodeURIComponent;

/** What a Vercel API call changed ("deployment dpl_... of web (production)"), for the timeline. */
export function describeVercelChange(entry: RequestLogEntry): string | undefined {
  const mutation = successfulMutation(entry);
  if (!mutation) return undefined;
  const { method, pathname } = mutation;
  const response = bodyObject(entry.response_body);
  let m: RegExpExecArray | null;
  if (method === 'POST' && /^\/v\d+\/projects$/.test(pathname))
    return `project ${bodyField(entry.request_body, 'name') ?? '?'} created`;
  if (method === 'PATCH' && (m = /^\/v\d+\/projects\/([^/]+)$/.exec(pathname)))
    return `project ${d(m[1]!)} updated`;
  if (method === 'DELETE' && (m = /^\/v\d+\/projects\/([^/]+)$/.exec(pathname)))
    return `project ${d(m[1]!)} deleted`;
  if ((m = /^\/v\d+\/projects\/([^/]+)\/env(?:\/([^/]+))?$/.exec(pathname))) {
    if (method === 'POST') {
      const key = bodyField(entry.request_body, 'key');
      return `${key ? `env var ${key}` : 'env vars'} set on project ${d(m[1]!)}`;
    }
    if (method === 'PATCH') return `env var ${m[2] ?? '?'} of project ${d(m[1]!)} updated`;
    if (method === 'DELETE') return `env var ${m[2] ?? '?'} of project ${d(m[1]!)} deleted`;
  }
  if ((m = /^\/v\d+\/projects\/([^/]+)\/domains(?:\/([^/]+))?(\/verify)?$/.exec(pathname))) {
    if (method === 'POST' && m[3]) return `domain ${d(m[2] ?? '?')} of project ${d(m[1]!)} verified`;
    if (method === 'POST')
      return `domain ${bodyField(entry.request_body, 'name') ?? '?'} added to project ${d(m[1]!)}`;
    if (method === 'DELETE') return `domain ${d(m[2] ?? '?')} removed from project ${d(m[1]!)}`;
  }
  if (method === 'POST' && /^\/v\d+\/deployments$/.test(pathname)) {
    const target = bodyField(entry.request_body, 'target');
    return `deployment ${String(response?.id ?? '?')} of ${bodyField(entry.request_body, 'name') ?? '?'}${target ? ` (${target})` : ''}`;
  }
  if ((m = /^\/v\d+\/deployments\/([^/]+)\/cancel$/.exec(pathname))) return `deployment ${m[1]} canceled`;
  if (method === 'DELETE' && (m = /^\/v\d+\/deployments\/([^/]+)$/.exec(pathname)))
    return `deployment ${m[1]} deleted`;
  if (method === 'POST' && /^\/v\d+\/teams$/.test(pathname))
    return `team ${bodyField(entry.request_body, 'slug') ?? '?'} created`;
  return undefined;
}
