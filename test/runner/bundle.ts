// The test files as plain JavaScript, for `npm test`. A test process that runs a TypeScript file needs a
// loader (tsx), and tap's runner adds its processinfo and mock loaders besides: on Node 20 every one of
// them sends each module a process loads (some 1,500 for a file that starts Twinbox) through a hooks
// thread. Measured on the 2-core machines, that was 1-2 CPU-seconds of a test process's start, paid by each
// of ~180 files, which made up a third of the suite's CPU. A bundle of our own modules runs on plain Node.
import { join, relative } from 'node:path';
import { build, stop, type Message } from 'esbuild';
import { ownLocation } from '../../server/own-location.ts';

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
    plugins: [ownLocation],
    logLevel: 'silent',
  }).catch((error: { errors?: Message[] }) => {
    if (error.errors) throw new TestBundleError(error.errors);
    throw error;
  });
  // esbuild's service process is not needed again in this run: it goes now, not after the tests.
  await stop();
  if (result.errors.length) throw new TestBundleError(result.errors);
  return new Map(
    files.map((file) => [file, join(outdir, relative(root, join(root, file)).replace(/\.ts$/, '.mjs'))]),
  );
}
