import Joi from 'joi';
import type { Plugin, Request, ResponseToolkit } from '@hapi/hapi';
import { accountOf } from '../../auth/bearer.ts';
import { apiError } from '../../errors.ts';
import { documentedResponses } from '../../http/responses.ts';
import type { Sessions } from '../../auth/sessions.ts';
import type { Store } from '../../store/store.ts';
import { OAUTH_COOKIE, SESSION_COOKIE, cookieAccount } from '../cookies.ts';
import { GitHubAuthError, type GitHubOAuthClient } from './client.ts';
import type { GitHubLinking } from './linking.ts';
import type { GitHubConnections } from './connections.ts';
import type { OAuthPurpose, OAuthStates } from './state.ts';
import { DEFAULT_LANDING, safeNext } from '../next.ts';

export interface GitHubRoutesOptions {
  /** Undefined when GITHUB_CLIENT_ID / GITHUB_CLIENT_SECRET are not set. */
  client: GitHubOAuthClient | undefined;
  states: OAuthStates;
  linking: GitHubLinking;
  /** Keeps the token of each connection (sealed), which deploys fetch private repositories with. */
  connections: GitHubConnections;
  sessions: Sessions;
  store: Store;
  /** This server's browser-facing base URL and the web app's, resolved once the port is known. */
  urls: () => { publicUrl: string; webUrl: string };
}

/**
 * GitHub sign-in (`/auth/github/login?next=/page`) and connect (`/auth/github/connect`), both finishing at
 * `/auth/github/callback`. Browser routes: every outcome is a redirect, errors to the web app's
 * /login (login) or /integrations (connect) with `error` and `detail` in the query. A sign-in lands on its
 * `next` (kept in the server-side flow record, never in GitHub's URL), else on the dashboard.
 */
export const githubRoutes: Plugin<GitHubRoutesOptions> = {
  name: 'twinbox-github-auth',
  register(server, { client, states, linking, connections, sessions, store, urls }) {
    const page = (path: string, query: Record<string, string>) => {
      const url = new URL(path, `${urls().webUrl}/`);
      for (const [name, value] of Object.entries(query)) url.searchParams.set(name, value);
      return url.toString();
    };
    const errorPage = (purpose: OAuthPurpose) => (purpose === 'connect' ? '/integrations' : '/login');
    const fail = (h: ResponseToolkit, purpose: OAuthPurpose, error: string, detail: string, next?: string) =>
      h
        .redirect(page(errorPage(purpose), { error, detail, ...(next ? { next } : {}) }))
        .unstate(OAUTH_COOKIE);
    const redirectUri = () => `${urls().publicUrl}/auth/github/callback`;

    const start = async (h: ResponseToolkit, purpose: OAuthPurpose, accountId?: string, next?: string) => {
      if (!client) {
        return fail(
          h,
          purpose,
          'github_not_configured',
          'GitHub sign-in is not configured on this Twinbox.',
          next,
        );
      }
      const { state, binding, codeChallenge } = await states.start({ purpose, accountId, next });
      return h
        .redirect(client.authorizeUrl({ redirectUri: redirectUri(), state, codeChallenge }))
        .state(OAUTH_COOKIE, binding)
        .header('Cache-Control', 'no-store');
    };

    const options = { auth: false as const, tags: ['identity', 'browser'] };
    server.route({
      method: 'DELETE',
      path: '/integrations/github',
      options: {
        tags: ['api', 'identity'],
        description:
          "Disconnect GitHub: unlinks the caller's GitHub account and deletes its stored token (sandboxes of private repositories then fail until GitHub is connected again)",
        ...documentedResponses({ 204: Joi.any() }, 401, 404),
      },
      async handler(request, h) {
        const account = accountOf(request);
        if (!(await connections.disconnect(account.id)))
          throw apiError(404, 'Your Twinbox account has no GitHub connection.', 'github_not_connected');
        return h.response().code(204);
      },
    });
    server.route([
      {
        method: 'GET',
        path: '/auth/github/login',
        options: { ...options, description: 'Start signing in with GitHub (redirects to GitHub)' },
        handler(request, h) {
          const next = (request.query as Record<string, unknown>).next;
          return start(h, 'login', undefined, next === undefined ? undefined : safeNext(next));
        },
      },
      {
        method: 'GET',
        path: '/auth/github/connect',
        options: {
          ...options,
          description: 'Connect GitHub to the signed-in account (session cookie; redirects to GitHub)',
        },
        async handler(request, h) {
          const account = await cookieAccount(request, sessions, store);
          if (!account) {
            return h.redirect(
              page('/login', {
                error: 'signin_required',
                detail: 'Sign in first, then connect GitHub.',
                next: '/integrations',
              }),
            );
          }
          return start(h, 'connect', account.id);
        },
      },
      {
        method: 'GET',
        path: '/auth/github/callback',
        options: { ...options, description: 'GitHub redirects here after login or connect' },
        async handler(request: Request, h) {
          const query = request.query as Record<string, unknown>;
          const binding = (request.state as Record<string, unknown> | null)?.[OAUTH_COOKIE];
          const taken = await states.take(query.state, binding);
          if (!taken.ok) return fail(h, 'login', 'invalid_state', taken.reason);
          const { purpose, accountId, codeVerifier, next } = taken.flow;
          if (typeof query.error === 'string') {
            const detail =
              query.error === 'access_denied'
                ? 'GitHub access was not granted, so nothing was changed.'
                : 'GitHub did not complete the sign-in, so nothing was changed.';
            return fail(
              h,
              purpose,
              query.error === 'access_denied' ? 'access_denied' : 'github_error',
              detail,
              next,
            );
          }
          if (typeof query.code !== 'string' || query.code === '' || !client) {
            return fail(h, purpose, 'github_error', 'GitHub did not send a sign-in code.', next);
          }
          let profile;
          try {
            profile = await client.profile(query.code, codeVerifier, redirectUri());
          } catch (error) {
            if (error instanceof GitHubAuthError) return fail(h, purpose, error.code, error.message, next);
            throw error;
          }
          if (purpose === 'connect') {
            const outcome = await linking.connect(accountId!, profile);
            if (!outcome.ok) return fail(h, purpose, outcome.error, outcome.detail);
            await connections.save(profile.id, profile.tokens);
            return h.redirect(page('/integrations', { connected: 'github' })).unstate(OAUTH_COOKIE);
          }
          const outcome = await linking.login(profile);
          if (!outcome.ok) return fail(h, purpose, outcome.error, outcome.detail, next);
          await connections.save(profile.id, profile.tokens);
          const token = await sessions.issue(outcome.account.id);
          return h
            .redirect(page(next ?? DEFAULT_LANDING, {}))
            .unstate(OAUTH_COOKIE)
            .state(SESSION_COOKIE, token);
        },
      },
    ]);
  },
};
