import { mkdir, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import t, { type Test } from 'tap';
import type { BrowserContext, Page } from 'playwright-core';
import { chromiumSkip, launchChromium } from '../helpers/chromium.ts';
import { deployingTwinbox, exampleFiles, githubToDeployFrom } from '../helpers/deploy.ts';
import { latestCode } from '../identity/helpers.ts';
import type { TestTwinbox } from '../helpers/twinbox.ts';
import { requireHost } from '../security/isolation-fixtures.ts';

/**
 * The dashboard as a person uses it, in Debian's Chromium, against a listening Twinbox with the real deploy
 * engine: typing and clicking only, no cookie put in the browser by the test. The test plays the person's
 * other tools: their mailbox (the outbox) and their CLI (API calls with the key the API-keys page showed).
 *
 * `TWINBOX_SCREENSHOTS=1` also writes the screenshots shown in docs/web.md to docs/images/.
 */

const VIEWPORT = { width: 1200, height: 800 };
const IMAGES = fileURLToPath(new URL('../../docs/images/', import.meta.url));
/** A deploy with `npm ci` of the stripe SDK on a loaded machine: generous. */
const DEPLOY_MS = 240_000;

async function screenshot(t: Test, page: Page, name: string): Promise<void> {
  const png = await page.screenshot({ fullPage: false });
  t.equal(png.subarray(1, 4).toString('latin1'), 'PNG', `${name}.png taken`);
  if (process.env.TWINBOX_SCREENSHOTS === '1') {
    await mkdir(IMAGES, { recursive: true });
    await writeFile(`${IMAGES}${name}.png`, png);
  }
}

/** The visible text of the element, whitespace collapsed. */
async function text(page: Page, selector: string): Promise<string> {
  return ((await page.locator(selector).first().textContent()) ?? '').replace(/\s+/g, ' ').trim();
}

/** Signs up through the pages (e-mail, then the code from the outbox); lands on /dashboard. */
async function signUp(page: Page, tb: TestTwinbox, origin: string, email: string): Promise<void> {
  await page.goto(`${origin}/signup`);
  await page.getByLabel('E-mail').fill(email);
  await page.getByRole('button', { name: 'Sign up' }).click();
  await page.waitForSelector('text=Enter your code');
  await page.getByLabel('Code').fill(await latestCode(tb, email, 0));
  await page.getByRole('button', { name: 'Confirm and sign in' }).click();
  await page.waitForURL(`${origin}/dashboard`);
}

/** An API call as the person's CLI makes it: Bearer key, from outside the browser. */
async function api(origin: string, key: string, method: string, path: string, body?: unknown) {
  const response = await fetch(`${origin}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: response.status, body: (await response.json()) as Record<string, any> };
}

t.test(
  'a person watches a sandbox deploy, inspects its Stripe twin and timeline, extends and deletes it',
  { skip: chromiumSkip },
  async (t) => {
    // The real deploy engine with full isolation; the npm registry for the example's `stripe`.
    if (!requireHost(t, { bwrap: true, root: true })) return;
    const gh = await githubToDeployFrom(t);
    await gh.createRepo({ owner: 'octocat', name: 'billing', files: await exampleFiles('stripe-sdk') });
    const tb = await deployingTwinbox(t, gh, { TWINBOX_AUTH_IP_LIMIT: '1000' });
    const origin = `http://127.0.0.1:${tb.server.info.port}`;
    const browser = await launchChromium(t);
    const newContext = async (): Promise<BrowserContext> => {
      const context = await browser.newContext({ viewport: VIEWPORT });
      t.teardown(() => context.close());
      return context;
    };
    const page = await (await newContext()).newPage();
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    page.on('console', (message) => {
      // The app's own page asks for a favicon it does not have; Twinbox's pages must log nothing.
      if (message.type() === 'error' && message.location().url.startsWith(origin)) {
        errors.push(`${message.text()} ${message.location().url}`);
      }
    });

    // Sign up, then make an API key on its page.
    const email = 'ada@example.com';
    await signUp(page, tb, origin, email);
    t.match(await text(page, 'main'), 'No sandboxes yet');
    await page.getByRole('link', { name: 'API keys' }).click();
    await page.getByLabel('Name').fill('cli');
    await page.getByRole('button', { name: 'Create API key' }).click();
    await page.waitForSelector('#new-key');
    const key = await text(page, '#new-key');
    t.match(key, /^twinbox_sk_/);

    // The CLI creates a sandbox with that key; the person opens its page from the list at once.
    const created = await api(origin, key, 'POST', '/sandboxes', {
      repo: 'octocat/billing',
      branch: 'main',
      twins: ['stripe'],
      // Room under the free plan's 60-minute lifetime for the extension below.
      ttl_minutes: 30,
    });
    t.equal(created.status, 201, created.body.detail ?? 'created');
    const id: string = created.body.sandbox_id;
    await page.getByRole('link', { name: 'Sandboxes' }).first().click();
    await page.waitForURL(`${origin}/dashboard`);
    await page.getByRole('link', { name: 'octocat/billing' }).click();
    await page.waitForURL(`${origin}/dashboard/sandboxes/${id}`);
    const first = await page.locator('#sandbox-head [data-status]').getAttribute('data-status');
    t.not(first, 'ready', `the page opened while the sandbox was ${first}`);
    let loads = 0;
    page.on('load', () => loads++);

    // Without a reload: the status turns ready and the log lines arrive.
    await page.waitForSelector('#sandbox-head [data-status="ready"]', { timeout: DEPLOY_MS });
    await page.waitForFunction(
      () => (globalThis as any).document.getElementById('log').textContent.includes('ready in'),
      undefined,
      { timeout: 30_000 },
    );
    t.equal(loads, 0, 'no reload');
    await screenshot(t, page, 'sandbox');
    t.match(await text(page, '#log'), /\[twinbox [^\]]+\] deploying octocat\/billing branch main/);
    const appUrl = (await page.locator('#app-url a').getAttribute('href'))!;
    t.match(appUrl, new RegExp(`^http://${id}\\.localhost:\\d+`), 'the app link appeared');
    t.match(await text(page, '#sandbox-details'), 'STRIPE_SECRET_KEY');
    t.notMatch(await text(page, '#sandbox-details'), /sk_test_/, 'values hidden');
    await page.getByRole('button', { name: 'Reveal values' }).click();
    await page.waitForSelector('td[data-var="STRIPE_SECRET_KEY"] code');
    t.match(await text(page, 'td[data-var="STRIPE_SECRET_KEY"]'), /^sk_test_/, 'revealed on request');
    await page.getByRole('button', { name: 'Hide values' }).click();

    // The app, in another tab: one request that creates a Stripe customer.
    const app = await page.context().newPage();
    // As a person would, once the page has finished loading (its own requests over), types and submits.
    await app.goto(appUrl, { waitUntil: 'networkidle' });
    await app.getByLabel('E-mail').fill('grace@example.com');
    await app.getByRole('button', { name: 'Add customer' }).click();
    await app.waitForSelector('li:has-text("grace@example.com")');
    await app.close();

    // The Stripe twin's request log shows the app's call.
    await page.getByRole('link', { name: 'Twin: stripe' }).click();
    await page.waitForURL(`${origin}/dashboard/sandboxes/${id}/twins/stripe`);
    const call = page
      .locator('table.requests tbody tr', { hasText: 'POST' })
      .filter({ hasText: '/v1/customers' });
    await call.first().waitFor();
    t.match(await call.first().textContent(), /200/);
    await call.first().getByText('Bodies').click();
    t.match(await text(page, 'table.requests pre.body'), 'grace@example.com', 'the request body');
    t.match(await text(page, 'table[aria-label="Customers"]'), 'grace@example.com', 'the state summary');
    await screenshot(t, page, 'twin-inspector');

    // The timeline: the app request, the twin call under it, the customer it created under that.
    await page.getByRole('link', { name: 'Timeline' }).click();
    await page.waitForURL(`${origin}/dashboard/sandboxes/${id}/timeline`);
    const request = page.locator('li.tl-app_request', { hasText: 'POST /customers → 303' });
    await request.waitFor({ timeout: 30_000 });
    const twinCall = request.locator('li.tl-twin_call', { hasText: 'POST /v1/customers → 200' });
    await twinCall.waitFor({ timeout: 30_000 });
    const change = twinCall.locator('li.tl-state_change');
    await change.waitFor({ timeout: 30_000 });
    t.match(await change.textContent(), /customer cus_\w+ created/);
    t.match(await text(page, '#timeline'), 'deploy step');
    await request.scrollIntoViewIfNeeded();
    await screenshot(t, page, 'timeline');

    // Extend, then delete through the confirmation.
    await page.getByRole('link', { name: 'Overview' }).click();
    const before = await page.locator('#sandbox-head time').nth(1).getAttribute('datetime');
    await page.getByLabel('Extend by').selectOption('15');
    await page.getByRole('button', { name: 'Extend' }).click();
    await page.waitForURL(`${origin}/dashboard/sandboxes/${id}?done=extended`);
    t.match(await text(page, '[role=status]'), 'Extended');
    const after = await page.locator('#sandbox-head time').nth(1).getAttribute('datetime');
    t.ok(Date.parse(after!) - Date.parse(before!) >= 14 * 60_000, 'a quarter of an hour later');

    // A second account cannot see it.
    const stranger = await (await newContext()).newPage();
    await signUp(stranger, tb, origin, 'mallory@example.com');
    const response = await stranger.goto(`${origin}/dashboard/sandboxes/${id}`);
    t.equal(response?.status(), 404, "another account's sandbox page is a 404");
    t.equal(await text(stranger, 'h1'), 'Not found');

    // The list, with this sandbox and a failed one beside it.
    const failed = await api(origin, key, 'POST', '/sandboxes', {
      repo: 'octocat/no-such-repo',
      branch: 'main',
    });
    t.equal(failed.status, 201);
    await page.getByRole('link', { name: 'Sandboxes' }).first().click();
    await page.waitForURL(`${origin}/dashboard`);
    for (let i = 0; i < 100 && !(await text(page, 'table.sandboxes')).includes('failed'); i++) {
      await page.getByRole('button', { name: 'Filter' }).click();
      await page.waitForLoadState();
    }
    t.match(await text(page, 'table.sandboxes'), 'failed');
    t.match(await text(page, 'table.sandboxes'), 'ready');
    await screenshot(t, page, 'dashboard');
    await page.getByLabel('Status').selectOption('ready');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(`${origin}/dashboard?status=ready&repo=`);
    t.notMatch(await text(page, 'table.sandboxes'), 'failed', 'the filter');

    await page.getByRole('link', { name: 'octocat/billing' }).click();
    await page.getByRole('link', { name: 'Delete this sandbox…' }).click();
    await page.waitForSelector('text=Delete this sandbox?');
    await page.getByRole('button', { name: 'Delete sandbox' }).click();
    await page.waitForURL(`${origin}/dashboard/sandboxes/${id}?done=deleted`);
    t.equal(await page.locator('#sandbox-head [data-status]').getAttribute('data-status'), 'deleted');
    t.equal((await api(origin, key, 'GET', `/sandboxes/${id}`)).body.status, 'deleted', 'the API agrees');

    // Sign out: the sandbox page asks for sign-in again, and brings the person back.
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(`${origin}/login?signed_out=1`);
    await page.goto(`${origin}/dashboard/sandboxes/${id}`);
    await page.waitForURL(`${origin}/login?next=${encodeURIComponent(`/dashboard/sandboxes/${id}`)}`);
    t.same(errors, [], 'no script errors, no CSP violations');
  },
);
