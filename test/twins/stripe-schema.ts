/**
 * Compiles the validators of every Stripe operation (vendor-schema.ts) of one version's description, once
 * a process, before the first call of a stripe-node client in it (`stripeClient` calls it).
 * Compiling Stripe's description takes seconds on a loaded machine; done lazily, on the first response
 * of each operation, it would hold a keep-alive connection idle past the twin's 5 s keep-alive timeout,
 * and the SDK's next request on that connection would meet a reset.
 */
import { readFileSync } from 'node:fs';
import { checkResponse, vendorSchemaDir, type VendorSource } from './vendor-schema.ts';

/** The descriptions compiled so far: `stripe` (the current version) or `stripe@<version>`. */
const compiled = new Set<string>();

export function precompileStripeSchemas(description = 'stripe'): void {
  if (compiled.has(description)) return;
  compiled.add(description);
  const source = JSON.parse(
    readFileSync(`${vendorSchemaDir(description)}source.json`, 'utf8'),
  ) as VendorSource;
  for (const operation of source.operations) {
    const [method, path] = operation.split(' ');
    // checkResponse compiles and caches the schema of each status it checks; it records nothing.
    checkResponse(description, { method: method!, path: path!, status: 200, body: {} });
    checkResponse(description, { method: method!, path: path!, status: 400, body: {} });
  }
}

/**
 * `fetch`, tried once more when a kept-alive connection turns out to have been closed by the twin while
 * it sat idle (the request never reached the twin, so sending it again cannot apply it twice). A test
 * that spends longer than the twin's keep-alive timeout between two calls (compiling schemas, a browser)
 * would otherwise fail on a connection it never asked to reuse.
 */
export const freshConnectionFetch: typeof fetch = async (input, init) => {
  try {
    return await fetch(input, init);
  } catch (error) {
    const code = (error as { cause?: { code?: string } }).cause?.code;
    if (code !== 'ECONNRESET' && code !== 'UND_ERR_SOCKET') throw error;
    return fetch(input, init);
  }
};
