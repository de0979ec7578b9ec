/**
 * Compiles the validators of every Stripe operation (vendor-schema.ts) before a test starts a twin.
 * Compiling Stripe's description takes seconds on a loaded machine; done lazily, on the first response
 * of each operation, it would hold a keep-alive connection idle past the twin's 5 s keep-alive timeout,
 * and the SDK's next request on that connection would meet a reset.
 */
import { readFileSync } from 'node:fs';
import { checkResponse, vendorSchemaDir, type VendorSource } from './vendor-schema.ts';

export function precompileStripeSchemas(): void {
  const source = JSON.parse(readFileSync(`${vendorSchemaDir('stripe')}source.json`, 'utf8')) as VendorSource;
  for (const operation of source.operations) {
    const [method, path] = operation.split(' ');
    // checkResponse compiles and caches the schema of each status it checks; it records nothing.
    checkResponse('stripe', { method: method!, path: path!, status: 200, body: {} });
    checkResponse('stripe', { method: method!, path: path!, status: 400, body: {} });
  }
}
