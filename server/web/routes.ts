import Boom from '@hapi/boom';
import type { Plugin, Request, ResponseToolkit } from '@hapi/hapi';
import type { ApiKeys } from '../auth/api-keys.ts';
import type { Sessions } from '../auth/sessions.ts';
import type { Store } from '../store/store.ts';
import type { AccountRecord } from '../store/records.ts';
import type { EmailAuth } from '../identity/email-auth.ts';
import { SESSION_COOKIE, cookieAccount } from '../identity/cookies.ts';
import { Html, html, page } from './html.ts';

export interface WebRoutesOptions {
  emailAuth: EmailAuth;
  apiKeys: ApiKeys;
  sessions: Sessions;
  store: Store;
  urls: () => { publicUrl: string; webUrl: string };
}

/** No script at all, and nothing from elsewhere: the pages are forms and text. */
const SECURITY_HEADERS = {
  'Content-Security-Policy':
    "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'Cache-Control': 'no-store',
};

/**
 * The small server-rendered web app: /login, /integrations, /settings/api-keys. Every value shown is
 * escaped by the `html` template; the pages carry no script. Forms POST to this server with the
 * session cookie (SameSite=Lax keeps it off cross-site POSTs; the Origin check is a second guard).
 */
export const webRoutes: Plugin<WebRoutesOptions> = {
  name: 'twinbox-web',
  register(server, { emailAuth, apiKeys, sessions, store, urls }) {
    const render = (h: ResponseToolkit, title: string, body: Html, code = 200) => {
      const response = h.response(page(title, body)).type('text/html; charset=utf-8').code(code);
      for (const [name, value] of Object.entries(SECURITY_HEADERS)) response.header(name, value);
      return response;
    };
    const banner = (query: Record<string, unknown>) => {
      const error = typeof query.error === 'string' ? query.error : undefined;
      const detail = typeof query.detail === 'string' ? query.detail : undefined;
      if (!error && !detail) return html``;
      return html`<div class="error" role="alert">
        <strong>${error ?? 'error'}</strong>
        <p id="detail">${detail ?? ''}</p>
      </div>`;
    };
    const sameOrigin = (request: Request) => {
      const origin = request.headers.origin;
      if (origin && origin !== new URL(urls().publicUrl).origin)
        throw Boom.forbidden('Cross-origin form post refused.');
    };
    const form = (request: Request) => (request.payload ?? {}) as Record<string, unknown>;
    const signedIn = async (request: Request) => cookieAccount(request, sessions, store);
    const failure = (error: unknown) => {
      if (Boom.isBoom(error) && error.output.statusCode < 500) return error.message;
      throw error;
    };
    const loginForm = (message?: Html) =>
      html`${message ?? ''}
        <form method="post" action="/login/email">
          <label>E-mail <input type="email" name="email" required autocomplete="email" /></label>
          <button type="submit">Send me a code</button>
        </form>
        <p><a href="/auth/github/login">Sign in with GitHub</a></p>`;
    const codeForm = (email: string, message?: Html) =>
      html`${message ?? ''}
        <p>We sent a 6-digit code to <strong>${email}</strong> if it has an account.</p>
        <form method="post" action="/login/email/verify">
          <input type="hidden" name="email" value="${email}" />
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
        handler: (request, h) => render(h, 'Sign in', html`${banner(request.query)}${loginForm()}`),
      },
      {
        method: 'POST',
        path: '/login/email',
        options,
        async handler(request, h) {
          sameOrigin(request);
          const email = String(form(request).email ?? '');
          try {
            await emailAuth.requestLogin(email, request.info.remoteAddress);
          } catch (error) {
            return render(h, 'Sign in', loginForm(errorBox(failure(error))), 400);
          }
          return render(h, 'Enter your code', codeForm(email.trim()));
        },
      },
      {
        method: 'POST',
        path: '/login/email/verify',
        options,
        async handler(request, h) {
          sameOrigin(request);
          const { email, code } = form(request);
          try {
            const result = await emailAuth.verifyLogin(
              String(email ?? ''),
              String(code ?? ''),
              request.info.remoteAddress,
            );
            return h.redirect('/integrations').state(SESSION_COOKIE, result.token);
          } catch (error) {
            return render(h, 'Enter your code', codeForm(String(email ?? ''), errorBox(failure(error))), 400);
          }
        },
      },
      {
        method: 'GET',
        path: '/integrations',
        options,
        async handler(request, h) {
          const account = await signedIn(request);
          if (!account) return h.redirect('/login');
          const github = (await store.identities.findBy('account_id', account.id)).find(
            (i) => i.provider === 'github',
          );
          const query = request.query as Record<string, unknown>;
          const notice =
            query.connected === 'github' || query.signed_in === 'github'
              ? html`<div class="notice">GitHub: done.</div>`
              : html``;
          return render(
            h,
            'Integrations',
            html`${banner(query)}${notice}${whoAmI(account)}
              <h2>GitHub</h2>
              ${
                github
                  ? html`<p>Connected as <strong>@${github.login}</strong>.</p>`
                  : html`<p>Not connected. <a href="/auth/github/connect">Connect GitHub</a></p>`
              }
              <p><a href="/settings/api-keys">API keys</a></p>`,
          );
        },
      },
      {
        method: 'GET',
        path: '/settings/api-keys',
        options,
        async handler(request, h) {
          const account = await signedIn(request);
          if (!account) return h.redirect('/login');
          return render(h, 'API keys', await keysPage(account));
        },
      },
      {
        method: 'POST',
        path: '/settings/api-keys',
        options,
        async handler(request, h) {
          sameOrigin(request);
          const account = await signedIn(request);
          if (!account) return h.redirect('/login');
          const name =
            String(form(request).name ?? '')
              .trim()
              .slice(0, 100) || 'default';
          const { key } = await apiKeys.issue(account.id, name);
          const shown = html`<div class="notice">
            <p>Your new key (shown only now, copy it):</p>
            <p><code id="new-key">${key}</code></p>
          </div>`;
          return render(h, 'API keys', await keysPage(account, shown), 201);
        },
      },
      {
        method: 'POST',
        path: '/settings/api-keys/{id}/revoke',
        options,
        async handler(request, h) {
          sameOrigin(request);
          const account = await signedIn(request);
          if (!account) return h.redirect('/login');
          await apiKeys.revoke(account.id, String(request.params.id));
          return h.redirect('/settings/api-keys');
        },
      },
    ]);

    function whoAmI(account: AccountRecord) {
      return html`<p>Signed in as <strong>${account.email}</strong>.</p>`;
    }

    async function keysPage(account: AccountRecord, top?: Html) {
      const keys = await apiKeys.list(account.id);
      const rows = keys.map(
        (k) =>
          html`<li>
            <strong>${k.name}</strong> <code>${k.prefix}…</code> created ${k.created_at}
            ${
              k.revoked_at
                ? html`(revoked)`
                : html`<form
                    method="post"
                    action="/settings/api-keys/${encodeURIComponent(k.id)}/revoke"
                    style="display:inline"
                  >
                    <button type="submit">Revoke</button>
                  </form>`
            }
          </li>`,
      );
      return html`${top ?? ''}${whoAmI(account)}
        <ul>
          ${rows}
        </ul>
        <form method="post" action="/settings/api-keys">
          <label>Name <input name="name" maxlength="100" /></label>
          <button type="submit">Create API key</button>
        </form>
        <p><a href="/integrations">Integrations</a></p>`;
    }
  },
};
