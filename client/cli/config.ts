import { chmod, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { CliError, EXIT } from './exit-codes.ts';

/**
 * Twinbox is self-hosted: without --api-url, TWINBOX_API_URL or a saved login, the CLI talks to the
 * Twinbox the README starts on this machine (`npm start`, port 3000).
 */
export const DEFAULT_API_URL = 'http://127.0.0.1:3000';

/** What `twinbox login` stores. */
export interface StoredConfig {
  api_url?: string;
  api_key?: string;
  email?: string;
  /** A GitHub Enterprise server's web URL, whose remotes `create` accepts besides github.com's. */
  github_url?: string;
}

type Env = Record<string, string | undefined>;

/** `$XDG_CONFIG_HOME/twinbox/config.json`, else `~/.config/twinbox/config.json` (the XDG default). */
export function configPath(env: Env = process.env): string {
  const base = env.XDG_CONFIG_HOME?.trim() || join(env.HOME?.trim() || homedir(), '.config');
  return join(base, 'twinbox', 'config.json');
}

export async function readConfig(path: string): Promise<StoredConfig> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw error;
  }
  try {
    return JSON.parse(text) as StoredConfig;
  } catch {
    throw new CliError(
      `${path} is not valid JSON: fix or delete it, then run \`twinbox login\` again.`,
      EXIT.error,
    );
  }
}

/**
 * Written to a temporary file and renamed, so a crash never leaves half a config; mode 0600 (and the
 * directory 0700) because the file holds an API key.
 */
export async function writeConfig(path: string, config: StoredConfig): Promise<void> {
  await mkdir(dirname(path), { recursive: true, mode: 0o700 });
  const temporary = `${path}.${process.pid}.tmp`;
  await writeFile(temporary, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
  await chmod(temporary, 0o600); // mode is only applied to new files; a leftover one could be wider
  await rename(temporary, path);
}

export interface Settings {
  apiUrl: string;
  apiKey: string | undefined;
  /** Where the key came from, to say in "not accepted" messages what to fix. */
  keySource: 'TWINBOX_API_KEY' | 'config' | undefined;
  configPath: string;
  /** Hosts besides github.com whose remotes name a repository (TWINBOX_GITHUB_URL, `github_url`). */
  githubHosts: string[];
}

/** Flag, then environment, then config file, then the default: the environment overrides the file. */
export async function resolveSettings(
  flagApiUrl: string | undefined,
  env: Env = process.env,
): Promise<Settings> {
  const path = configPath(env);
  const stored = await readConfig(path);
  const envKey = env.TWINBOX_API_KEY?.trim();
  return {
    apiUrl: flagApiUrl || env.TWINBOX_API_URL?.trim() || stored.api_url || DEFAULT_API_URL,
    apiKey: envKey || stored.api_key,
    keySource: envKey ? 'TWINBOX_API_KEY' : stored.api_key ? 'config' : undefined,
    configPath: path,
    githubHosts: githubHosts(env.TWINBOX_GITHUB_URL?.trim() || stored.github_url),
  };
}

function githubHosts(url: string | undefined): string[] {
  if (!url) return [];
  try {
    // With and without its port: an https remote carries the web port, an ssh remote another one.
    const parsed = new URL(url);
    return [...new Set([parsed.host.toLowerCase(), parsed.hostname.toLowerCase()])];
  } catch {
    throw new CliError(
      `TWINBOX_GITHUB_URL (or github_url in the config file) is not a URL: "${url}". Give the GitHub server's web URL, e.g. https://github.example.com.`,
      EXIT.usage,
    );
  }
}
