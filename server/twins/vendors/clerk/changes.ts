import {
  bodyField,
  bodyObject,
  successfulMutation,
  type RequestLogEntry,
} from '../../runtime/request-log.ts';

/** What a Clerk Backend API call changed ("user user_... created (ada@acme.dev)"), for the timeline. */
export function describeClerkChange(entry: RequestLogEntry): string | undefined {
  const mutation = successfulMutation(entry);
  if (!mutation) return undefined;
  const { method, pathname } = mutation;
  const response = bodyObject(entry.response_body);
  const request = bodyObject(entry.request_body);
  let m: RegExpExecArray | null;
  if (method === 'POST' && pathname === '/v1/users') {
    const email = request?.email_address;
    const first = Array.isArray(email) ? email[0] : email;
    return `user ${String(response?.id ?? '?')} created${first ? ` (${String(first)})` : ''}`;
  }
  if ((m = /^\/v1\/users\/([^/]+)$/.exec(pathname))) {
    if (method === 'PATCH') return `user ${m[1]} updated`;
    if (method === 'DELETE') return `user ${m[1]} deleted`;
  }
  if (method === 'PATCH' && (m = /^\/v1\/users\/([^/]+)\/metadata$/.exec(pathname)))
    return `metadata of user ${m[1]} updated`;
  if ((m = /^\/v1\/users\/([^/]+)\/(ban|unban|lock|unlock)$/.exec(pathname)))
    return `user ${m[1]} ${m[2] === 'ban' ? 'banned' : m[2] === 'unban' ? 'unbanned' : `${m[2]}ed`}`;
  if (method === 'POST' && pathname === '/v1/email_addresses')
    return `email address ${bodyField(entry.request_body, 'email_address') ?? '?'} added to user ${bodyField(entry.request_body, 'user_id') ?? '?'}`;
  if (method === 'DELETE' && (m = /^\/v1\/email_addresses\/([^/]+)$/.exec(pathname)))
    return `email address ${m[1]} deleted`;
  if (method === 'POST' && pathname === '/v1/organizations')
    return `organization ${bodyField(entry.request_body, 'name') ?? '?'} created (${String(response?.id ?? '?')})`;
  if ((m = /^\/v1\/organizations\/([^/]+)$/.exec(pathname))) {
    if (method === 'PATCH') return `organization ${m[1]} updated`;
    if (method === 'DELETE') return `organization ${m[1]} deleted`;
  }
  if ((m = /^\/v1\/organizations\/([^/]+)\/memberships(?:\/([^/]+))?$/.exec(pathname))) {
    if (method === 'POST')
      return `user ${bodyField(entry.request_body, 'user_id') ?? '?'} added to organization ${m[1]} as ${bodyField(entry.request_body, 'role') ?? '?'}`;
    if (method === 'PATCH')
      return `role of user ${m[2]} in organization ${m[1]} set to ${bodyField(entry.request_body, 'role') ?? '?'}`;
    if (method === 'DELETE') return `user ${m[2]} removed from organization ${m[1]}`;
  }
  if (method === 'POST' && (m = /^\/v1\/organizations\/([^/]+)\/invitations$/.exec(pathname)))
    return `${bodyField(entry.request_body, 'email_address') ?? '?'} invited to organization ${m[1]}`;
  if ((m = /^\/v1\/organizations\/([^/]+)\/invitations\/([^/]+)\/revoke$/.exec(pathname)))
    return `invitation ${m[2]} to organization ${m[1]} revoked`;
  if (method === 'POST' && pathname === '/v1/sessions')
    return `session ${String(response?.id ?? '?')} created for user ${bodyField(entry.request_body, 'user_id') ?? '?'}`;
  if ((m = /^\/v1\/sessions\/([^/]+)\/revoke$/.exec(pathname))) return `session ${m[1]} revoked`;
  return undefined;
}
