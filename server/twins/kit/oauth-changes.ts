/**
 * The timeline lines of a sign-in twin's OAuth endpoints (Apple, Microsoft): the same four changes, at
 * the paths each vendor gives them. The log masks every token, so a line names the client and, where the
 * entry carries it, the account, never a token.
 */
import { bodyField, successfulMutation, type RequestLogEntry } from '../runtime/request-log.ts';

export interface OAuthChangePaths {
  /** Where the account picker posts the account chosen (the engine then issues a code). */
  callback: RegExp;
  token: RegExp;
  revoke: RegExp;
}

const TOKEN_KINDS: Record<string, string> = { access_token: 'access token', refresh_token: 'refresh token' };

/** What a call to a sign-in endpoint changed ("authorization code issued to … for ada@…"), or undefined. */
export function describeOAuthChange(entry: RequestLogEntry, paths: OAuthChangePaths): string | undefined {
  const field = (name: string) => bodyField(entry.request_body, name);
  const client = field('client_id');
  const to = client ? ` to ${client}` : '';
  const pathname = entry.path.split('?')[0] ?? '/';
  // The picker answers the browser with a redirect to the app (or, for form_post, a page that posts the
  // code): a 302 here is the code issued, not a refusal.
  if (
    entry.method.toUpperCase() === 'POST' &&
    !entry.fault &&
    (entry.status === 302 || (entry.status >= 200 && entry.status <= 299)) &&
    paths.callback.test(pathname)
  ) {
    const email = field('email');
    return `authorization code issued${to}${email ? ` for ${email}` : ''}`;
  }
  const mutation = successfulMutation(entry);
  if (!mutation || mutation.method !== 'POST') return undefined;
  if (paths.token.test(pathname)) {
    const grant = field('grant_type');
    if (grant === 'authorization_code') return `tokens issued${to} for an authorization code`;
    if (grant === 'refresh_token') return `tokens refreshed${to}`;
    if (grant === 'client_credentials') return `app-only access token issued${to}`;
    return undefined;
  }
  if (paths.revoke.test(pathname)) {
    const kind = TOKEN_KINDS[field('token_type_hint') ?? ''] ?? 'token';
    return `${kind} revoked${client ? ` for ${client}` : ''}`;
  }
  return undefined;
}
