/**
 * The `undici` package, for the router's upstream pools (upstream.ts), loaded only after the process's
 * built-in `fetch` has its own dispatcher, and only when first used.
 *
 * Loading the package installs an Agent of its own as the process's global dispatcher when none is set
 * yet, and Node's built-in `fetch` then sends every request through that Agent of another undici version.
 * Node 20's fetch hands it a Content-Length header it refuses ("invalid content-length header"): a POST
 * through the Stripe SDK in the same process failed that way. Touching one of the fetch globals loads
 * Node's own undici first, which sets its own Agent; the package then leaves it in place.
 *
 * Why a `require` and not an `import` after the touch: a bundle (the test suite's, test/runner/bundle.ts)
 * keeps packages as imports, and a module's imports all run before any of its code, so an `import` of the
 * package ran first whatever came before it in the source. test/router/node-fetch-first.test.ts.
 */
import { createRequire } from 'node:module';

void globalThis.Headers;

let loaded: typeof import('undici') | undefined;

/**
 * The package, loaded on the first call: only a router that proxies a request needs it, and loading it
 * took about 70 ms of a Twinbox process's start (the suite starts hundreds that never proxy one).
 */
export function undici(): typeof import('undici') {
  loaded ??= createRequire(import.meta.url)('undici') as typeof import('undici');
  return loaded;
}
