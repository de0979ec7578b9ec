import { readFileSync } from 'node:fs';

// Set by the bundler (action/build.ts) to package.json's version; absent when run from source.
declare const TWINBOX_CLI_VERSION: string | undefined;

/** The CLI's version: package.json's, fixed into the bundle when it is built. */
export function cliVersion(): string {
  if (typeof TWINBOX_CLI_VERSION === 'string') return TWINBOX_CLI_VERSION;
  const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
  return String(manifest.version);
}
