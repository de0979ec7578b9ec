import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';
import type { Test } from 'tap';
import { inCI } from './ci.ts';

/** Debian's Chromium (.ci/run installs it). */
export const CHROMIUM = '/usr/bin/chromium';

/**
 * The `skip` option of a browser test: a developer without Chromium skips; CI installs it (.ci/run), so
 * there a missing browser fails instead.
 */
export const chromiumSkip =
  existsSync(CHROMIUM) || inCI() ? false : `${CHROMIUM} is not installed (apt-get install chromium)`;

/**
 * Headless Chromium, closed when the test ends. Background networking, component updates and sync are
 * off: this machine's network is closed, and they would only fail at every start.
 */
export async function launchChromium(t: Test): Promise<Browser> {
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
  t.teardown(() => browser.close());
  return browser;
}
