import { join } from 'node:path';

/**
 * The files and ports a sandbox pod and Twinbox agree on. The pod directory holds only Unix sockets: they
 * are the one way across the boundary of the sandbox's network namespace.
 */
export const podLayout = (dir: string) => ({
  /** The pod's control API (HTTP, JSON), used by Twinbox only. */
  control: join(dir, 'ctl.sock'),
  /** Piped to the app's port inside the namespace: the router and the health check use it. */
  app: join(dir, 'app.sock'),
  /** Twinbox's install proxy, which the pod's proxy port pipes to (see INSTALL_PROXY_PORT). */
  egress: join(dir, 'egress.sock'),
});

/** Inside a sandbox's own namespace every app gets the same port: nothing else can hold it. */
export const APP_PORT = 3000;

/** Inside a sandbox's namespace, the HTTP proxy an install step may use to reach the package registry. */
export const INSTALL_PROXY_PORT = 3128;
