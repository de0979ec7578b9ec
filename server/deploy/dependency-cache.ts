import { createHash, randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, readFile, rename, rm, symlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { RuntimeProfile } from './profile.ts';

/** Scripts of the app's own package.json that npm runs on install; they need the whole source, not just the lockfile. */
const ROOT_INSTALL_SCRIPTS = ['preinstall', 'install', 'postinstall', 'prepare'];

/** Installs dependencies somewhere with an install command; the deployer's runner does it, confined. */
export type InstallRunner = (command: string, cwd: string, writable: string[]) => Promise<void>;

/**
 * node_modules installed once per lockfile and reused: `<cacheDir>/<sha256>/node_modules`, linked into
 * each workspace with a symlink and shown to the app read-only. The key covers the lockfile, package.json,
 * the install command and the Node version, since any of them changes what gets installed.
 */
export class DependencyCache {
  private readonly inFlight = new Map<string, Promise<string>>();

  constructor(
    private readonly cacheDir: string,
    /** npm's own download cache, shared by installs (npm checks integrity of what it reads from it). */
    readonly npmCacheDir: string,
  ) {}

  /**
   * Makes `workspace/node_modules` available; returns the cached directory to bind read-only, or undefined
   * when the install ran in the workspace itself (no lockfile, or the app's own install scripts).
   */
  async provide(
    profile: RuntimeProfile,
    workspace: string,
    install: InstallRunner,
  ): Promise<string | undefined> {
    if (!profile.install) return undefined;
    const pkgText = await readFile(join(workspace, 'package.json'), 'utf8').catch(() => '');
    const scripts = (JSON.parse(pkgText || '{}') as { scripts?: Record<string, string> }).scripts ?? {};
    if (
      !profile.lockfile ||
      ROOT_INSTALL_SCRIPTS.some((s) => s in scripts) ||
      existsSync(join(workspace, 'node_modules'))
    ) {
      await install(profile.install, workspace, [this.npmCacheDir]);
      return undefined;
    }
    const lock = await readFile(join(workspace, profile.lockfile));
    const key = createHash('sha256')
      .update(lock)
      .update('\0')
      .update(pkgText)
      .update('\0')
      .update(profile.install)
      .update('\0')
      .update(process.version)
      .digest('hex');
    let ready = this.inFlight.get(key);
    if (!ready) {
      ready = this.fill(key, profile, workspace, install).finally(() => this.inFlight.delete(key));
      this.inFlight.set(key, ready);
    }
    const modules = await ready;
    await symlink(modules, join(workspace, 'node_modules'), 'dir');
    return join(this.cacheDir, key);
  }

  /** Installs into a private staging directory, then renames it into place, so a half install is never used. */
  private async fill(
    key: string,
    profile: RuntimeProfile,
    workspace: string,
    install: InstallRunner,
  ): Promise<string> {
    const entry = join(this.cacheDir, key);
    const modules = join(entry, 'node_modules');
    if (existsSync(modules)) return modules;
    const staging = join(this.cacheDir, `.staging-${key.slice(0, 12)}-${randomUUID()}`);
    await mkdir(staging, { recursive: true });
    await mkdir(this.npmCacheDir, { recursive: true });
    try {
      for (const file of ['package.json', profile.lockfile!, '.npmrc']) {
        if (existsSync(join(workspace, file))) await copyFile(join(workspace, file), join(staging, file));
      }
      await install(profile.install!, staging, [this.npmCacheDir]);
      await mkdir(entry, { recursive: true });
      await rename(join(staging, 'node_modules'), modules).catch(async (error: NodeJS.ErrnoException) => {
        if (!existsSync(modules)) throw error; // another Twinbox process won the race: use its copy
      });
      return modules;
    } finally {
      await rm(staging, { recursive: true, force: true });
    }
  }
}
