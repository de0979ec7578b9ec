import type { Twinbox } from '../../server/twinbox.ts';

/** The host the tests' requests are sent to; a browser on a Twinbox page sends this as its Origin. */
export const HOST = 'twinbox.test';
export const ORIGIN = `http://${HOST}`;

export interface Page {
  status: number;
  headers: Record<string, unknown>;
  body: string;
  location: string | undefined;
  json(): any;
}

export interface BrowserRequest {
  form?: Record<string, string>;
  cookie?: string;
  headers?: Record<string, string>;
}

/**
 * A request as a browser on a Twinbox page makes it: same-origin `Origin` and `Sec-Fetch-Site` on posts,
 * form-encoded fields. `headers` overrides them (an empty value removes one: an attacker's post).
 */
export async function browse(
  tb: Twinbox,
  method: 'GET' | 'POST',
  url: string,
  options: BrowserRequest = {},
): Promise<Page> {
  const headers: Record<string, string> = { host: HOST, accept: 'text/html' };
  if (method === 'POST') {
    headers.origin = ORIGIN;
    headers['sec-fetch-site'] = 'same-origin';
    headers['content-type'] = 'application/x-www-form-urlencoded';
  }
  if (options.cookie) headers.cookie = options.cookie;
  for (const [name, value] of Object.entries(options.headers ?? {})) {
    if (value === '') delete headers[name];
    else headers[name] = value;
  }
  const response = await tb.server.inject({
    method,
    url,
    headers,
    payload: options.form ? new URLSearchParams(options.form).toString() : undefined,
  });
  return {
    status: response.statusCode,
    headers: response.headers,
    body: response.payload,
    location: response.headers.location as string | undefined,
    json: () => JSON.parse(response.payload),
  };
}

/**
 * A signed-in browser session of `accountId`: the cookie a sign-in sets (the route tests' shortcut; the
 * browser test signs in through the pages) and the form token of its pages.
 */
export async function sessionOf(tb: Twinbox, accountId: string) {
  const cookie = `twinbox_session=${await tb.sessions.issue(accountId)}`;
  const page = await browse(tb, 'GET', '/dashboard', { cookie });
  const match = /name="csrf" value="([^"]+)"/.exec(page.body);
  if (!match) throw new Error(`no form token on /dashboard (${page.status}): ${page.body.slice(0, 300)}`);
  const csrf = match[1]!;
  return {
    cookie,
    csrf,
    get: (url: string, headers?: Record<string, string>) => browse(tb, 'GET', url, { cookie, headers }),
    post: (url: string, form: Record<string, string> = {}, headers?: Record<string, string>) =>
      browse(tb, 'POST', url, { cookie, form: { csrf, ...form }, headers }),
  };
}

/** A hostile text: markup, an event handler, quotes and an ampersand. */
export const ATTACK = '<script>alert(1)</script><img src=x onerror="alert(2)">"\'&';
export const ATTACK_ESCAPED =
  '&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=&quot;alert(2)&quot;&gt;&quot;&#39;&amp;';

/** The page holds no markup of the attack: no tag, no handler attribute. */
export function holdsNoMarkup(body: string): boolean {
  return !body.includes('<script>alert') && !body.includes('<img src=x') && !/onerror="alert/.test(body);
}
