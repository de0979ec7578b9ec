import { html, type Html } from './html.ts';
import { CSRF_FIELD, type SignedIn } from './session.ts';

export interface PageOptions {
  title: string;
  body: Html;
  /** The signed-in visitor: the header shows their e-mail and the sign-out button. */
  signedIn?: SignedIn;
  /** Scripts from /assets/ this page needs (its live parts); the page must read well without them. */
  scripts?: string[];
  /** The header link to mark as the current section. */
  section?: 'dashboard' | 'integrations' | 'api-keys' | 'login' | 'signup';
}

/** The hidden form-token field every form of a signed-in page carries. */
export function csrfField(signedIn: SignedIn): Html {
  return html`<input type="hidden" name="${CSRF_FIELD}" value="${signedIn.csrf}" />`;
}

/** A whole page: header navigation, the title, the body. Every value is escaped by `html`. */
export function page(options: PageOptions): string {
  const { title, body, signedIn, scripts = [], section } = options;
  const link = (href: string, label: string, name: PageOptions['section']) =>
    html`<a href="${href}" ${section === name ? html` aria-current="page"` : html``}>${label}</a>`;
  const nav = signedIn
    ? html`${link('/dashboard', 'Sandboxes', 'dashboard')}
        ${link('/integrations', 'Integrations', 'integrations')}
        ${link('/settings/api-keys', 'API keys', 'api-keys')}
        <span class="who">${signedIn.account.email}</span>
        <form method="post" action="/logout" class="inline">
          ${csrfField(signedIn)}<button type="submit">Sign out</button>
        </form>`
    : html`${link('/login', 'Sign in', 'login')} ${link('/signup', 'Sign up', 'signup')}`;
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>${title} · Twinbox</title>
        <link rel="icon" href="/assets/twinbox.svg" type="image/svg+xml" />
        <link rel="stylesheet" href="/assets/twinbox.css" />
        ${scripts.map((s) => html`<script src="/assets/${s}" defer></script>`)}
      </head>
      <body>
        <header class="top">
          <a class="brand" href="${signedIn ? '/dashboard' : '/login'}">Twinbox</a>
          <nav aria-label="Main">${nav}</nav>
        </header>
        <main>
          <h1>${title}</h1>
          ${body}
        </main>
      </body>
    </html> `.text;
}
