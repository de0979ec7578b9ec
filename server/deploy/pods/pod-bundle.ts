import { createHash, randomUUID } from 'node:crypto';
import { existsSync, readFileSync, realpathSync } from 'node:fs';
import {
  chmod,
  mkdir,
  mkdtemp,
  readFile,
  readdir,
  rename,
  rm,
  stat,
  symlink,
  utimes,
  writeFile,
} from 'node:fs/promises';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, version as esbuildVersion, type Message } from 'esbuild';
import { ownLocation, requireBanner } from '../../own-location.ts';

const REPO_ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const POD_MAIN = fileURLToPath(new URL('../../pod/main.ts', import.meta.url));

/**
 * Packages left out of the bundle, loaded from the checkout's node_modules: `emulate` finds its services'
 * chunk files next to its own entry (server/twins/engine/emulate.ts) and must be one module instance with
 * them.
 */
const EXTERNAL = ['emulate'];

/** Where esbuild places the files it returns (none is written there): their paths are taken relative to it. */
const OUT_DIR = 'pod-bundle.out';

/** Bumped when the build options below change in a way the inputs' contents do not show. */
const FORMAT = 3;

/** The sandbox pod could not be bundled: Twinbox does not start pods it cannot build (no tsx fallback). */
export class PodBundleError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(`Twinbox could not bundle its sandbox pod (server/pod/main.ts): ${message}`, options);
    this.name = 'PodBundleError';
  }
}

/** What a pod process runs: one JavaScript file, and the paths it must read besides the checkout. */
export interface PodProgram {
  /** The bundle (plain JavaScript: no TypeScript loader at pod start). */
  entry: string;
  /** The bundle's directory, which a pod must be able to read inside its sandbox. */
  dir: string;
  /** The content key the bundle is stored under (inputs, esbuild's version, these options). */
  key: string;
  /** False when a bundle of the same key was already in the data directory. */
  built: boolean;
}

export interface BundleOptions {
  /** The pod's entry module; tests bundle small programs of their own. */
  entry?: string;
  /** Other Twinboxes use `root` too (TWINBOX_POD_BUNDLE_DIR): keep their bundles of other sources a while. */
  shared?: boolean;
}

interface Manifest {
  key: string;
  /** Every file esbuild read, relative to the checkout: what the key hashes on the next start. */
  inputs: string[];
}

/** The key of a bundle made from `inputs` (relative to the checkout), or undefined when one is gone. */
function keyOf(inputs: string[]): string | undefined {
  // The checkout's own path too: a bundle names its files (import.meta.url) and packages (node_modules)
  // by absolute path, so two checkouts of the same sources sharing a root need bundles of their own.
  const hash = createHash('sha256').update(`${esbuildVersion}\0${FORMAT}\0${REPO_ROOT}\0`);
  for (const input of inputs) {
    let bytes: Buffer;
    try {
      bytes = readFileSync(resolve(REPO_ROOT, input));
    } catch {
      return undefined;
    }
    hash.update(`${input}\0${bytes.length}\0`).update(bytes);
  }
  return hash.digest('hex').slice(0, 16);
}

function describe(messages: Message[]): string {
  return messages
    .slice(0, 3)
    .map((m) => (m.location ? `${m.location.file}:${m.location.line}: ${m.text}` : m.text))
    .join('; ');
}

/** How long a bundle of other sources stays after its last use: a Twinbox sharing the root may run it. */
const KEEP_UNUSED_MS = 60 * 60 * 1000;

/** Marks a key's directory as used now, so that sweep() leaves it to the Twinboxes that run it. */
async function touch(dir: string): Promise<void> {
  const now = new Date();
  await utimes(dir, now, now).catch(() => {});
}

/**
 * Removes the bundles of earlier sources and staging left by a crash. In a root of its own a Twinbox's pods
 * never run them (they start after this): all go. In a shared one another Twinbox may, so only what nobody
 * has started from for `keepMs` goes.
 */
async function sweep(root: string, key: string, keepMs: number): Promise<void> {
  const before = Date.now() - keepMs;
  for (const name of await readdir(root)) {
    if (name === key || name === 'manifest.json' || name.endsWith('.tmp')) continue;
    const path = join(root, name);
    const modified = await stat(path).then(
      (s) => s.mtimeMs,
      () => Date.now(),
    );
    if (modified <= before) await rm(path, { recursive: true, force: true });
  }
}

