import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Request, ResponseObject, ResponseToolkit } from '@hapi/hapi';
import type { Sessions } from '../auth/sessions.ts';
import type { Store } from '../store/store.ts';
import type { AccountRecord } from '../store/records.ts';
import { cookieAccount, SESSION_COOKIE } from '../identity/cookies.ts';
import { forbidden } from '../errors.ts';

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
 *   the request was sent to. Pages send `Referrer-Policy: same-origin`, so browsers send a real `Origin`.
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

  /**
   * The signed-in account, or a redirect to the sign-in page that brings the visitor back here afterwards.
   * Use: `const who = await web.require(request, h); if (!('account' in who)) return who;`
   */
  async require(request: Request, h: ResponseToolkit): Promise<SignedIn | ResponseObject> {
    const signedIn = await this.current(request);
    if (signedIn) return signedIn;
    return h.redirect(`/login?next=${encodeURIComponent(request.url.pathname + request.url.search)}`);
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
        'This form has expired or did not come from a Twinbox page. Reload the page and try again.',
      );
    }
  }

  private checkOrigin(request: Request): void {
    const site = request.headers['sec-fetch-site'];
    if (site === 'cross-site') throw formRefused('Cross-origin form post refused.');
    const origin = request.headers.origin as string | undefined;
    if (origin === undefined) return;
    const allowed = new Set<string>([new URL(this.publicUrl()).origin]);
    const host = request.headers.host;
    if (host) allowed.add(`${request.url.protocol}//${host}`);
    if (!allowed.has(origin)) throw formRefused('Cross-origin form post refused.');
  }

  private sessionToken(request: Request): string | undefined {
    const token = (request.state as Record<string, unknown> | null)?.[SESSION_COOKIE];
    return typeof token === 'string' && token !== '' ? token : undefined;
  }

  private tokenFor(sessionToken: string): string {
    return createHmac('sha256', this.csrfKey).update(`csrf\0${sessionToken}`).digest('base64url');
  }
}

function sameText(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
}

const formRefused = (message: string) => forbidden(message, 'form_refused');

/**
 * Where to go after signing in: a path on this site only (`/dashboard/...`), never another origin
 * (`//evil.example`, `https://...`, `/\evil`), so `next` cannot be used to send someone elsewhere.
 */
export function safeNext(next: unknown, fallback = '/dashboard'): string {
  if (typeof next !== 'string' || next.length > 2000) return fallback;
  if (!next.startsWith('/') || next.startsWith('//') || next.includes('\\')) return fallback;
  if (/[\u0000-\u001f]/.test(next)) return fallback;
  return next;
}
