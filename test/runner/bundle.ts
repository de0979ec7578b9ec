// The test files as plain JavaScript, for `npm test`. A test process that runs a TypeScript file needs a
// loader (tsx), and tap's runner adds its processinfo and mock loaders besides: on Node 20 every one of
// them sends each module a process loads (some 1,500 for a file that starts Twinbox) through a hooks
// thread. Measured on the 2-core machines, that was 1-2 CPU-seconds of a test process's start, paid by each
// of ~180 files, which made up a third of the suite's CPU. A bundle of our own modules runs on plain Node.
import { join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build, stop, type Message, type Plugin } from 'esbuild';
import { ownLocation, requireBanner } from '../../server/own-location.ts';

/** A test file could not be bundled (a syntax or import error): reported instead of running it. */
export class TestBundleError extends Error {
  constructor(messages: Message[]) {
    super(
      `the test files could not be bundled: ${messages
        .slice(0, 5)
        .map((m) => (m.location ? `${m.location.file}:${m.location.line}: ${m.text}` : m.text))
        .join('; ')}`,
    );
    this.name = 'TestBundleError';
  }
}

/** esbuild's failure, with what it says of the files. */
function asBundleError(error: { errors?: Message[] }): never {
  if (error.errors) throw new TestBundleError(error.errors);
  throw error;
}

/**
 * tap itself, bundled into one module under `outdir`, which every test bundle imports for `tap`.
 *
 * Why: every test process loads tap, and as packages its 190 modules (26 packages) took about 0.15
 * CPU-seconds of each process's start (each resolved, read and compiled on its own): on a test of one
 * assertion, 267 -> 122 ms of user time. Why apart from the tests' bundles: in them, each of tap's frames
 * in the stack it takes for an assertion's location was mapped through the shared chunk's source map,
 * which cost more than it saved. Here it has no map; its path has `node_modules/@tapjs/` in it, so tap's
 * stack filter (@tapjs/stack's ignored packages) still leaves its frames out of a failure's location, as
 * from the package.
 */
async function bundleTap(root: string, outdir: string): Promise<string> {
  const outfile = resolve(root, outdir, 'node_modules', '@tapjs', 'bundled', 'tap.mjs');
  await build({
    absWorkingDir: root,
    stdin: {
      contents: "export * from 'tap'; export { default } from 'tap';",
      resolveDir: root,
      loader: 'js',
    },
    outfile,
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    // tap's CommonJS dependencies `require` Node's modules.
    banner: requireBanner,
    // tap's modules that look beside themselves (import.meta.url) still find their own package's files.
    plugins: [ownLocation],
    logLevel: 'silent',
  });
  return outfile;
}

/** Sends the test bundles' `tap` imports to tap's own bundle (bundleTap). */
function tapFrom(file: string): Plugin {
  return {
    name: 'twinbox-bundled-tap',
    setup(b) {
      b.onResolve({ filter: /^tap$/ }, () => ({ path: pathToFileURL(file).href, external: true }));
    },
  };
}

/**
 * Bundles each of `files` (paths relative to `root`) into `outdir`, at the same relative path with `.mjs`
 * for `.ts`, and returns those paths. Packages stay imports of the checkout's node_modules, as under tsx;
 * each module keeps its own `import.meta.url` (ownLocation), so fixtures, helpers that find the checkout's
 * root, and the Twinbox processes that tests spawn (`node --import tsx server/main.ts`) are found as
 * before. Modules the files share go to shared chunks.
 */
export async function bundleTests(
  root: string,
  files: string[],
  outdir: string,
): Promise<Map<string, string>> {
  const tap = await bundleTap(root, outdir).catch(asBundleError);
  const result = await build({
    absWorkingDir: root,
    entryPoints: files,
    outdir,
    outbase: root,
    outExtension: { '.js': '.mjs' },
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    packages: 'external',
    // Failures point at the test sources: the runner starts each file with --enable-source-maps.
    sourcemap: 'linked',
    plugins: [tapFrom(tap), ownLocation],
    logLevel: 'silent',
  }).catch(asBundleError);
  // esbuild's service process is not needed again in this run: it goes now, not after the tests.
  await stop();
  if (result.errors.length) throw new TestBundleError(result.errors);
  return new Map(
    files.map((file) => [file, join(outdir, relative(root, join(root, file)).replace(/\.ts$/, '.mjs'))]),
  );
}
