/**
 * Where a pod's twins keep their state and listen, which Twinbox's main process (server/deploy/pods/)
 * needs too: apart from the host and the persistence that use them, so the main process, which runs no
 * twin, does not load the twins' runtime for two paths.
 */
import { join } from 'node:path';

/** Where a pod's twin `name` listens for the router. */
export function twinSocketPath(socketDir: string, name: string): string {
  return join(socketDir, `twin-${name}.sock`);
}

/** Sandbox ids come from callers; encode them so they can never escape the data directory. */
export function sandboxDir(dataDir: string, sandboxId: string): string {
  return join(dataDir, encodeURIComponent(sandboxId));
}
