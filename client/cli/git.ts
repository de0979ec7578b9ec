import { execFileSync } from 'node:child_process';
import { InputError } from '../parse.ts';

/** `git <args>` in the current directory, or undefined outside a repository or without git. */
function git(args: string[]): string | undefined {
  try {
    return (
      execFileSync('git', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim() || undefined
    );
  } catch {
    return undefined;
  }
}

// GitHub's rules for names (the API checks them again): owner of alphanumerics and inner hyphens,
// repository of letters, digits, `.`, `_` and `-`.
const OWNER = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$/;
const NAME = /^[A-Za-z0-9._-]{1,100}$/;

/**
 * `owner/name` of a GitHub remote URL, or undefined when it is not one: https (`https://github.com/o/r`),
 * scp-like ssh (`git@github.com:o/r.git`) or `ssh://git@github.com[:port]/o/r`, on github.com or one of
 * `extraHosts` (a GitHub Enterprise host). Local paths, `file://` and other hosts are not GitHub.
 */
export function githubRepositoryOf(url: string, extraHosts: string[] = []): string | undefined {
  const hosts = new Set(['github.com', 'www.github.com', ...extraHosts.map((h) => h.toLowerCase())]);
  let host: string;
  let path: string;
  const scp = /^(?:[^@/:]+@)?([^/:]+):(?!\/)(.+)$/.exec(url);
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(url)) {
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      return undefined;
    }
    if (!['https:', 'http:', 'ssh:', 'git+ssh:', 'git:'].includes(parsed.protocol)) return undefined;
    // An https remote may name the web port (host), an ssh remote its own (hostname).
    host = hosts.has(parsed.host.toLowerCase()) ? parsed.host : parsed.hostname;
    path = parsed.pathname;
  } else if (scp) {
    host = scp[1]!;
    path = scp[2]!;
  } else {
    return undefined; // a local path
  }
  if (!hosts.has(host.toLowerCase())) return undefined;
  const parts = path
    .replace(/^\/+|\/+$/g, '')
    .replace(/\.git$/, '')
    .split('/');
  if (parts.length !== 2 || !OWNER.test(parts[0]!) || !NAME.test(parts[1]!)) return undefined;
  if (parts[1] === '.' || parts[1] === '..') return undefined;
  return `${parts[0]}/${parts[1]}`;
}

/** The remote URL without a password or token someone put in it: it is about to be printed. */
function withoutCredentials(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^@/]*@/i, '$1');
}

/**
 * `owner/name` of the `origin` remote; undefined when there is no origin (outside a clone). An origin
 * that is not a GitHub URL is refused rather than guessed from: its last two path segments would name
 * some repository, likely not the one meant.
 */
export function originRepository(extraHosts: string[] = []): string | undefined {
  const url = git(['config', '--get', 'remote.origin.url']);
  if (!url) return undefined;
  const repo = githubRepositoryOf(url, extraHosts);
  if (repo) return repo;
  const known = [...new Set(['github.com', ...extraHosts])].join(', ');
  throw new InputError(
    `The origin remote (${withoutCredentials(url)}) is not a GitHub repository on ${known}: pass --repo owner/name.`,
  );
}

/** The checked-out branch (even before its first commit); undefined on a detached HEAD. */
export function currentBranch(): string | undefined {
  return git(['symbolic-ref', '--quiet', '--short', 'HEAD']);
}
