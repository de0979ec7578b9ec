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
 * from the package. Its async-hook-domain is ./async-domain.ts.
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
    plugins: [asyncDomain, ownLocation],
    logLevel: 'silent',
  });
  return outfile;
}

/**
 * Leaves a package that a module imports with `import()` to Node, as a package. Taken in, a CommonJS
 * package imported that way is a chunk with a default export alone, where Node gives its named exports
 * too (`const { S3Client } = await import('@aws-sdk/client-s3')`). The tests import the vendors' SDKs
 * so where only some of their tests use them (test/scenarios/sdk-counts.ts).
 */
const dynamicPackagesFromNode: Plugin = {
  name: 'twinbox-dynamic-packages',
  setup(b) {
    b.onResolve({ filter: /^[^./#]/ }, (args) =>
      args.kind === 'dynamic-import' ? { path: args.path, external: true } : undefined,
    );
  },
};

/** tap's async-hook-domain, replaced by ./async-domain.ts (see there why). */
const asyncDomain: Plugin = {
  name: 'twinbox-async-domain',
  setup(b) {
    b.onResolve({ filter: /^async-hook-domain$/ }, () => ({
      path: join(import.meta.dirname, 'async-domain.ts'),
    }));
  },
};

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
 * Packages the test bundles import from node_modules instead of taking in:
 * - esbuild runs its own binary, found beside its package (the pod bundle is built in tests' processes);
 * - playwright-core reads its own package's files (its browser list, its injected scripts) at run time;
 * - emulate finds its services' chunks beside its entry and must be one instance with them (as in the pod
 *   bundle, server/deploy/pods/pod-bundle.ts);
 * - octokit-rest-20: test/twins/github-clients checks that its calls reject with the RequestError class of
 *   its own tree, which it loads from there by path; taken in, the bundle's copy would be another class.
 * tap comes from its own bundle (bundleTap).
 */
const EXTERNAL_PACKAGES = ['esbuild', 'playwright-core', 'emulate', 'octokit-rest-20'];

/**
 * Bundles each of `files` (paths relative to `root`) into `outdir`, at the same relative path with `.mjs`
 * for `.ts`, and returns those paths. Packages are taken in, but for EXTERNAL_PACKAGES, which stay imports
 * of the checkout's node_modules; each module keeps its own location (ownLocation), so fixtures, helpers
 * that find the checkout's root, packages that read their own files, and the Twinbox processes that tests
 * spawn are found as before. Modules the files share go to shared chunks.
 *
 * Why packages too: as packages, a test process resolved, read and compiled each of its packages' modules
 * on its own, and scanned each CommonJS one for its exports (cjs-module-lexer) to import it from an ES
 * module. Measured on single files: twins/stripe-checkout 7.3 -> 6.1 CPU-seconds, cli/commands (which
 * starts Twinbox processes from the bundle of server/main.ts) 16.3 -> 14.5, twins/twilio 15.2 -> 14.1.
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
    // Packages are bundled too, but for those that must stay where they are (EXTERNAL_PACKAGES).
    external: EXTERNAL_PACKAGES,
    // Their CommonJS modules `require` Node's own.
    banner: requireBanner,
    // Failures point at the test sources: the runner starts each file with --enable-source-maps. The map
    // names the sources without carrying them (they are on disk), which keeps it a tenth of the size.
    sourcemap: 'linked',
    sourcesContent: false,
    plugins: [tapFrom(tap), dynamicPackagesFromNode, ownLocation],
    logLevel: 'silent',
  }).catch(asBundleError);
  // esbuild's service process is not needed again in this run: it goes now, not after the tests.
  await stop();
  if (result.errors.length) throw new TestBundleError(result.errors);
  return new Map(
    files.map((file) => [file, join(outdir, relative(root, join(root, file)).replace(/\.ts$/, '.mjs'))]),
  );
}
