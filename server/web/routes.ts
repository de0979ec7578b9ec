import Boom from '@hapi/boom';
import type { Plugin, Request, ResponseToolkit } from '@hapi/hapi';
import type { ApiKeys } from '../auth/api-keys.ts';
import type { Store } from '../store/store.ts';
import type { EmailAuth } from '../identity/email-auth.ts';
import type { GitHubConnections } from '../identity/github/connections.ts';
import { SESSION_COOKIE } from '../identity/cookies.ts';
import { notFound } from '../errors.ts';
import type { Html } from './html.ts';
import type { PageOptions } from './layout.ts';
import { render } from './respond.ts';
import { safeNext, type SignedIn, type WebSessions } from './session.ts';
import {
  apiKeysPage,
  codePage,
  errorBox,
  integrationsPage,
  loginPage,
  newKeyNotice,
  notice,
  queryBanner,
  revokeConfirmPage,
  revokedNotice,
  signupPage,
} from './identity-pages.ts';

export interface WebRoutesOptions {
  emailAuth: EmailAuth;
  apiKeys: ApiKeys;
  store: Store;
  web: WebSessions;
  /** The GitHub connections' tokens: the disconnect button drops the connection and its token. */
  githubConnections: GitHubConnections;
}

/** A text field of a posted form; anything else (absent, repeated, not text) is empty. */
function field(request: Request, name: string): string {
  const value = (request.payload as Record<string, unknown> | null)?.[name];
  return typeof value === 'string' ? value : '';
}

/** A refusal of the identity service (bad address, wrong code, 409, 429) shown on the page it came from. */
function refusal(error: unknown): { status: number; detail: string } {
  if (Boom.isBoom(error) && error.output.statusCode < 500) {
    return { status: error.output.statusCode, detail: error.message };
  }
  throw error;
}

/**
 * The identity pages: sign up, sign in (e-mail code; GitHub links to /auth/github/login), sign out,
 * integrations and API keys. Handlers are thin: EmailAuth and ApiKeys do the work, identity-pages.ts
 * the HTML. Every POST goes through `web.checkForm`/`web.requireForm` first (docs/web.md, "Security of the
 * pages"); a successful form post answers 303 to a GET page, so a reload does not post again.
 */
