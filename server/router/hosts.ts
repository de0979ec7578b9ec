/**
 * The host names of sandboxes (docs/routing.md): the app at `<sandbox id>.<domain>`, each twin at
 * `<sandbox id>--<twin>.<domain>`. Flat, one label under the domain, so one wildcard certificate
 * (`*.<domain>`) covers every app and twin.
 */

/** What a sandbox host names: a sandbox's app (no `twin`) or one of its twins. */
export interface SandboxHost {
  id: string;
  twin?: string;
}

export interface SandboxHosts {
  /** The lowercase domain sandboxes live under, e.g. `localhost` or `sandboxes.example.com`. */
  readonly domain: string;
  /** `http://<id>.localhost:3000`: scheme and port of the public base, host of the sandbox. */
  appUrl(id: string): string;
  /** `http://<id>--<twin>.localhost:3000`; the twin's admin API is under its `/_twinbox` path. */
  twinUrl(id: string, twin: string): string;
  /** The sandbox named by a `Host` header, or undefined when it is not a sandbox host. */
  parse(host: string | undefined): SandboxHost | undefined;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
/** A DNS label's rules: no leading or trailing hyphen, and the whole label within 63 characters. */
const TWIN = /^[a-z0-9](?:[a-z0-9-]{0,23}[a-z0-9])?$/;
const UUID_LENGTH = 36;

/**
 * Strict on purpose: lowercase, the exact suffix `.<domain>`, a UUID, an optional `--<twin>`.
 * Anything else (the API's own host, an IP address, a trailing dot, a nested label) is not a sandbox
 * host, and goes to Twinbox's own routes.
 */
export function parseSandboxHost(host: string | undefined, domain: string): SandboxHost | undefined {
  if (!host) return undefined;
  // Cheap rejection first: this runs on every request Twinbox gets, the API's included.
  if (host.length < UUID_LENGTH + 1 + domain.length) return undefined;
  let name = host.toLowerCase();
  const colon = name.lastIndexOf(':');
  if (colon !== -1) {
    if (!/^\d{1,5}$/.test(name.slice(colon + 1))) return undefined;
    name = name.slice(0, colon);
  }
  const suffix = `.${domain}`;
  if (!name.endsWith(suffix)) return undefined;
  const label = name.slice(0, name.length - suffix.length);
  const id = label.slice(0, UUID_LENGTH);
  if (!UUID.test(id)) return undefined;
  if (label.length === UUID_LENGTH) return { id };
  if (!label.startsWith('--', UUID_LENGTH)) return undefined;
  const twin = label.slice(UUID_LENGTH + 2);
  return TWIN.test(twin) ? { id, twin } : undefined;
}

/**
 * The URLs handed to callers and the parser the router uses, from one place so they cannot disagree.
 * `publicBase` is where Twinbox is reached (`TWINBOX_PUBLIC_URL`, e.g. `https://twinbox.example.com`
 * behind a TLS proxy): its scheme and port are kept, its host name replaced by the sandbox's.
 */
export function sandboxHosts(domain: string, publicBase: URL): SandboxHosts {
  const normalized = domain.toLowerCase().replace(/\.$/, '');
  if (!/^[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?$/.test(normalized)) {
    throw new Error(`Not a host name for sandboxes: "${domain}"`);
  }
  const origin = (label: string) =>
    `${publicBase.protocol}//${label}.${normalized}${publicBase.port ? `:${publicBase.port}` : ''}`;
  return {
    domain: normalized,
    appUrl: (id) => origin(id),
    twinUrl: (id, twin) => origin(`${id}--${twin}`),
    parse: (host) => parseSandboxHost(host, normalized),
  };
}
