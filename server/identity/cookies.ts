import type { Request, Server } from '@hapi/hapi';
import type { Sessions } from '../auth/sessions.ts';
import type { Store } from '../store/store.ts';
import type { AccountRecord } from '../store/records.ts';

/**
 * The browser's session: the same JWT the verify endpoints return, in an HttpOnly cookie, so pages
 * and browser navigations (GitHub connect) carry it without script access and without it ever being
 * in a URL. SameSite=Lax keeps it off cross-site POSTs (CSRF on forms).
 */
export const SESSION_COOKIE = 'twinbox_session';
/** Binds an OAuth `state` to the browser that started the flow. Scoped to the GitHub routes. */
export const OAUTH_COOKIE = 'twinbox_oauth';

export function defineCookies(server: Server, options: { secure: boolean; sessionTtlMinutes: number }): void {
  const common = {
    isSecure: options.secure,
    isHttpOnly: true,
    isSameSite: 'Lax' as const,
    encoding: 'none' as const,
    strictHeader: true,
    ignoreErrors: true,
    clearInvalid: true,
  };
  server.state(SESSION_COOKIE, { ...common, path: '/', ttl: options.sessionTtlMinutes * 60_000 });
  server.state(OAUTH_COOKIE, { ...common, path: '/auth/github', ttl: 10 * 60_000 });
}

/** The signed-in, verified account of a browser request (session cookie), if any. */
export async function cookieAccount(
  request: Request,
  sessions: Sessions,
  store: Store,
): Promise<AccountRecord | undefined> {
  const token = (request.state as Record<string, unknown> | null)?.[SESSION_COOKIE];
  if (typeof token !== 'string' || token === '') return undefined;
  const claims = await sessions.verify(token);
  const account = claims && (await store.accounts.get(claims.accountId));
  return account && account.email_verified !== false ? account : undefined;
}
