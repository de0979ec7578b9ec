import Boom from '@hapi/boom';
import type { Plugin, Request, ResponseToolkit } from '@hapi/hapi';
import type { ApiKeys } from '../auth/api-keys.ts';
import type { Store } from '../store/store.ts';
import type { EmailAuth } from '../identity/email-auth.ts';
import { SESSION_COOKIE } from '../identity/cookies.ts';
import { Html, html } from './html.ts';
import { csrfField, type PageOptions } from './layout.ts';
import { render } from './respond.ts';
import { safeNext, type SignedIn, type WebSessions } from './session.ts';

export interface WebRoutesOptions {
  emailAuth: EmailAuth;
  apiKeys: ApiKeys;
  store: Store;
  web: WebSessions;
}

/**
 * The identity pages: /login, /integrations, /settings/api-keys, /logout. Every value shown is escaped by
 * the `html` template. Forms POST to this server; each POST is checked by `web.checkForm` (same-site
 * origin, and the session's form token once signed in).
 */
export const webRoutes: Plugin<WebRoutesOptions> = {
  name: 'twinbox-web',
  register(server, { emailAuth, apiKeys, store, web }) {
    const show = (h: ResponseToolkit, options: PageOptions, code = 200) => render(h, options, code);
    const banner = (query: Record<string, unknown>) => {
      const error = typeof query.error === 'string' ? query.error : undefined;
      const detail = typeof query.detail === 'string' ? query.detail : undefined;
      if (!error && !detail) return html``;
      return html`<div class="error" role="alert">
        <strong>${error ?? 'error'}</strong>
        <p id="detail">${detail ?? ''}</p>
      </div>`;
    };
    const form = (request: Request) => (request.payload ?? {}) as Record<string, unknown>;
    const failure = (error: unknown) => {
      if (Boom.isBoom(error) && error.output.statusCode < 500) return error.message;
      throw error;
    };
    const nextField = (next: string) => html`<input type="hidden" name="next" value="${next}" />`;
    const loginForm = (next: string, message?: Html) =>
      html`${message ?? ''}
        <form method="post" action="/login/email">
          ${nextField(next)}
          <label>E-mail <input type="email" name="email" required autocomplete="email" /></label>
          <button type="submit">Send me a code</button>
        </form>
        <p><a href="/auth/github/login">Sign in with GitHub</a></p>`;
    const codeForm = (email: string, next: string, message?: Html) =>
      html`${message ?? ''}
        <p>We sent a 6-digit code to <strong>${email}</strong> if it has an account.</p>
        <form method="post" action="/login/email/verify">
          <input type="hidden" name="email" value="${email}" />
          ${nextField(next)}
          <label
            >Code
            <input name="code" inputmode="numeric" pattern="[0-9]{6}" required autocomplete="one-time-code"
          /></label>
          <button type="submit">Sign in</button>
        </form>`;
    const errorBox = (text: string) => html`<div class="error" role="alert"><p id="detail">${text}</p></div>`;
    const options = { auth: false as const, plugins: { web: true } };

    server.route([
      {
        method: 'GET',
        path: '/login',
        options,
        handler: (request, h) => {
          const next = safeNext(request.query.next);
          return show(h, {
            title: 'Sign in',
            section: 'login',
            body: html`${banner(request.query)}${loginForm(next)}`,
          });
        },
      },
      {
        method: 'POST',
        path: '/login/email',
        options,
        async handler(request, h) {
          web.checkForm(request);
          const email = String(form(request).email ?? '');
          const next = safeNext(form(request).next);
          try {
            await emailAuth.requestLogin(email, request.info.remoteAddress);
          } catch (error) {
            return show(h, { title: 'Sign in', body: loginForm(next, errorBox(failure(error))) }, 400);
          }
          return show(h, { title: 'Enter your code', body: codeForm(email.trim(), next) });
        },
      },
      {
        method: 'POST',
        path: '/login/email/verify',
        options,
        async handler(request, h) {
          web.checkForm(request);
          const { email, code } = form(request);
          const next = safeNext(form(request).next);
          try {
            const result = await emailAuth.verifyLogin(
              String(email ?? ''),
              String(code ?? ''),
              request.info.remoteAddress,
            );
            return h.redirect(next).state(SESSION_COOKIE, result.token);
          } catch (error) {
            const body = codeForm(String(email ?? ''), next, errorBox(failure(error)));
            return show(h, { title: 'Enter your code', body }, 400);
          }
        },
      },
      {
        method: 'POST',
        path: '/logout',
        options,
        async handler(request, h) {
          const signedIn = await web.current(request);
          if (signedIn) web.checkForm(request, signedIn);
          return h.redirect('/login').unstate(SESSION_COOKIE);
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
          const query = request.query as Record<string, unknown>;
          const notice =
            query.connected === 'github' || query.signed_in === 'github'
              ? html`<div class="notice">GitHub: done.</div>`
              : html``;
          return show(h, {
            title: 'Integrations',
            section: 'integrations',
            signedIn,
            body: html`${banner(query)}${notice}
              <h2>GitHub</h2>
              ${
                github
                  ? html`<p>Connected as <strong>@${github.login}</strong>.</p>`
                  : html`<p>Not connected. <a href="/auth/github/connect">Connect GitHub</a></p>`
              }`,
          });
        },
      },
      {
        method: 'GET',
        path: '/settings/api-keys',
        options,
        async handler(request, h) {
          const signedIn = await web.require(request, h);
          if (!('account' in signedIn)) return signedIn;
          return show(h, keysPage(signedIn, await keyRows(signedIn)));
        },
      },
      {
        method: 'POST',
        path: '/settings/api-keys',
        options,
        async handler(request, h) {
          const signedIn = await web.require(request, h);
          if (!('account' in signedIn)) return signedIn;
          web.checkForm(request, signedIn);
          const name =
            String(form(request).name ?? '')
              .trim()
              .slice(0, 100) || 'default';
          const { key } = await apiKeys.issue(signedIn.account.id, name);
          const shown = html`<div class="notice">
            <p>Your new key (shown only now, copy it):</p>
            <p><code id="new-key">${key}</code></p>
          </div>`;
          return show(h, keysPage(signedIn, await keyRows(signedIn), shown), 201);
        },
      },
      {
        method: 'POST',
        path: '/settings/api-keys/{id}/revoke',
        options,
        async handler(request, h) {
          const signedIn = await web.require(request, h);
          if (!('account' in signedIn)) return signedIn;
          web.checkForm(request, signedIn);
          await apiKeys.revoke(signedIn.account.id, String(request.params.id));
          return h.redirect('/settings/api-keys');
        },
      },
    ]);

    async function keyRows(signedIn: SignedIn) {
      const keys = await apiKeys.list(signedIn.account.id);
      return keys.map(
        (k) =>
          html`<li>
            <strong>${k.name}</strong> <code>${k.prefix}…</code> created ${k.created_at}
            ${
              k.revoked_at
                ? html`(revoked)`
                : html`<form
                    method="post"
                    action="/settings/api-keys/${encodeURIComponent(k.id)}/revoke"
                    class="inline"
                  >
                    ${csrfField(signedIn)}<button type="submit" class="danger">Revoke</button>
                  </form>`
            }
          </li>`,
      );
    }

    function keysPage(signedIn: SignedIn, rows: Html[], top?: Html): PageOptions {
      return {
        title: 'API keys',
        section: 'api-keys',
        signedIn,
        body: html`${top ?? ''}
          <ul>
            ${rows}
          </ul>
          <form method="post" action="/settings/api-keys">
            ${csrfField(signedIn)}
            <label>Name <input name="name" maxlength="100" /></label>
            <button type="submit">Create API key</button>
          </form>`,
      };
    }
  },
};
