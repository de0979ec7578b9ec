/**
 * Headers of every page. Scripts and styles come only from this server's /assets/ (no inline script or
 * style, so an injected tag cannot run or restyle); live parts fetch only from this origin.
 * `same-origin` referrers keep the `Origin` header of form posts real (with `no-referrer` a browser sends
 * `Origin: null`, which the form check must refuse).
 */
export const PAGE_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy': [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "form-action 'self'",
    "frame-ancestors 'none'",
    "base-uri 'none'",
  ].join('; '),
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'same-origin',
  'Cache-Control': 'no-store',
};
