import { lstat, opendir, readFile } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * Finding an app below a repository's root, for a repository whose root has none (Stripe's samples keep
 * theirs in `server/node/`). A repository is hostile input: the search never follows a link, reads at most
 * SEARCH_ENTRIES directory entries in all and SEARCH_DEPTH folders deep, and reads only small files.
 */

/** Folders below the root searched: `server/node` is 2, `apps/shop/web` 3. */
export const SEARCH_DEPTH = 3;
/** Directory entries read in all before the search stops (a tree of a million files costs no more). */
export const SEARCH_ENTRIES = 5000;
/** A package.json or Procfile larger than this is not read (nobody writes one that big by hand). */
const MAX_FILE_BYTES = 1024 * 1024;

/**
 * Folders never searched, by name (any case), besides hidden ones (`.git`, `.github`, `.next`...):
 * installed dependencies (every package in them has a package.json, some a start script) and test data
 * (`test/fixtures/app/package.json` is an app for a test to run, never the repository's). Examples are
 * searched: a repository of several examples gets the error naming them, and its author picks one with
 * `root:`, rather than a page of its README.
 */
const SKIPPED = new Set([
  'node_modules',
  'bower_components',
  'jspm_packages',
  'vendor',
  'test',
  'tests',
  '__tests__',
  'spec',
  'fixtures',
  'fixture',
  '__fixtures__',
  'testdata',
]);

export interface AppSearch {
  /** Folders (relative, with /) that hold an app, shallowest first. */
  apps: string[];
  /** True when SEARCH_ENTRIES ran out before the search did: `apps` may not be all of them. */
  truncated: boolean;
}

/** A small regular file's text (never through a link), or undefined. */
async function smallFile(path: string): Promise<string | undefined> {
  const info = await lstat(path).catch(() => undefined);
  if (!info?.isFile() || info.size > MAX_FILE_BYTES) return undefined;
  return readFile(path, 'utf8').catch(() => undefined);
}

/**
 * Does `dir` hold an app that says how it starts: a package.json with a `start` script, or a Procfile
 * with a `web:` line? Below the root, a package.json with only `main` does not count: that is how
 * libraries look (a monorepo's packages, a repository's tools), not apps.
 */
async function startsHere(dir: string): Promise<boolean> {
  const pkg = await smallFile(join(dir, 'package.json'));
  if (pkg !== undefined) {
    try {
      const scripts = (JSON.parse(pkg) as { scripts?: Record<string, unknown> } | null)?.scripts;
      if (typeof scripts?.start === 'string' && scripts.start.trim()) return true;
    } catch {
      // Not JSON: not an app this search can start; the folder is searched on.
    }
  }
  const procfile = await smallFile(join(dir, 'Procfile'));
  return procfile?.split(/\r?\n/).some((line) => /^web\s*:\s*\S/.test(line)) ?? false;
}

/**
 * The apps below `dir` (not `dir` itself), breadth first, so the shallowest come first. An app's own
 * subfolders are not searched: they are its own (its client, its tests).
 */
export async function appsBelow(dir: string): Promise<AppSearch> {
  const apps: string[] = [];
  let budget = SEARCH_ENTRIES;
  let level = [''];
  for (let depth = 1; depth <= SEARCH_DEPTH && level.length; depth++) {
    const next: string[] = [];
    for (const folder of level) {
      const handle = await opendir(join(dir, folder)).catch(() => undefined);
      if (!handle) continue;
      // for await closes the handle, also when it stops early.
      for await (const entry of handle) {
        if (--budget < 0) return { apps, truncated: true };
        // isDirectory() is false for a link: none is followed.
        if (!entry.isDirectory() || entry.name.startsWith('.') || SKIPPED.has(entry.name.toLowerCase()))
          continue;
        const path = folder ? `${folder}/${entry.name}` : entry.name;
        if (await startsHere(join(dir, path))) apps.push(path);
        else next.push(path);
      }
    }
    level = next.sort();
  }
  return {
    apps: apps.sort((a, b) => a.split('/').length - b.split('/').length || a.localeCompare(b)),
    truncated: false,
  };
}
