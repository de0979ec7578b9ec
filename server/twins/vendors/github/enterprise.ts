/**
 * The twin laid out as GitHub Enterprise Server is: the REST API under `/api/v3` and GraphQL at
 * `/api/graphql`, beside api.github.com's layout at the root. Clients configured for an Enterprise host
 * (Probot's `GHE_HOST`, Octokit's `baseUrl: https://<host>/api/v3`, octokit.rb's `api_endpoint`) then
 * work against the twin unchanged. A request under `/api/v3` is answered as its path without the prefix
 * is, and the API URLs in its answer name `/api/v3` too, as a GHES instance writes them; web URLs
 * (`html_url`, codeload) stay at the host's root, where GHES keeps them.
 */

import { bareObject } from '../../runtime/safe-json.ts';

const REST_PREFIX = '/api/v3';
const GRAPHQL_PATH = '/api/graphql';

/** First path segments of GitHub's REST API (github/rest-api-description); everything else is web. */
const API_ROOTS = new Set([
  'app',
  'app-manifests',
  'applications',
  'apps',
  'assignments',
  'authorizations',
  'classrooms',
  'codes_of_conduct',
  'emojis',
  'enterprises',
  'events',
  'feeds',
  'gists',
  'gitignore',
  'installation',
  'issues',
  'licenses',
  'markdown',
  'marketplace_listing',
  'meta',
  'networks',
  'notifications',
  'octocat',
  'organizations',
  'orgs',
  'projects',
  'rate_limit',
  'repos',
  'repositories',
  'search',
  'teams',
  'user',
  'users',
  'versions',
  'zen',
]);

/** Keys whose URL is a page for people, never the API, even where its path looks like one (`/apps/x`). */
const WEB_KEYS = /^(html_url|external_url|blog|avatar_url)$|_html_url$/;

/** The path a request is answered as: without `/api/v3` (`/api/graphql` is `/graphql`); else undefined. */
export function enterprisePath(pathname: string): string | undefined {
  if (pathname === REST_PREFIX) return '/';
  if (pathname.startsWith(`${REST_PREFIX}/`)) return pathname.slice(REST_PREFIX.length);
  if (pathname === GRAPHQL_PATH) return '/graphql';
  return undefined;
}

/** `request` as its root-layout equivalent, when it came in under the Enterprise layout. */
export async function rootRequest(request: Request): Promise<Request | undefined> {
  const url = new URL(request.url);
  const path = enterprisePath(url.pathname);
  if (path === undefined) return undefined;
  url.pathname = path;
  const body = ['GET', 'HEAD'].includes(request.method) ? undefined : await request.arrayBuffer();
  return new Request(url, { method: request.method, headers: request.headers, body, redirect: 'manual' });
}

/**
 * The answer with its API URLs under `/api/v3`: JSON string values, `Link` and `Location`. `origins`
 * are the origins the twin writes URLs with (its base URL and the request's own).
 */
export async function enterpriseResponse(response: Response, origins: string[]): Promise<Response> {
  const rewrite = (value: string): string => {
    for (const origin of origins) {
      if (!value.startsWith(`${origin}/`)) continue;
      const rest = value.slice(origin.length);
      const root = /^\/([^/?#{]+)/.exec(rest)?.[1];
      if (root && API_ROOTS.has(root)) return `${origin}${REST_PREFIX}${rest}`;
    }
    return value;
  };
  const headers = new Headers(response.headers);
  const link = headers.get('link');
  if (link)
    headers.set(
      'link',
      link.replace(/<([^>]*)>/g, (_m, url: string) => `<${rewrite(url)}>`),
    );
  const location = headers.get('location');
  if (location) headers.set('location', rewrite(location));
  if (!/json/i.test(headers.get('content-type') ?? '')) {
    return new Response(response.body, { status: response.status, statusText: response.statusText, headers });
  }
  const text = await response.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return new Response(text, { status: response.status, headers });
  }
  headers.delete('content-length');
  return new Response(JSON.stringify(rewriteUrls(body, rewrite)), { status: response.status, headers });
}

function rewriteUrls(node: unknown, rewrite: (value: string) => string, key = ''): unknown {
  if (typeof node === 'string') return WEB_KEYS.test(key) ? node : rewrite(node);
  if (Array.isArray(node)) return node.map((n) => rewriteUrls(n, rewrite, key));
  if (node && typeof node === 'object') {
    // Prototype-less: a `__proto__` key of the answer stays a plain key.
    const out = bareObject();
    for (const [k, v] of Object.entries(node)) {
      // `_links.html.href` is a page too.
      out[k] = key === 'html' && k === 'href' ? v : rewriteUrls(v, rewrite, k);
    }
    return out;
  }
  return node;
}
