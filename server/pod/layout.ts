import { join } from 'node:path';

/** Where every command of a sandbox finds its CA: its certificate alone, and the system bundle with it. */
export const TRUST_PATHS = {
  certificate: '/etc/twinbox/sandbox-ca.pem',
  bundle: '/etc/twinbox/ca-certificates.crt',
  /** The system's bundle (OpenSSL's default file: curl, git, Python, Ruby), shown with the CA appended. */
  system: '/etc/ssl/certs/ca-certificates.crt',
} as const;

/**
 * The variables that make a sandbox's programs trust its CA beside the system's, under the app's own
 * `env` (which may override them: a team that ships its own CA file, at the cost of the vendors' host
 * names). OpenSSL-based clients that take a file (Python's requests, Ruby, curl, git) read the bundle,
 * the system's with the CA appended. Node reads the same bundle through OpenSSL (`--use-openssl-ca` in
 * NODE_OPTIONS), lazily, at its first TLS connection. NODE_EXTRA_CA_CERTS would add the one certificate to
 * Node's own store instead, but Node 20 then builds its whole root store while it starts: 17-30 ms on
 * every start of the app, before its first answer (docs/benchmarks.md). It is the fallback where the
 * bundle would not do: the host has no system bundle (Node would trust the CA alone, and not the npm
 * registry), the app names its own SSL_CERT_FILE, or its NODE_OPTIONS picks Node's bundled store.
 */
export function trustEnv(
  appEnv: Readonly<Record<string, string>>,
  host: { systemBundle: boolean },
): Record<string, string> {
  const files = { SSL_CERT_FILE: TRUST_PATHS.bundle, REQUESTS_CA_BUNDLE: TRUST_PATHS.bundle };
  const own = appEnv.NODE_OPTIONS?.trim() ?? '';
  const bundleForNode =
    host.systemBundle && appEnv.SSL_CERT_FILE === undefined && !/(^|\s)--use-bundled-ca\b/.test(own);
  if (!bundleForNode) return { ...files, NODE_EXTRA_CA_CERTS: TRUST_PATHS.certificate, ...appEnv };
  const nodeOptions = /(^|\s)--use-openssl-ca\b/.test(own) ? own : `--use-openssl-ca${own ? ` ${own}` : ''}`;
  return { ...files, ...appEnv, NODE_OPTIONS: nodeOptions };
}

/**
 * The files and ports a sandbox pod and Twinbox agree on. The pod directory holds Unix sockets, the one
 * way across the boundary of the sandbox's network namespace, and the sandbox CA's public certificate.
 */
export const podLayout = (dir: string) => ({
  /** The pod's control API (HTTP, JSON), used by Twinbox only. */
  control: join(dir, 'ctl.sock'),
  /** Piped to the app's port inside the namespace: the router and the health check use it. */
  app: join(dir, 'app.sock'),
  /** Twinbox's install proxy, which the pod's proxy port pipes to (see INSTALL_PROXY_PORT). */
  egress: join(dir, 'egress.sock'),
  /**
   * The sandbox CA's certificate (public), written by the pod at its start, and the system's CA bundle
   * with it appended: the app's view shows them at TRUST_PATHS (server/pod/sandbox-ca.ts).
   */
  caCertificate: join(dir, 'sandbox-ca.pem'),
  caBundle: join(dir, 'ca-certificates.crt'),
  /**
   * The twins Twinbox expects the pod to run (`{"names": [...]}`, a warmTwins body), written before its
   * spawn and again by a deploy that takes it while it starts: the pod reads it once its code is loaded
   * and loads and prepares those twins (the GitHub twin's RSA key) while it finishes starting.
   */
  expectedTwins: join(dir, 'expected-twins.json'),
});

/** Inside a sandbox's own namespace every app gets the same port: nothing else can hold it. */
export const APP_PORT = 3000;

/** The app's port when Twinbox's public URLs use 3000 themselves (its default): the pod answers those. */
export const APP_PORT_BESIDE_PUBLIC = 8080;

/**
 * Ports the egress guard (egress-guard.ts) listens on inside a sandbox's network namespace, where a route
 * makes every IPv4 address local: a connection to any address on one of them is caught and recorded
 * instead of failing silently. Other ports are refused by the kernel (nothing listens) and not recorded.
 * Here, not in the guard, since Twinbox keeps apps off them too (deploy/steps/profile.ts) and has no use
 * for the guard's DNS code.
 */
export const GUARDED_PORTS = [80, 443, 25, 465, 587, 3306, 5432, 6379, 27017];

/** Inside a sandbox's namespace, the HTTP proxy an install step may use to reach the package registry. */
export const INSTALL_PROXY_PORT = 3128;
