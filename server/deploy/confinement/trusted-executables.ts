import { accessSync, constants, statSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Where Twinbox looks for the programs it runs outside a sandbox. Fixed, and never the process's or the
 * app's PATH: a repository that ships `./nsenter` and sets `PATH=.` must not choose what runs as Twinbox's
 * user. Only root can write to these directories on any sane host.
 */
export const TRUSTED_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/** The environment of every helper Twinbox runs outside a sandbox: nothing an app or a caller sets. */
export const TRUSTED_ENV: Readonly<Record<string, string>> = Object.freeze({ PATH: TRUSTED_PATH, LANG: 'C' });

const NAMES = [
  'sh',
  'cat',
  'env',
  'bwrap',
  'nice',
  'nsenter',
  'setpriv',
  'mount',
  'umount',
  'ip',
  'mkfs.ext4',
  'losetup',
  'mknod',
] as const;
export type TrustedExecutableName = (typeof NAMES)[number];

/** Absolute paths of the helpers found on TRUSTED_PATH; a missing one is undefined. */
export type TrustedExecutables = Readonly<Partial<Record<TrustedExecutableName, string>>>;

/** The first executable regular file called `name` in the directories of `searchPath`. */
export function findExecutable(name: string, searchPath = TRUSTED_PATH): string | undefined {
  if (name.includes('/')) return undefined;
  for (const dir of searchPath.split(':')) {
    if (!dir.startsWith('/')) continue; // a relative entry would search the current directory
    const candidate = join(dir, name);
    try {
      if (!statSync(candidate).isFile()) continue;
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

let resolved: TrustedExecutables | undefined;

/**
 * Every trustedExecutable, resolved once (the first call, at start) and frozen: later changes to PATH, the working
 * directory or the environment cannot change which file runs.
 */
export function trustedExecutables(): TrustedExecutables {
  if (!resolved) {
    const found: Partial<Record<TrustedExecutableName, string>> = {};
    for (const name of NAMES) {
      const path = findExecutable(name);
      if (path) found[name] = path;
    }
    resolved = Object.freeze(found);
  }
  return resolved;
}

/** A helper that must exist: its absolute path, or an error naming what is missing. */
export function trustedExecutable(name: TrustedExecutableName): string {
  const path = trustedExecutables()[name];
  if (!path) throw new Error(`\`${name}\` was not found in ${TRUSTED_PATH}`);
  return path;
}
