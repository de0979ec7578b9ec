import { createHash, randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, copyFile, cp, lstat, mkdir, readdir, readFile, rename, rm, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { RuntimeProfile } from './profile.ts';
import { createWorkspace, removeWorkspace } from './workspace.ts';

/** Scripts of the app's own package.json that npm runs on install; they need the whole source, not just the lockfile. */
const ROOT_INSTALL_SCRIPTS = ['preinstall', 'install', 'postinstall', 'prepare'];

/** npm's download cache of one install, inside the install's own directory. */
export const PRIVATE_NPM_CACHE = '.twinbox-npm-cache';

/**
 * Runs an install command confined, in `cwd` (writable), with `env` added to the app's environment (it
 * points npm at the install's private cache). `writable` lists further paths the install may write.
 */
export type InstallRunner = (
  command: string,
  cwd: string,
  writable: string[],
  env: Record<string, string>,
) => Promise<void>;

export interface DependencyCacheOptions {
  /**
   * Cap of a cache-filling install's staging directory (a workspace of its own, a disk image where
   * Twinbox can mount one, see createWorkspace): without it an install could fill the disk. The sandbox's workspace size is the
   * natural value.
   */
  stagingBytes?: number;
}

/**
 * node_modules installed once per (account, lockfile, ...) and reused: `<cacheDir>/<sha256>/node_modules`,
 * linked into each workspace with a symlink and shown to the app read-only.
 *
 * The key covers the lockfile, package.json, `.npmrc` (registry, auth, flags), the install command, the
 * Node version, and the `scope` the caller passes (the sandbox owner's account): an install runs the
 * packages' install scripts, which can write anything into node_modules, so a tree one account's install
 * produced is never handed to another account's app.
 *
 * npm's download cache is private to each install (`<install dir>/.twinbox-npm-cache`, removed after),
 * not shared: npm checks the integrity of the tarballs it reads from its cache, but not of the metadata
 * it keeps there (packuments, index entries), so a shared writable cache lets one tenant steer another's
 * resolution; and npm has no read-only-plus-private-layer mode that would make a shared cache safe. The
 * cost is a download per cache miss, which the node_modules cache above already makes rare.
 */
export class DependencyCache {
  private readonly inFlight = new Map<string, Promise<string>>();

  constructor(
    private readonly cacheDir: string,
    private readonly opts: DependencyCacheOptions = {},
  ) {}

  /**
   * Makes `workspace/node_modules` available; returns the cached directory to bind read-only, or undefined
   * when the install ran in the workspace itself (no lockfile, or the app's own install scripts).
   */
  async provide(
    profile: RuntimeProfile,
    workspace: string,
    install: InstallRunner,
    scope: string,
  ): Promise<string | undefined> {
    if (!profile.install) return undefined;
    if (!scope) throw new Error('dependency cache: a scope (the owner account) is required');
    const pkgText = await readFile(join(workspace, 'package.json'), 'utf8').catch(() => '');
    const scripts = (JSON.parse(pkgText || '{}') as { scripts?: Record<string, string> }).scripts ?? {};
    if (
      !profile.lockfile ||
      ROOT_INSTALL_SCRIPTS.some((s) => s in scripts) ||
      existsSync(join(workspace, 'node_modules'))
    ) {
      await installWithPrivateCache(install, profile.install, workspace);
      return undefined;
    }
    const key = await cacheKey(profile, workspace, pkgText, scope);
    let ready = this.inFlight.get(key);
    if (!ready) {
      ready = this.fill(key, profile, workspace, install).finally(() => this.inFlight.delete(key));
      this.inFlight.set(key, ready);
    }
    const modules = await ready;
    await symlink(modules, join(workspace, 'node_modules'), 'dir');
    return join(this.cacheDir, key);
  }

  /**
   * Removes what a crashed run left in the cache directory: staging areas (mounted, each with its disk
   * image) and half-copied entries. Call at start, before any install. Returns their names.
   */
  async sweep(): Promise<string[]> {
    // None there yet (or unreadable): nothing left to find.
    const names = await readdir(this.cacheDir).catch((): string[] => []);
    const leftovers = names.filter((n) => n.startsWith('.staging-') || n.startsWith('.incoming-'));
    for (const name of leftovers) await removeWorkspace(join(this.cacheDir, name));
    return leftovers;
  }

  /** Installs into a private staging directory, then moves it into place, so a half install is never used. */
  private async fill(
    key: string,
    profile: RuntimeProfile,
    workspace: string,
    install: InstallRunner,
  ): Promise<string> {
    const entry = join(this.cacheDir, key);
    const modules = join(entry, 'node_modules');
    if (existsSync(modules)) return modules;
    // Only root-run Twinbox reads this: node_modules may hold anything an install script wrote.
    await mkdir(this.cacheDir, { recursive: true, mode: 0o700 });
    const staging = join(this.cacheDir, `.staging-${key.slice(0, 12)}-${randomUUID()}`);
    if (this.opts.stagingBytes) await createWorkspace(staging, this.opts.stagingBytes);
    else await mkdir(staging, { mode: 0o700 });
    try {
      for (const file of ['package.json', profile.lockfile!, '.npmrc']) {
        if (existsSync(join(workspace, file))) await copyFile(join(workspace, file), join(staging, file));
      }
      await installWithPrivateCache(install, profile.install!, staging);
      await stripSetId(join(staging, 'node_modules'));
      await mkdir(entry, { recursive: true, mode: 0o700 });
      await moveInto(join(staging, 'node_modules'), modules, this.cacheDir);
      return modules;
    } finally {
      await removeWorkspace(staging);
    }
  }
}

async function cacheKey(
  profile: RuntimeProfile,
  workspace: string,
  pkgText: string,
  scope: string,
): Promise<string> {
  const lock = await readFile(join(workspace, profile.lockfile!));
  const npmrc = await readFile(join(workspace, '.npmrc')).catch(() => undefined);
  const hash = createHash('sha256');
  // Length-prefixed parts: no two different inputs hash the same bytes.
  const part = (data: string | Buffer | undefined) => {
    if (data === undefined) return hash.update('-\0');
    const bytes = typeof data === 'string' ? Buffer.from(data) : data;
    hash.update(`${bytes.length}:`).update(bytes);
  };
  part('twinbox-node-modules-v2');
  part(scope);
  part(profile.lockfile!);
  part(lock);
  part(pkgText);
  part(npmrc);
  part(profile.install!);
  part(process.version);
  return hash.digest('hex');
}

/** Runs an install with npm's cache in `cwd/.twinbox-npm-cache`, fresh before and gone after. */
async function installWithPrivateCache(install: InstallRunner, command: string, cwd: string): Promise<void> {
  const npmCache = join(cwd, PRIVATE_NPM_CACHE);
  // rm does not follow a symlink a repository might have put there; it removes the link.
  await rm(npmCache, { recursive: true, force: true });
  await mkdir(npmCache, { mode: 0o700 });
  try {
    await install(command, cwd, [], { HOME: cwd, npm_config_cache: npmCache });
  } finally {
    await rm(npmCache, { recursive: true, force: true, maxRetries: 3 });
  }
}

/** setuid/setgid bits an install set are not carried into a cache Twinbox keeps on its own disk. */
async function stripSetId(dir: string): Promise<void> {
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch {
    return;
  }
  for (const e of entries) {
    const path = join(dir, e.name);
    if (e.isDirectory()) await stripSetId(path);
    else if (e.isFile()) {
      const { mode } = await lstat(path);
      if (mode & 0o6000) await chmod(path, mode & 0o1777);
    }
  }
}

/**
 * Renames `from` to `to`; across file systems (a tmpfs staging area) copies symlinks as they are (never
 * following them) into a temporary directory beside `to`, then renames that, so `to` appears whole or not
 * at all. Another Twinbox process winning the race is fine: its copy is used.
 */
async function moveInto(from: string, to: string, scratchDir: string): Promise<void> {
  try {
    await rename(from, to);
    return;
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'EXDEV') {
      if (existsSync(to)) return;
      throw error;
    }
  }
  const incoming = join(scratchDir, `.incoming-${randomUUID()}`);
  try {
    await cp(from, incoming, { recursive: true, verbatimSymlinks: true, errorOnExist: true, force: false });
    await stripSetId(incoming);
    await rename(incoming, to).catch((error: NodeJS.ErrnoException) => {
      if (!existsSync(to)) throw error;
    });
  } finally {
    await rm(incoming, { recursive: true, force: true });
  }
}
