import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Request, ResponseObject, ResponseToolkit } from '@hapi/hapi';
import type { Sessions } from '../auth/sessions.ts';
import type { Store } from '../store/store.ts';
import type { AccountRecord } from '../store/records.ts';
import { cookieAccount, SESSION_COOKIE } from '../identity/cookies.ts';
import { forbidden } from '../errors.ts';
import { safeNext } from '../identity/next.ts';

/** The hidden field every signed-in form carries (see `WebSessions.checkForm`). */
export const CSRF_FIELD = 'csrf';

/** A page request made by someone signed in: their account and the form token of their session. */
export interface SignedIn {
  account: AccountRecord;
  csrf: string;
}

/**
 * The browser side of sessions, for the pages. CSRF defence, in layers (docs/web.md):
 * - the session cookie is HttpOnly and SameSite=Lax, so a cross-site POST does not carry it;
 * - every form of a signed-in page carries a token bound to the session (an HMAC of the session token under
 *   a server key), checked in constant time;
 * - the `Origin` (and `Sec-Fetch-Site`) of every form post must be this site: Twinbox's public URL or the host
 *   the request was sent to; `Origin: null` and same-site (a sandbox app's sibling host) are refused. Pages send `Referrer-Policy: same-origin`, so browsers send a real `Origin`.
 */
export class WebSessions {
  constructor(
    private readonly sessions: Sessions,
    private readonly store: Store,
    private readonly csrfKey: Uint8Array,
    private readonly publicUrl: () => string,
  ) {}

  /** The signed-in, verified account of this browser request, with its form token; undefined when signed out. */
  async current(request: Request): Promise<SignedIn | undefined> {
    const account = await cookieAccount(request, this.sessions, this.store);
    const token = this.sessionToken(request);
    return account && token ? { account, csrf: this.tokenFor(token) } : undefined;
  }

  /** Revokes this browser's session on every Twinbox process (the caller clears the cookie). */
  async signOut(request: Request): Promise<void> {
    const token = this.sessionToken(request);
    if (token) await this.sessions.revoke(token);
  }

  /**
   * The signed-in account, or a redirect to the sign-in page that brings the visitor back here afterwards.
   * Use: `const who = await web.require(request, h); if (!('account' in who)) return who;`
   */
  async require(request: Request, h: ResponseToolkit): Promise<SignedIn | ResponseObject> {
    const signedIn = await this.current(request);
    if (signedIn) return signedIn;
    return h.redirect(`/login?next=${encodeURIComponent(safeNext(requestedPath(request)))}`);
  }

  /**
   * Refuses (403 with `detail`) a form post from another site, and, when `signedIn` is given, one without its
   * session's form token. Call first thing in every POST handler of a page.
   */
  checkForm(request: Request, signedIn?: SignedIn): void {
    this.checkOrigin(request);
    if (!signedIn) return;
    const sent = (request.payload as Record<string, unknown> | null)?.[CSRF_FIELD];
    if (typeof sent !== 'string' || !sameText(sent, signedIn.csrf)) {
      throw formRefused(
        sent === undefined || sent === ''
          ? 'This form has no form token, so it did not come from a Twinbox page. Reload the page and send it again.'
          : 'This form has expired or did not come from a Twinbox page (its form token is not this session’s). Reload the page and send it again.',
      );
    }
  }

  /**
   * The whole check of a signed-in form post, in the order that tells a visitor the truth: another site's post
   * is a 403 even when its cookie did not come along; a signed-out visitor is sent to sign in (and back to the
   * page at `back`, a GET page, since a POST cannot be replayed); then the form token.
   * Use: `const who = await web.requireForm(request, h, '/page'); if (!('account' in who)) return who;`
   */
  async requireForm(
    request: Request,
    h: ResponseToolkit,
    back = request.path,
  ): Promise<SignedIn | ResponseObject> {
    this.checkOrigin(request);
    const signedIn = await this.current(request);
    if (!signedIn) return h.redirect(`/login?next=${encodeURIComponent(safeNext(back))}`);
    this.checkForm(request, signedIn);
    return signedIn;
  }

  /**
   * Only this site may post: a browser says where a post comes from in `Sec-Fetch-Site` and `Origin`.
   * `same-site` is refused too: sandbox apps run other people's code on sibling host names.
   * A request with neither header is not from a modern browser (curl, a script): the form token still applies.
   */
  private checkOrigin(request: Request): void {
    const origin = request.headers.origin as string | undefined;
    if (origin !== undefined && !this.allowedOrigins(request).has(origin)) {
      const from =
        origin === 'null' ? 'a page that hides its origin (Origin: null)' : `Origin: ${origin.slice(0, 200)}`;
      throw formRefused(
        `This form was sent from another site (${from}), so Twinbox refused it. Open the page on Twinbox and send it from there.`,
      );
    }
    const site = request.headers['sec-fetch-site'];
    if (site === 'cross-site' || site === 'same-site') {
      throw formRefused(
        `This form was sent from another site (Sec-Fetch-Site: ${site}), so Twinbox refused it. Open the page on Twinbox and send it from there.`,
      );
    }
  }

  /** Twinbox's public URL, and the host this request was sent to (a proxy or a local name such as localhost). */
  private allowedOrigins(request: Request): Set<string> {
    const allowed = new Set<string>([new URL(this.publicUrl()).origin]);
    const host = request.headers.host;
    // Not `request.url`: hapi builds it from the Host header and throws on a malformed one.
    if (host) allowed.add(`${request.server.info.protocol}://${host}`);
    return allowed;
  }

  private sessionToken(request: Request): string | undefined {
    const token = (request.state as Record<string, unknown> | null)?.[SESSION_COOKIE];
    return typeof token === 'string' && token !== '' ? token : undefined;
  }

  private tokenFor(sessionToken: string): string {
    return createHmac('sha256', this.csrfKey).update(`csrf\0${sessionToken}`).digest('base64url');
  }
}

/**
 * The path and query the browser asked for, as sent. Not `request.url`, which hapi builds with the Host
 * header and which throws when that header is malformed.
 */
function requestedPath(request: Request): string {
  return request.raw.req.url ?? request.path;
}

function sameText(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

const formRefused = (message: string) => forbidden(message, 'form_refused');

/** Re-exported: the pages and the GitHub sign-in (server/identity/github/) share one rule. */
export { safeNext } from '../identity/next.ts';