export const webRoutes: Plugin<WebRoutesOptions> = {
  name: 'twinbox-web',
  register(server, { emailAuth, apiKeys, store, web, githubConnections }) {
    const show = (h: ResponseToolkit, options: PageOptions, code = 200) => render(h, options, code);
    const options = { auth: false as const, plugins: { web: true } };
    const ip = (request: Request) => request.info.remoteAddress;
    const signIn = (h: ResponseToolkit, token: string, next: string) =>
      h.redirect(next).code(303).state(SESSION_COOKIE, token);
    /** Someone already signed in who opens /login or /signup goes where they were headed. */
    const alreadyIn = async (request: Request, h: ResponseToolkit) => {
      const query = request.query as Record<string, unknown>;
      if (query.error !== undefined || query.detail !== undefined) return undefined;
      return (await web.current(request)) ? h.redirect(safeNext(query.next)) : undefined;
    };

    /**
     * Sending a code (sign-in, or a new sign-up code): the code page (with `sent` above it), or, when
     * refused, the page `refused` makes with why.
     */
    const sendStep = async (
      request: Request,
      h: ResponseToolkit,
      flow: 'login' | 'signup',
      send: (email: string) => Promise<unknown>,
      refused: (email: string, next: string, why: Html) => PageOptions,
      sent?: Html,
    ) => {
      web.checkForm(request);
      const email = field(request, 'email').trim();
      const next = safeNext(field(request, 'next'));
      try {
        await send(email);
      } catch (error) {
        const { status, detail } = refusal(error);
        return show(h, refused(email, next, errorBox(detail)), status);
      }
      return show(h, codePage(flow, email, next, sent));
    };

    /** The code step of sign-in and of sign-up: signed in and on to `next`, or the code page again with why. */
    const codeStep = async (
      request: Request,
      h: ResponseToolkit,
      flow: 'login' | 'signup',
      verify: (email: string, code: string) => Promise<{ token: string }>,
    ) => {
      web.checkForm(request);
      const email = field(request, 'email');
      const next = safeNext(field(request, 'next'));
      try {
        const result = await verify(email, field(request, 'code').trim());
        return signIn(h, result.token, next);
      } catch (error) {
        const { status, detail } = refusal(error);
        return show(h, codePage(flow, email, next, errorBox(detail)), status);
      }
    };

    server.route([
      {
        method: 'GET',
        path: '/login',
        options,
        async handler(request, h) {
          const redirect = await alreadyIn(request, h);
          if (redirect) return redirect;
          const query = request.query as Record<string, unknown>;
          const top = query.signed_out === '1' ? notice('You are signed out.') : queryBanner(query);
          return show(h, loginPage(safeNext(query.next), top));
        },
      },
      {
        method: 'POST',
        path: '/login/email',
        options,
        handler: (request, h) =>
          sendStep(
            request,
            h,
            'login',
            (email) => emailAuth.requestLogin(email, ip(request)),
            // A resend from the code page stays on the code page; a first request goes back to the form.
            (email, next, why) =>
              field(request, 'resend') === '1' ? codePage('login', email, next, why) : loginPage(next, why),
          ),
      },
      {
        method: 'POST',
        path: '/login/email/verify',
        options,
        handler: (request, h) =>
          codeStep(request, h, 'login', (email, code) => emailAuth.verifyLogin(email, code, ip(request))),
      },
      {
        method: 'GET',
        path: '/signup',
        options,
        async handler(request, h) {
          const redirect = await alreadyIn(request, h);
          if (redirect) return redirect;
          const query = request.query as Record<string, unknown>;
          return show(h, signupPage(safeNext(query.next), queryBanner(query)));
        },
      },
      {
        method: 'POST',
        path: '/signup',
        options,
        async handler(request, h) {
          web.checkForm(request);
          const email = field(request, 'email').trim();
          const next = safeNext(field(request, 'next'));
          try {
            const account = await emailAuth.signup(email, ip(request));
            return show(h, codePage('signup', account.email, next));
          } catch (error) {
            const { status, detail } = refusal(error);
            // The spec's 409 text as is; the address is taken, so the way on is to sign in.
            const help =
              status === 409 ? errorBox(detail, 'This e-mail already has an account') : errorBox(detail);
            return show(h, signupPage(next, help), status);
          }
        },
      },
      {
        method: 'POST',
        path: '/signup/resend',
        options,
        handler: (request, h) =>
          sendStep(
            request,
            h,
            'signup',
            (email) => emailAuth.requestVerification(email, ip(request)),
            (email, next, why) => codePage('signup', email, next, why),
            notice('We mailed you a new code.'),
          ),
      },
      {
        method: 'POST',
        path: '/signup/verify',
        options,
        handler: (request, h) =>
          codeStep(request, h, 'signup', (email, code) => emailAuth.verify(email, code, ip(request))),
      },
      {
        method: 'POST',
        path: '/logout',
        options,
        async handler(request, h) {
          const signedIn = await web.current(request);
          web.checkForm(request, signedIn);
          await web.signOut(request);
          return h.redirect('/login?signed_out=1').code(303).unstate(SESSION_COOKIE);
        },
      },
      {
        method: 'GET',
        path: '/integrations',
        options,
        async handler(request, h) {
          const signedIn = await web.require(request, h);
          if (!('account' in signedIn)) return signedIn;
          const github = (await store.identities.findBy('account_id', signedIn.account.id)).find(
            (i) => i.provider === 'github',
          );
          return show(h, integrationsPage(signedIn, github, request.query as Record<string, unknown>));
        },
      },
      {
        method: 'POST',
        path: '/integrations/github/disconnect',
        options,
        async handler(request, h) {
          const signedIn = await web.requireForm(request, h, '/integrations');
          if (!('account' in signedIn)) return signedIn;
          await githubConnections.disconnect(signedIn.account.id);
          return h.redirect('/integrations?disconnected=github').code(303);
        },
      },
      {
        method: 'GET',
        path: '/settings/api-keys',
        options,
        async handler(request, h) {
          const signedIn = await web.require(request, h);
          if (!('account' in signedIn)) return signedIn;
          const keys = await apiKeys.list(signedIn.account.id);
          const revokedId = (request.query as Record<string, unknown>).revoked;
          const revoked = keys.find((k) => k.id === revokedId && k.revoked_at);
          return show(h, apiKeysPage(signedIn, keys, revoked ? revokedNotice(revoked) : undefined));
        },
      },
      {
        method: 'POST',
        path: '/settings/api-keys',
        options,
        async handler(request, h) {
          const signedIn = await web.requireForm(request, h);
          if (!('account' in signedIn)) return signedIn;
          const name = field(request, 'name').trim().slice(0, 100) || 'default';
          const { key } = await apiKeys.issue(signedIn.account.id, name);
          const keys = await apiKeys.list(signedIn.account.id);
          // Answered here, not after a redirect: the key exists in plain text only in this response.
          return show(h, apiKeysPage(signedIn, keys, newKeyNotice(name, key)), 201);
        },
      },
      {
        method: 'GET',
        path: '/settings/api-keys/{id}/revoke',
        options,
        async handler(request, h) {
          const signedIn = await web.require(request, h);
          if (!('account' in signedIn)) return signedIn;
          const key = await ownKey(signedIn, String(request.params.id));
          return show(h, revokeConfirmPage(signedIn, key));
        },
      },
      {
        method: 'POST',
        path: '/settings/api-keys/{id}/revoke',
        options,
        async handler(request, h) {
          const id = String(request.params.id);
          const signedIn = await web.requireForm(
            request,
            h,
            `/settings/api-keys/${encodeURIComponent(id)}/revoke`,
          );
          if (!('account' in signedIn)) return signedIn;
          if (!(await apiKeys.revoke(signedIn.account.id, id))) throw noSuchKey();
          return h.redirect(`/settings/api-keys?revoked=${encodeURIComponent(id)}`).code(303);
        },
      },
    ]);

    /** One of the signed-in account's keys; another account's key is as unknown as a made-up id (404). */
    async function ownKey(signedIn: SignedIn, id: string) {
      const key = (await apiKeys.list(signedIn.account.id)).find((k) => k.id === id);
      if (!key) throw noSuchKey();
      return key;
    }
  },
};

const noSuchKey = () => notFound('You have no API key with this id.');
