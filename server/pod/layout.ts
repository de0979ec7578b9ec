import { join } from 'node:path';

/** Where every command of a sandbox finds its CA: its certificate alone, and the system bundle with it. */
export const TRUST_PATHS = {
  certificate: '/etc/twinbox/sandbox-ca.pem',
  bundle: '/etc/twinbox/ca-certificates.crt',
  /** The system's bundle (OpenSSL's default file: curl, git, Python, Ruby), shown with the CA appended. */
  system: '/etc/ssl/certs/ca-certificates.crt',
} as const;

/**
 * The variables that make a sandbox's programs trust its CA beside the system's: Node adds the one
 * certificate to its own store; OpenSSL-based clients that take a file (Python's requests, Ruby, curl,
 * git) read the whole bundle.
 */
export const TRUST_ENV: Readonly<Record<string, string>> = {
  NODE_EXTRA_CA_CERTS: TRUST_PATHS.certificate,
  SSL_CERT_FILE: TRUST_PATHS.bundle,
  REQUESTS_CA_BUNDLE: TRUST_PATHS.bundle,
};

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
