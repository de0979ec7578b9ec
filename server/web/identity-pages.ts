import type { PublicApiKey } from '../auth/api-keys.ts';
import type { IdentityRecord } from '../store/records.ts';
import { DEFAULT_LANDING } from '../identity/next.ts';
import { html, type Html } from './html.ts';
import { csrfField, type PageOptions } from './layout.ts';
import type { SignedIn } from './session.ts';

/**
 * The identity pages' HTML: sign-in and sign-up forms, the code step, integrations and API keys. Every
 * value goes through the `html` tag (escaped); every form is labelled and works without script.
 */

/** `?next=...` for a link that passes the visitor's destination on; nothing when it is the default. */
export function nextQuery(next: string): string {
  return next === DEFAULT_LANDING ? '' : `?next=${encodeURIComponent(next)}`;
}

/** A failure shown on a page; `role="alert"` and `#detail` are what people (and the tests) read. */
export function errorBox(detail: string, title?: string): Html {
  return html`<div class="error" role="alert">
    ${title ? html`<strong>${title}</strong>` : html``}
    <p id="detail">${detail}</p>
  </div>`;
}

export function notice(text: Html | string): Html {
  return html`<div class="notice" role="status">${text}</div>`;
}

/** `error` and `detail` a redirect put in the query (GitHub sign-in and connect failures), shown as text. */
export function queryBanner(query: Record<string, unknown>): Html {
  const error = typeof query.error === 'string' ? query.error : undefined;
  const detail = typeof query.detail === 'string' ? query.detail : undefined;
  if (!error && !detail) return html``;
  return errorBox(detail ?? '', error ?? 'error');
}

/** A time as people read it (UTC, to the minute), machine-readable in `datetime`. */
export function when(iso: string | null | undefined, empty = 'never'): Html {
  if (!iso) return html`<span class="muted">${empty}</span>`;
  const text = `${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`;
  return html`<time datetime="${iso}">${text}</time>`;
}

const nextField = (next: string) => html`<input type="hidden" name="next" value="${next}" />`;

export function loginPage(next: string, top?: Html): PageOptions {
  return {
    title: 'Sign in',
    section: 'login',
    body: html`${top ?? ''}
      <form method="post" action="/login/email" class="stack">
        ${nextField(next)}
        <label for="login-email">E-mail</label>
        <input id="login-email" type="email" name="email" required autocomplete="email" maxlength="320" />
        <button type="submit">E-mail me a sign-in code</button>
      </form>
      <p><a class="button-link" href="/auth/github/login${nextQuery(next)}">Sign in with GitHub</a></p>
      <p>No account yet? <a href="/signup${nextQuery(next)}">Sign up</a></p>`,
  };
}

export function signupPage(next: string, top?: Html): PageOptions {
  return {
    title: 'Sign up',
    section: 'signup',
    body: html`${top ?? ''}
      <p>Make a Twinbox account with your e-mail address: we mail you a 6-digit code to confirm it.</p>
      <form method="post" action="/signup" class="stack">
        ${nextField(next)}
        <label for="signup-email">E-mail</label>
        <input id="signup-email" type="email" name="email" required autocomplete="email" maxlength="320" />
        <button type="submit">Sign up</button>
      </form>
      <p><a class="button-link" href="/auth/github/login${nextQuery(next)}">Sign up with GitHub</a></p>
      <p>Already have an account? <a href="/login${nextQuery(next)}">Sign in</a></p>`,
  };
}

/**
 * The code step of sign-in (`login`) and of sign-up (`signup`). `resend` posts the address again for a new
 * code (one a minute). The sign-in text does not say whether the address has an account.
 */
export function codePage(flow: 'login' | 'signup', email: string, next: string, top?: Html): PageOptions {
  const verify = flow === 'login' ? '/login/email/verify' : '/signup/verify';
  const resend = flow === 'login' ? '/login/email' : '/signup/resend';
  const sent =
    flow === 'login'
      ? html`<p>
            If <strong>${email}</strong> has a Twinbox account, we mailed it a 6-digit sign-in code. It works
            once, for 10 minutes.
          </p>
          <p class="muted">No account yet? <a href="/signup${nextQuery(next)}">Sign up</a> first.</p>`
      : html`<p>
          We mailed a 6-digit code to <strong>${email}</strong>. Enter it to confirm the address; it works
          once, for 10 minutes.
        </p>`;
  return {
    title: 'Enter your code',
    section: flow,
    body: html`${top ?? ''}${sent}
      <form method="post" action="${verify}" class="stack">
        <input type="hidden" name="email" value="${email}" />
        ${nextField(next)}
        <label for="code">Code</label>
        <input
          id="code"
          name="code"
          inputmode="numeric"
          pattern="[0-9]{6}"
          maxlength="6"
          required
          autocomplete="one-time-code"
        />
        <button type="submit">${flow === 'login' ? 'Sign in' : 'Confirm and sign in'}</button>
      </form>
      <form method="post" action="${resend}">
        <input type="hidden" name="email" value="${email}" />
        <input type="hidden" name="resend" value="1" />
        ${nextField(next)}
        <button type="submit" class="secondary">Send a new code</button>
      </form>`,
  };
}

