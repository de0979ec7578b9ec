import { readFile } from 'node:fs/promises';
import { extname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { transform, type Plugin } from 'esbuild';

/**
 * An esbuild plugin for bundles of the checkout's own modules and packages: each module keeps its own
 * location. `import.meta.url` (and dirname, filename), and a CommonJS module's `__dirname` and
 * `__filename`, become the source file's, so a module that finds files beside
 * itself (linear's SDL next to shape.ts, a test's fixtures, the checkout's root) finds them from inside a
 * bundle written elsewhere. Used by the pod bundle and by the test suite's bundles.
 *
 * The values are esbuild defines, applied to each module alone before it joins the bundle: they replace the
 * expressions only, never the same text inside a string (a banner's `createRequire(import.meta.url)`).
 */
export const ownLocation: Plugin = {
  name: 'twinbox-own-location',
  setup(b) {
    b.onLoad({ filter: /\.[cm]?[jt]s$/ }, async (args) => {
      const text = await readFile(args.path, 'utf8');
      const esm = text.includes('import.meta.');
      if (!esm && !text.includes('__dirname') && !text.includes('__filename')) return undefined;
      const { code } = await transform(text, {
        loader: extname(args.path).endsWith('ts') ? 'ts' : 'js',
        // A CommonJS module stays one: the bundle wraps it as it would the file itself.
        ...(esm ? { format: 'esm' as const } : {}),
        // The bundle's own map reaches back through this one to the source's lines.
        sourcemap: 'inline',
        sourcefile: args.path,
        define: {
          'import.meta.url': JSON.stringify(pathToFileURL(args.path).href),
          'import.meta.filename': JSON.stringify(args.path),
          'import.meta.dirname': JSON.stringify(join(args.path, '..')),
          // CommonJS packages' own location, which an ES module bundle has no binding for. A define
          // replaces only unbound names: a module that declares its own `__dirname` keeps it.
          __dirname: JSON.stringify(join(args.path, '..')),
          __filename: JSON.stringify(args.path),
        },
      });
      return { contents: code, loader: 'js' };
    });
  },
};

/**
 * A bundle's first line, for bundles that take in CommonJS packages (the pod's, tap's for the tests): their
 * code calls `require` for Node's modules, and an ES module has no `require` of its own.
 */
export const requireBanner = {
  js: "import { createRequire as __twinboxCreateRequire } from 'node:module'; const require = __twinboxCreateRequire(import.meta.url);",
};
