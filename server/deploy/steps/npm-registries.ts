import { execFile } from 'node:child_process';
import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { findExecutable, TRUSTED_PATH } from '../confinement/trusted-executables.ts';

/** A host an install step may reach through the pod's proxy. */
export interface HostPort {
  host: string;
  port: number;
}

/** The registries npm is configured with: the default one, and those of scopes (`@acme:registry`). */
export interface NpmRegistries {
  /** npm's `registry` (absent when npm gave none). */
  registry?: string;
  hosts: HostPort[];
}

/** A `.npmrc` larger than this is not read: a registry line fits in far less. */
const NPMRC_MAX_BYTES = 64 * 1024;

const HOST = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/;

/**
 * `https://host[:port]/path` -> {host, port}, or undefined for anything else: another scheme, user info,
 * a host that is not a plain DNS name or IPv4 address (the proxy's CONNECT target has the same shape).
 */
export function registryHost(value: string): HostPort | undefined {
  let url: URL;
  try {
    url = new URL(value.trim());
  } catch {
    return undefined;
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return undefined;
  if (url.username || url.password) return undefined;
  const host = url.hostname.toLowerCase();
  if (!HOST.test(host) || host.length > 253) return undefined;
  const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
  return { host, port };
}

/** Whether an npm config key names a registry: `registry` or `@scope:registry`. */
function isRegistryKey(key: string): boolean {
  return key === 'registry' || /^@[a-z0-9][a-z0-9._-]{0,213}:registry$/i.test(key);
}

function unique(hosts: HostPort[]): HostPort[] {
  const seen = new Map<string, HostPort>();
  for (const hp of hosts) seen.set(`${hp.host}:${hp.port}`, hp);
  return [...seen.values()];
}

/**
 * The registries a repository's `.npmrc` names. The file is the repository's, so hostile: only lines
 * `registry=<url>` and `@scope:registry=<url>` count, only http(s) URLs of a plain host, nothing else of
 * the file (auth, proxies, scripts, `${VAR}` expansions) is read.
 */
export function parseNpmrc(text: string): NpmRegistries {
  const hosts: HostPort[] = [];
  let registry: string | undefined;
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.trim();
    if (!line || line.startsWith('#') || line.startsWith(';')) continue;
    const eq = line.indexOf('=');
    if (eq < 0) continue;
    const key = line.slice(0, eq).trim();
    let value = line.slice(eq + 1).trim();
    if (/^(["']).*\1$/.test(value)) value = value.slice(1, -1);
    if (!isRegistryKey(key) || value.includes('${')) continue;
    const hp = registryHost(value);
    if (!hp) continue;
    hosts.push(hp);
    if (key === 'registry') registry = value;
  }
  return { registry, hosts: unique(hosts) };
}

/**
 * Reads `<dir>/.npmrc` without following a symlink (Twinbox reads it as its own user: a link to one of
 * the host's files must not be opened), a regular file of at most NPMRC_MAX_BYTES; else none.
 */
export async function repositoryRegistries(dir: string): Promise<NpmRegistries> {
  let handle;
  try {
    handle = await open(
      join(dir, '.npmrc'),
      constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK,
    );
  } catch {
    return { hosts: [] };
  }
  try {
    const stat = await handle.stat();
    if (!stat.isFile() || stat.size > NPMRC_MAX_BYTES) return { hosts: [] };
    return parseNpmrc(await handle.readFile('utf8'));
  } finally {
    await handle.close();
  }
}

/** The registry keys of `npm config list --json`'s object. */
export function registriesOfNpmConfig(config: Record<string, unknown>): NpmRegistries {
  const hosts: HostPort[] = [];
  let registry: string | undefined;
  for (const [key, value] of Object.entries(config)) {
    if (!isRegistryKey(key) || typeof value !== 'string') continue;
    const hp = registryHost(value);
    if (!hp) continue;
    hosts.push(hp);
    if (key === 'registry') registry = value;
  }
  return { registry, hosts: unique(hosts) };
}

/** npm could not tell its configuration: installs reach only what TWINBOX_INSTALL_EGRESS names. */
export class NpmConfigError extends Error {
  readonly kind = 'npm_config';
}

/**
 * The registries this machine's npm is configured with (user and global config, npm_config_* of
 * Twinbox's environment), as `npm config list --json` reports them. Read once at start: a deploy never
 * runs npm outside its sandbox.
 */
export async function machineRegistries(
  env: NodeJS.ProcessEnv = process.env,
  timeoutMs = 30_000,
): Promise<NpmRegistries> {
  const npm = findExecutable('npm', env.PATH ?? TRUSTED_PATH) ?? findExecutable('npm');
  if (!npm) throw new NpmConfigError('npm is not installed (not on PATH)');
  let stdout: string;
  try {
    ({ stdout } = await promisify(execFile)(npm, ['config', 'list', '--json'], {
      env,
      timeout: timeoutMs,
      maxBuffer: 4 * 1024 * 1024,
    }));
  } catch (error) {
    throw new NpmConfigError(`\`npm config list --json\` failed: ${(error as Error).message.split('\n')[0]}`);
  }
  try {
    return registriesOfNpmConfig(JSON.parse(stdout) as Record<string, unknown>);
  } catch {
    throw new NpmConfigError('`npm config list --json` did not print a JSON object');
  }
}
