import { execFileSync } from 'node:child_process';

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

/** `owner/name` of the `origin` remote, when it is a GitHub-style URL (https or scp-like ssh). */
export function originRepository(): string | undefined {
  const url = git(['config', '--get', 'remote.origin.url']);
  const match = url && /[/:]([^/:]+)\/([^/]+?)(?:\.git)?\/?$/.exec(url);
  return match ? `${match[1]}/${match[2]}` : undefined;
}

/** The checked-out branch (even before its first commit); undefined on a detached HEAD. */
export function currentBranch(): string | undefined {
  return git(['symbolic-ref', '--quiet', '--short', 'HEAD']);
}
