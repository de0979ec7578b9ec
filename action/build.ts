// Builds dist/ (committed): the Action (dist/index.js) and the `twinbox` CLI (dist/cli.js).
// Deterministic on purpose: CI rebuilds and fails when the result differs from what is committed.
import { chmod, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { build, type BuildOptions } from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));

// The bundles are ESM (our package is "type": "module", and @actions/* ship ESM only); a few bundled
// CommonJS dependencies still call `require` for Node built-ins, which ESM lacks, hence createRequire.
const requireShim =
  "import { createRequire as __twinboxCreateRequire } from 'node:module';\nconst require = __twinboxCreateRequire(import.meta.url);";

const common: BuildOptions = {
  absWorkingDir: root,
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  // Paths in the output's comments are relative to absWorkingDir, so any checkout builds the same bytes.
  legalComments: 'eof',
  charset: 'utf8',
  logLevel: 'warning',
};

await build({
  ...common,
  entryPoints: ['action/index.ts'],
  outfile: 'dist/index.js',
  banner: { js: requireShim },
});
// Only the version, not the whole manifest: a new dependency must not change the bundle.
const { version } = JSON.parse(await readFile(`${root}package.json`, 'utf8')) as { version: string };
await build({
  ...common,
  entryPoints: ['client/cli.ts'],
  outfile: 'dist/cli.js',
  banner: { js: `#!/usr/bin/env node\n${requireShim}` },
  define: { TWINBOX_CLI_VERSION: JSON.stringify(version) },
});
// git records the executable bit, so set it the same way on every build.
await chmod(`${root}dist/cli.js`, 0o755);
await chmod(`${root}dist/index.js`, 0o644);
