/**
 * Compiled response validators kept on disk between test processes.
 *
 * Why: ajv turns each response schema of a vendor's description into JavaScript, and for the large ones
 * (Stripe's, with every expandable object) that was most of a twin test's CPU, paid again by every test
 * process that checks the same twin: ajv and the garbage it leaves were 60% of
 * `stripe-versions-flow.test.ts`'s profile. The suite runs on 2 cores, CPU-bound. ajv writes what it
 * compiled as a module of its own ("standalone code"): the first process to load a description compiles
 * the validator of every response it documents and stores them as one module, whose validators share the
 * code of the schemas they have in common (a module per validator repeated them: 2 MB each for Stripe's);
 * the other processes load that module instead of compiling.
 *
 * The module is found by a key of everything it is made from: the description's files (their bytes), the
 * code that rewrites and compiles them (vendor-schema.ts, this file) and ajv's and ajv-formats' versions.
 * Any change to one is another key, so a stale validator is never used. Writes are atomic (a rename), so
 * processes side by side only ever read whole modules. `VENDOR_SCHEMA_CACHE=off` compiles in every
 * process, as needed.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ValidateFunction } from 'ajv';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/**
 * In node_modules' cache folder, as other tools keep theirs: `npm ci` starts it afresh.
 * `VENDOR_SCHEMA_CACHE_DIR` puts it elsewhere (the cache's own test).
 */
const cacheRoot = (env: NodeJS.ProcessEnv = process.env) =>
  env.VENDOR_SCHEMA_CACHE_DIR || join(ROOT, 'node_modules', '.cache', 'twinbox-vendor-schema');
/** What the stored modules require for the formats (see vendor-schema.ts's `code.formats`). */
export const FORMATS_MODULE = 'twinbox:vendor-schema-formats';

const requireHere = createRequire(import.meta.url);
const OWN_CODE = ['vendor-schema.ts', 'vendor-schema-cache.ts'].map((f) =>
  readFileSync(fileURLToPath(new URL(f, import.meta.url))),
);
/** ajv's and ajv-formats' versions: either one changes the code a schema compiles to. */
const VERSIONS = ['ajv', 'ajv-formats']
  .map((name) => (requireHere(`${name}/package.json`) as { version: string }).version)
  .join('\0');

export const cacheEnabled = (env: NodeJS.ProcessEnv = process.env) => env.VENDOR_SCHEMA_CACHE !== 'off';

/** One description's validators: a folder named by the key of what they are compiled from. */
export class ValidatorCache {
  readonly dir: string;

  constructor(
    twin: string,
    /** The description's own files, as read. */
    inputs: string[],
    private readonly formats: unknown,
    root = cacheRoot(),
  ) {
    const hash = createHash('sha256').update(`${VERSIONS}\0`);
    for (const code of OWN_CODE) hash.update(code).update('\0');
    for (const input of inputs) hash.update(input).update('\0');
    // A twin's name (`stripe@2022-11-15`) names its folder; a character a path could take otherwise is `_`.
    const folder = join(root, twin.replace(/[^\w@.-]/g, '_'));
    this.dir = join(folder, hash.digest('hex').slice(0, 24));
    if (cacheEnabled()) pruneSiblings(folder, this.dir);
  }

  private get file(): string {
    return join(this.dir, 'validators.cjs');
  }

  /** How many modules this process loaded from the cache, and how many it stored. */
  static readonly counts = { loaded: 0, stored: 0 };

  /** The stored validators, by the pointer of their schema, or undefined. */
  read(): Map<string, ValidateFunction> | undefined {
    if (!cacheEnabled()) return undefined;
    let code: string;
    try {
      code = readFileSync(this.file, 'utf8');
    } catch {
      return undefined;
    }
    const module = { exports: {} as Record<string, ValidateFunction> };
    const require = (id: string) => (id === FORMATS_MODULE ? this.formats : requireHere(id));
    // The module as CommonJS would run it, with its `require` resolving ajv's runtime from here.
    new Function('require', 'module', 'exports', code)(require, module, module.exports);
    ValidatorCache.counts.loaded++;
    return new Map(Object.entries(module.exports));
  }

  /** Stores ajv's standalone module of the validators; best effort (a read-only disk compiles each time). */
  write(code: string): void {
    if (!cacheEnabled()) return;
    const partial = `${this.file}.${process.pid}.partial`;
    try {
      mkdirSync(this.dir, { recursive: true });
      writeFileSync(partial, code);
      renameSync(partial, this.file);
      ValidatorCache.counts.stored++;
    } catch {
      rmSync(partial, { force: true });
    }
  }
}

/** Folders of the same twin's older keys go once a day has passed since they were last written. */
function pruneSiblings(folder: string, keep: string): void {
  let names: string[];
  try {
    names = readdirSync(folder);
  } catch {
    return;
  }
  for (const name of names) {
    const dir = join(folder, name);
    try {
      if (dir !== keep && statSync(dir).mtimeMs < Date.now() - 24 * 3600_000) {
        rmSync(dir, { recursive: true, force: true });
      }
    } catch {}
  }
}
