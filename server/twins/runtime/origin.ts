import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';

/**
 * Where a request reached a twin: the vendor's host when the sandbox's pod intercepted it (HTTPS), the
 * public URL through the router or the pod's front door, or the instance's loopback address. Every URL a
 * twin writes is meant to be followed by the same client, so it is written with this origin.
 */

/** A Host header a URL can carry: a DNS name or IPv4 address, or a bracketed IPv6 one, and a port. */
const HOST_HEADER =
  /^(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*|\[[0-9a-f:.]+\])(?::\d{1,5})?$/i;

/**
 * The request's origin from its `Host`, with `https` when it arrived over TLS or when a proxy in front
 * said so (`X-Forwarded-Proto`, which Twinbox's router sets and overwrites). A missing or odd `Host`
 * gives `fallback`, the instance's own URL. Trusting the header costs nothing: it only changes the URLs
 * in the answer to the same request.
 */
export function requestOrigin(req: IncomingMessage, fallback: string): string {
  const host = req.headers.host;
  if (!host || host.length > 300 || !HOST_HEADER.test(host)) return fallback;
  const port = /:(\d+)$/.exec(host)?.[1];
  if (port !== undefined && Number(port) > 65535) return fallback;
  const secure = (req.socket as TLSSocket | undefined)?.encrypted === true;
  const forwarded = req.headers['x-forwarded-proto'];
  const scheme = secure || forwarded === 'https' ? 'https' : 'http';
  return `${scheme}://${defaultPortless(host.toLowerCase(), scheme)}`;
}

function defaultPortless(host: string, scheme: string): string {
  if (scheme === 'https' && host.endsWith(':443')) return host.slice(0, -4);
  if (scheme === 'http' && host.endsWith(':80')) return host.slice(0, -3);
  return host;
}

/** Content types whose bodies carry URLs as text (JSON, HTML, forms, plain text, XML). */
const TEXTUAL = /json|text\/|html|xml|x-www-form-urlencoded|javascript/i;

/** Headers whose values may carry an absolute URL of the twin. */
const URL_HEADERS = ['location', 'content-location', 'link'];

/**
 * Rewrites a twin's own URL (`from`, an origin) to the origin a request came to, in an answer's body and
 * URL headers: the twins and their engine write absolute URLs with one base, and this makes each answer
 * followable by whoever asked, inside the sandbox or outside. The URL also appears percent-encoded (a
 * `redirect_uri` in a query): that form is rewritten too. A longer port (`:30001` for `:3000`) is not
 * the twin's URL and is left alone.
 */
export class OriginRewriter {
  private readonly plain: RegExp;
  private readonly encoded: RegExp;
  private readonly probe: Buffer;
  private readonly encodedProbe: Buffer;

  /** `pages`: path prefixes whose URLs stay as written (TwinFactory.pages: links for a browser). */
  constructor(
    private readonly from: string,
    pages: readonly string[] = [],
  ) {
    const keep = (encode: (text: string) => string) =>
      pages.length ? `(?!${pages.map((page) => escape(encode(page))).join('|')})` : '';
    this.plain = new RegExp(`${escape(from)}(?![0-9])${keep((page) => page)}`, 'g');
    this.encoded = new RegExp(
      `${escape(encodeURIComponent(from))}(?![0-9])${keep(encodeURIComponent)}`,
      'gi',
    );
    this.probe = Buffer.from(from);
    this.encodedProbe = Buffer.from(encodeURIComponent(from));
  }

  /** The body with `from` made `to`; the same Buffer when it holds neither form (no copy, no decoding). */
  body(body: Buffer, contentType: string, to: string): Buffer {
    if (to === this.from || !TEXTUAL.test(contentType)) return body;
    if (!body.includes(this.probe) && !body.includes(this.encodedProbe)) return body;
    return Buffer.from(this.text(body.toString('utf8'), to));
  }

  headers(headers: Headers, to: string): void {
    if (to === this.from) return;
    for (const name of URL_HEADERS) {
      const value = headers.get(name);
      if (value?.includes(this.from)) headers.set(name, this.text(value, to));
    }
  }

  private text(text: string, to: string): string {
    return text.replace(this.plain, to).replace(this.encoded, encodeURIComponent(to));
  }
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
