import type { Test } from 'tap';

/**
 * The one rule for "this is CI": `CI` set to anything but an empty string, `false` or `0` (CI services set
 * `CI=true`, some `CI=1`). Under CI a test whose real part is missing (bubblewrap, a namespace, Chromium,
 * PostgreSQL, a Debian client) fails; elsewhere it is skipped, saying why.
 */
export function inCI(env: NodeJS.ProcessEnv = process.env): boolean {
  const value = (env.CI ?? '').trim().toLowerCase();
  return value !== '' && value !== 'false' && value !== '0';
}

/** Fails under CI, skips (a plan of 0, with the reason) elsewhere. Call it, then return from the test. */
export function missingPart(t: Test, reason: string): void {
  if (inCI()) t.fail(`required in CI: ${reason}`);
  else t.plan(0, `skipped outside CI: ${reason}`);
}