export function integrationsPage(
  signedIn: SignedIn,
  github: IdentityRecord | undefined,
  query: Record<string, unknown>,
): PageOptions {
  const done =
    query.connected === 'github'
      ? notice(html`GitHub is connected${github ? html` as <strong>@${github.login}</strong>` : html``}.`)
      : query.disconnected === 'github' && !github
        ? notice('GitHub is disconnected, and its token deleted.')
        : html``;
  return {
    title: 'Integrations',
    section: 'integrations',
    signedIn,
    body: html`${queryBanner(query)}${done}
      <h2>GitHub</h2>
      ${
        github
          ? html`<p id="github-status">
                Connected as <strong>@${github.login}</strong> since ${when(github.created_at)}. You can sign
                in with GitHub.
              </p>
              <p id="github-token">
                ${
                  github.github_token
                    ? 'Sandboxes fetch your private repositories with this connection (its token is kept encrypted).'
                    : html`This connection holds no GitHub token, so sandboxes can fetch only public
                        repositories. <a href="/auth/github/connect">Connect GitHub again</a> to let them read
                        private ones.`
                }
              </p>
              <form method="post" action="/integrations/github/disconnect">
                ${csrfField(signedIn)}
                <button type="submit" class="danger">Disconnect GitHub</button>
              </form>`
          : html`<p id="github-status">Not connected.</p>
              <p>Connect your GitHub account to sign in with it.</p>
              <p><a class="button-link" href="/auth/github/connect">Connect GitHub</a></p>`
      }`,
  };
}

export function apiKeysPage(signedIn: SignedIn, keys: PublicApiKey[], top?: Html): PageOptions {
  const rows = keys.map(
    (k) =>
      html`<tr>
        <td>${k.name}</td>
        <td><code>${k.prefix}…</code></td>
        <td>${when(k.created_at)}</td>
        <td>${when(k.last_used_at)}</td>
        <td>${k.revoked_at ? html`revoked ${when(k.revoked_at)}` : html`active`}</td>
        <td>
          ${
            k.revoked_at
              ? html``
              : html`<a href="/settings/api-keys/${encodeURIComponent(k.id)}/revoke" class="danger-link"
                  >Revoke<span class="visually-hidden"> ${k.name}</span></a
                >`
          }
        </td>
      </tr>`,
  );
  const table = keys.length
    ? html`<table>
        <caption class="visually-hidden">
          Your API keys
        </caption>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col">Key</th>
            <th scope="col">Created</th>
            <th scope="col">Last used</th>
            <th scope="col">Status</th>
            <th scope="col"><span class="visually-hidden">Actions</span></th>
          </tr>
        </thead>
        <tbody>
          ${rows}
        </tbody>
      </table>`
    : html`<p class="muted">No API keys yet.</p>`;
  return {
    title: 'API keys',
    section: 'api-keys',
    signedIn,
    scripts: ['copy.js'],
    body: html`${top ?? ''}
      <p>
        API keys let the <code>twinbox</code> CLI, CI jobs and scripts call the Twinbox API as you. Send one
        as <code>Authorization: Bearer &lt;key&gt;</code>, or set it as <code>TWINBOX_API_KEY</code>.
      </p>
      ${table}
      <h2>Create an API key</h2>
      <form method="post" action="/settings/api-keys" class="stack">
        ${csrfField(signedIn)}
        <label for="key-name">Name</label>
        <input id="key-name" name="name" maxlength="100" placeholder="e.g. laptop or CI" />
        <button type="submit">Create API key</button>
      </form>`,
  };
}

/** Shown once, right after creating: the key as selectable text, and a copy button the script turns on. */
export function newKeyNotice(name: string, key: string): Html {
  return html`<div class="notice" role="status">
    <p id="new-key-label">
      Your new API key <strong>${name}</strong>. Copy it now: it is shown only this once.
    </p>
    <p class="key-line">
      <code id="new-key" aria-labelledby="new-key-label">${key}</code>
      <button type="button" class="secondary" data-copy="new-key" data-copied="copy-status" hidden>
        Copy key
      </button>
      <span id="copy-status" aria-live="polite"></span>
    </p>
  </div>`;
}

export function revokedNotice(key: PublicApiKey): Html {
  return notice(
    html`Revoked the key <strong>${key.name}</strong> (<code>${key.prefix}…</code>). Requests that use it are
      refused from now on.`,
  );
}

export function revokeConfirmPage(signedIn: SignedIn, key: PublicApiKey): PageOptions {
  const body = key.revoked_at
    ? html`<p>
          The key <strong>${key.name}</strong> (<code>${key.prefix}…</code>) was revoked
          ${when(key.revoked_at)}.
        </p>
        <p><a href="/settings/api-keys">Back to API keys</a></p>`
    : html`<p>
          Revoke the key <strong>${key.name}</strong> (<code>${key.prefix}…</code>), last used
          ${when(key.last_used_at)}? Anything that uses it (the CLI, CI jobs, scripts) gets 401 from then on.
          This cannot be undone.
        </p>
        <form method="post" action="/settings/api-keys/${encodeURIComponent(key.id)}/revoke">
          ${csrfField(signedIn)}
          <button type="submit" class="danger">Revoke key</button>
          <a href="/settings/api-keys">Cancel</a>
        </form>`;
  return { title: 'Revoke API key', section: 'api-keys', signedIn, body };
}