/**
 * The pod and the twins it loads as one ES module under `<root>/<key>/`, made with esbuild once per
 * Twinbox (at its start) so that no pod start compiles TypeScript. `root` is `<dataDir>/pod-bundle` unless
 * TWINBOX_POD_BUNDLE_DIR names one that several Twinboxes share (the tests do: each of their Twinboxes
 * has a fresh data dir, and would otherwise each spend 1-2 CPU-seconds on the same bundle). The key
 * hashes every input file, esbuild's version and the checkout's path: a start whose sources are
 * unchanged reuses the bundle without building. A key's directory appears whole (a rename) and is never
 * rewritten, so a Twinbox whose pods run from it never sees it change; two that build the same key at
 * once keep the first. Packages stay resolvable from the bundle through a `node_modules` link to the
 * checkout's. Rejects with a PodBundleError.
 */
export async function bundlePod(root: string, options: BundleOptions = {}): Promise<PodProgram> {
  const { entry = POD_MAIN, shared = false } = options;
  const manifestPath = join(root, 'manifest.json');
  try {
    // The last build's list of inputs, hashed as this checkout has them now: a directory of that key is a
    // bundle of exactly these sources, whichever Twinbox sharing the root made it.
    const manifest = JSON.parse(await readFile(manifestPath, 'utf8')) as Manifest;
    const key = manifest.inputs.length ? keyOf(manifest.inputs) : undefined;
    const dir = key && join(root, key);
    if (key && dir && existsSync(join(dir, 'main.mjs'))) {
      await touch(dir);
      return { entry: join(dir, 'main.mjs'), dir, key, built: false };
    }
  } catch {
    // no bundle yet, or an unreadable manifest: build one
  }

  let result;
  try {
    result = await build({
      entryPoints: [entry],
      absWorkingDir: REPO_ROOT,
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      external: EXTERNAL,
      write: false,
      metafile: true,
      // The twins are imported on first use (server/twins/loaders.ts): each goes in a chunk of its own, so
      // a pod compiles and runs only the code of the twins its sandbox names.
      splitting: true,
      outdir: OUT_DIR,
      entryNames: 'main',
      chunkNames: 'chunks/[name]-[hash]',
      outExtension: { '.js': '.mjs' },
      logLevel: 'silent',
      plugins: [ownLocation],
      banner: requireBanner,
    });
  } catch (error) {
    const errors = (error as { errors?: Message[] }).errors;
    throw new PodBundleError(errors?.length ? describe(errors) : (error as Error).message, {
      cause: error,
    });
  }
  const outputs = (result.outputFiles ?? []).map((file) => ({
    path: relative(join(REPO_ROOT, OUT_DIR), file.path),
    contents: file.contents,
  }));
  if (!outputs.some((file) => file.path === 'main.mjs'))
    throw new PodBundleError('esbuild wrote no main.mjs');
  const inputs = Object.keys(result.metafile!.inputs)
    .map((input) => relative(REPO_ROOT, resolve(REPO_ROOT, input)))
    .sort();
  const key = keyOf(inputs);
  if (!key) throw new PodBundleError('an input changed while it was being bundled; start again');

  const dir = join(root, key);
  let built = true;
  try {
    await mkdir(root, { recursive: true, mode: 0o700 });
    if (existsSync(join(dir, 'main.mjs'))) {
      // Another Twinbox sharing the root made this key meanwhile: the same bytes, already in use.
      built = false;
      await touch(dir);
    } else {
      // A name of its own even for two builds in one process at one millisecond.
      const staging = await mkdtemp(join(root, '.staging-'));
      await chmod(staging, 0o755);
      await mkdir(join(staging, 'chunks'), { mode: 0o755 });
      for (const file of outputs) await writeFile(join(staging, file.path), file.contents, { mode: 0o644 });
      // Bare imports in the bundle (the external packages) resolve through here to the checkout's packages.
      await symlink(realpathSync(join(REPO_ROOT, 'node_modules')), join(staging, 'node_modules'), 'dir');
      try {
        await rename(staging, dir);
      } catch (error) {
        // Lost a race to a Twinbox building the same key: keep its directory, drop ours.
        await rm(staging, { recursive: true, force: true });
        if (!existsSync(join(dir, 'main.mjs'))) throw error;
        built = false;
      }
    }
    const manifest: Manifest = { key, inputs };
    const staged = `${manifestPath}.${process.pid}-${randomUUID()}.tmp`;
    await writeFile(staged, JSON.stringify(manifest));
    await rename(staged, manifestPath);
    await sweep(root, key, shared ? KEEP_UNUSED_MS : 0);
  } catch (error) {
    throw new PodBundleError(`writing it under ${root}: ${(error as Error).message}`, { cause: error });
  }
  return { entry: join(dir, 'main.mjs'), dir, key, built };
}
