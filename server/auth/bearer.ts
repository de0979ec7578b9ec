import type { Plugin, Request, ResponseToolkit } from '@hapi/hapi';
import { timingSafeEqual, createHash } from 'node:crypto';
import type { Store } from '../store/store.ts';
import type { AccountRecord } from '../store/records.ts';
import { unauthorized } from '../errors.ts';
import { looksLikeApiKey } from './api-key-format.ts';
import type { ApiKeys } from './api-keys.ts';
import type { Sessions } from './sessions.ts';

export type TokenType = 'api_key' | 'session';

declare module '@hapi/hapi' {
  interface UserCredentials {
    account: AccountRecord;
    tokenType: TokenType;
  }
}

/** The strategy every public route uses: an API key or a JWT session, as `Authorization: Bearer`. */
export const BEARER = 'twinbox-bearer';
/** Session (JWT) only: for routes that manage credentials, where an API key must not be enough. */
export const SESSION = 'twinbox-session';
/** The operator strategy: the `TWINBOX_ADMIN_TOKEN` as bearer. */
export const ADMIN = 'twinbox-admin';

/** `Bearer <token>`, any case and spacing of the scheme; the token is group 1. */
export const BEARER_PATTERN = /^Bearer +([^\s]+) *$/i;

/** The token of `Authorization: Bearer <token>`; 401 when the header is missing or malformed. */
export function bearerToken(request: Request): string {
  const header: unknown = request.headers.authorization;
  if (typeof header !== 'string' || header === '')
    throw unauthorized('Missing credentials: send the header "Authorization: Bearer <token>".');
  const match = BEARER_PATTERN.exec(header);
  if (!match) throw unauthorized('Malformed Authorization header: expected "Bearer <token>".');
  return match[1]!;
}

export interface BearerOptions {
  store: Store;
  apiKeys: ApiKeys;
  sessions: Sessions;
  adminToken: string | undefined;
}

/** The caller an accepted bearer token stands for. */
export interface BearerCredentials {
  account: AccountRecord;
  tokenType: TokenType;
}

/**
 * The check behind the `twinbox-bearer` strategy, as a function of the token: an API key, else a JWT
 * session. Refuses with the 401 the API answers. The hot read (server/sandboxes/hot-read.ts) calls the
 * same function, so a token is accepted there exactly when hapi's strategy accepts it.
 */
export function bearerCredentials(
  options: Pick<BearerOptions, 'store' | 'apiKeys' | 'sessions'>,
): (token: string) => Promise<BearerCredentials> {
  const { apiKeys } = options;
  return async (token) => {
    if (looksLikeApiKey(token)) {
      const account = await apiKeys.authenticate(token);
      if (!account) throw unauthorized('Invalid API key: it is unknown, revoked or mistyped.');
      return { account, tokenType: 'api_key' };
    }
    return { account: await sessionAccount(options, token), tokenType: 'session' };
  };
}

/** An unverified account can hold no session, whoever minted the token. */
async function sessionAccount(
  { store, sessions }: Pick<BearerOptions, 'store' | 'sessions'>,
  token: string,
): Promise<AccountRecord> {
  const claims = await sessions.verify(token);
  const account = claims && (await store.accounts.get(claims.accountId));
  if (!account || account.email_verified === false) throw unauthorized('Invalid or expired session token.');
  return account;
}

export const bearerAuth: Plugin<BearerOptions> = {
  name: 'twinbox-bearer-auth',
  register(server, options) {
    const { adminToken } = options;
    const credentialsOf = bearerCredentials(options);
    server.auth.scheme(BEARER, () => ({
      async authenticate(request: Request, h: ResponseToolkit) {
        return h.authenticated({ credentials: { user: await credentialsOf(bearerToken(request)) } });
      },
    }));
    server.auth.strategy(BEARER, BEARER);

    server.auth.scheme(SESSION, () => ({
      async authenticate(request: Request, h: ResponseToolkit) {
        const token = bearerToken(request);
        if (looksLikeApiKey(token)) {
          throw unauthorized(
            'This endpoint needs a session token (JWT) from sign-in; API keys are not accepted.',
          );
        }
        const account = await sessionAccount(options, token);
        return h.authenticated({ credentials: { user: { account, tokenType: 'session' } } });
      },
    }));
    server.auth.strategy(SESSION, SESSION);

    if (adminToken) {
      const expected = digest(adminToken);
      server.auth.scheme(ADMIN, () => ({
        authenticate(request: Request, h: ResponseToolkit) {
          // Compare digests so the comparison takes the same time whatever the token's length.
          if (!timingSafeEqual(digest(bearerToken(request)), expected)) {
            throw unauthorized('Invalid operator token.');
          }
          return h.authenticated({ credentials: { app: { operator: true } } });
        },
      }));
      server.auth.strategy(ADMIN, ADMIN);
    }
  },
};

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

/** The signed-in account of an authenticated request. */
export function accountOf(request: Request): AccountRecord {
  return request.auth.credentials.user!.account;
}
