/**
 * A minimal browser for OAuth tests over real HTTP: keeps cookies per origin (honouring Path and
 * Max-Age=0), and follows redirects by hand, stopping when it reaches a web page of Twinbox (anything
 * outside /auth/) or the given number of hops.
 */
export class CookieBrowser {
  private readonly jars = new Map<string, Map<string, { value: string; path: string }>>();

  constructor(private readonly twinboxOrigin: string) {}

  cookie(name: string, origin = this.twinboxOrigin): string | undefined {
    return this.jars.get(origin)?.get(name)?.value;
  }

  async get(url: string): Promise<{ status: number; location: string | undefined; response: Response }> {
    const target = new URL(url);
    const jar = this.jars.get(target.origin);
    const cookie = jar
      ? [...jar.entries()]
          .filter(([, c]) => target.pathname.startsWith(c.path))
          .map(([name, c]) => `${name}=${c.value}`)
          .join('; ')
      : '';
    const response = await fetch(target, { redirect: 'manual', headers: cookie ? { cookie } : {} });
    this.remember(target.origin, response.headers.getSetCookie());
    const location = response.headers.get('location') ?? undefined;
    return { status: response.status, location: location && new URL(location, target).toString(), response };
  }

  /** Follows redirects from `url` until a page outside /auth/ and /login/oauth/ (not fetched). */
  async navigate(url: string, hops = 10): Promise<URL> {
    let current = url;
    for (let i = 0; i < hops; i++) {
      const parsed = new URL(current);
      const ours = parsed.origin === this.twinboxOrigin;
      if (
        (ours && !parsed.pathname.startsWith('/auth/')) ||
        (!ours && !parsed.pathname.startsWith('/login/oauth/'))
      ) {
        return parsed;
      }
      const { location, status } = await this.get(current);
      if (!location) throw new Error(`${current} answered ${status} without a redirect`);
      current = location;
    }
    return new URL(current);
  }

  private remember(origin: string, headers: string[]): void {
    let jar = this.jars.get(origin);
    if (!jar) this.jars.set(origin, (jar = new Map()));
    for (const header of headers) {
      const [pair, ...attributes] = header.split(';').map((part) => part.trim());
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq);
      const value = pair!.slice(eq + 1);
      const attr = Object.fromEntries(
        attributes.map((a) => {
          const i = a.indexOf('=');
          return i < 0 ? [a.toLowerCase(), ''] : [a.slice(0, i).toLowerCase(), a.slice(i + 1)];
        }),
      );
      if (attr['max-age'] === '0' || value === '') jar.delete(name);
      else jar.set(name, { value, path: attr.path ?? '/' });
    }
  }
}
