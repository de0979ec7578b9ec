import { createServer, type Server } from 'node:http';
import { mkdir, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import t, { type Test } from 'tap';
import type { BrowserContext, Page } from 'playwright-core';
import { chromiumSkip, launchChromium } from '../helpers/chromium.ts';
import { startGitHubTwin } from '../../examples/github-twin.ts';
import { latestCode, mailTo, startIdentityTwinbox, type IdentityTwinbox } from '../identity/helpers.ts';

/**
 * The identity pages as a person uses them, in Debian's Chromium: typing and clicking only, no cookie put in
 * the browser by the test and no request made behind the page's back. The test itself plays the user's
 * other tools: their mailbox (the outbox), and their CLI (an API call with the key the page showed).
 *
 * `TWINBOX_SCREENSHOTS=1` also writes the screenshots shown in docs/web.md to docs/images/.
 */

const CLIENT_ID = 'Iv1.browser';
const CLIENT_SECRET = 'browser-secret-123';
const VIEWPORT = { width: 1200, height: 800 };
const IMAGES = fileURLToPath(new URL('../../docs/images/', import.meta.url));

async function screenshot(t: Test, page: Page, name: string): Promise<void> {
  const png = await page.screenshot({ fullPage: false });
  t.equal(png.subarray(1, 4).toString('latin1'), 'PNG', `${name}.png taken`);
  if (process.env.TWINBOX_SCREENSHOTS === '1') {
    await mkdir(IMAGES, { recursive: true });
    await writeFile(`${IMAGES}${name}.png`, png);
  }
}

async function rig(t: Test) {
  const gh = await startGitHubTwin({
    seed: {
      users: [
        { login: 'octocat', name: 'The Octocat', email: 'octocat@example.com' },
        { login: 'hubot', name: 'Hubot', email: 'hubot@example.com' },
      ],
    },
  });
  t.teardown(() => gh.close());
  const twinbox = await startIdentityTwinbox(t, {
    GITHUB_CLIENT_ID: CLIENT_ID,
    GITHUB_CLIENT_SECRET: CLIENT_SECRET,
    GITHUB_OAUTH_URL: gh.baseUrl,
    GITHUB_API_URL: gh.baseUrl,
  });
  await twinbox.server.start();
  const origin = `http://127.0.0.1:${twinbox.server.info.port}`;
  await gh.admin.seed({
    oauth_apps: [
      {
        client_id: CLIENT_ID,
        client_secret: CLIENT_SECRET,
        name: 'Twinbox',
        redirect_uris: [`${origin}/auth/github/callback`],
      },
    ],
  });
  const browser = await launchChromium(t);
  const newContext = async (): Promise<BrowserContext> => {
    const context = await browser.newContext({ viewport: VIEWPORT });
    t.teardown(() => context.close());
    return context;
  };
  return { gh, twinbox, origin, newContext };
}

/** The code of the newest mail to `email`, read from the outbox as the person reads their mailbox. */
async function codeFor(twinbox: IdentityTwinbox, email: string, before: number): Promise<string> {
  return latestCode(twinbox, email, before);
}

/** The visible text of the element, whitespace collapsed. */
async function text(page: Page, selector: string): Promise<string> {
  return ((await page.locator(selector).first().textContent()) ?? '').replace(/\s+/g, ' ').trim();
}

/** An API call as the user's CLI makes it: Bearer key, from outside the browser. */
async function apiAs(origin: string, key: string, path: string) {
  const response = await fetch(`${origin}${path}`, { headers: { authorization: `Bearer ${key}` } });
  return { status: response.status, body: (await response.json()) as Record<string, any> };
}

/** A page of another site, with a form that posts to Twinbox, for the person to click. */
async function attackerSite(t: Test, action: string): Promise<string> {
  const server: Server = createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
    response.end(`<!doctype html><title>Prize</title>
      <form method="post" action="${action}">
        <input type="hidden" name="name" value="planted by evil.example" />
        <button type="submit">Claim your prize</button>
      </form>`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const { port } = server.address() as { port: number };
  // `localhost` is another site than `127.0.0.1` to the browser.
  return `http://localhost:${port}/`;
}

t.test(
  'a person signs up, signs in again, connects GitHub, makes, copies, uses and revokes an API key, signs out',
  { skip: chromiumSkip },
  async (t) => {
    const { twinbox, origin, newContext } = await rig(t);
    const email = 'hubot@example.com';
    const context = await newContext();
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin });
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    page.on('console', (message) => {
      if (message.type() === 'error') errors.push(`${message.text()} ${message.location().url}`);
    });

    // An anonymous visit to a page asks for sign-in, remembering the page.
    await page.goto(`${origin}/settings/api-keys`);
    await page.waitForURL(`${origin}/login?next=%2Fsettings%2Fapi-keys`);
    t.equal(await text(page, 'h1'), 'Sign in');
    await screenshot(t, page, 'login');

    // Sign up, from the sign-in page.
    await page.getByRole('link', { name: 'Sign up', exact: true }).last().click();
    await page.waitForURL(`${origin}/signup?next=%2Fsettings%2Fapi-keys`);
    await page.getByLabel('E-mail').fill(email);
    await screenshot(t, page, 'signup');
    await page.getByRole('button', { name: 'Sign up' }).click();
    await page.waitForSelector('text=Enter your code');
    t.match(await text(page, 'main'), `We mailed a 6-digit code to ${email}`);
    const signupCode = await codeFor(twinbox, email, 0);
    await page.getByLabel('Code').fill(signupCode);
    await screenshot(t, page, 'code');
    await page.getByRole('button', { name: 'Confirm and sign in' }).click();
    await page.waitForURL(`${origin}/settings/api-keys`);
    t.equal(await text(page, 'h1'), 'API keys', 'back on the page that asked, signed in');
    t.equal(await text(page, 'header .who'), email);

    // Sign out, then sign in again with a new code, through a page that needs it.
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(`${origin}/login?signed_out=1`);
    t.match(await text(page, '[role=status]'), 'You are signed out.');
    await page.goto(`${origin}/integrations`);
    await page.waitForURL(`${origin}/login?next=%2Fintegrations`);
    twinbox.clock.advance(61_000); // one code a minute per address
    await page.getByLabel('E-mail').fill(email);
    await page.getByRole('button', { name: 'E-mail me a sign-in code' }).click();
    await page.waitForSelector('text=Enter your code');
    const loginCode = await codeFor(twinbox, email, 1);
    await page.getByLabel('Code').fill(loginCode);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.waitForURL(`${origin}/integrations`);
    t.equal(await text(page, '#github-status'), 'Not connected.');

    // Connect GitHub: the twin's authorize page, where the person picks their account.
    await page.getByRole('link', { name: 'Connect GitHub' }).click();
    await page.waitForURL((url) => url.pathname === '/login/oauth/authorize');
    await page.getByRole('button', { name: /octocat/ }).click();
    await page.waitForURL(`${origin}/integrations?connected=github`);
    t.match(await text(page, '#github-status'), 'Connected as @octocat');
    t.match(await text(page, '[role=status]'), 'GitHub is connected as @octocat.');
    await screenshot(t, page, 'integrations');
    t.equal(
      (await mailTo(twinbox, email)).filter((m) => /GitHub/.test(m.subject)).length,
      1,
      'notice mailed',
    );

    // Create an API key: shown once, copied with the button.
    await page.getByRole('link', { name: 'API keys' }).click();
    await page.waitForURL(`${origin}/settings/api-keys`);
    await page.getByLabel('Name').fill('laptop');
    await page.getByRole('button', { name: 'Create API key' }).click();
    await page.waitForSelector('#new-key');
    const key = await text(page, '#new-key');
    t.match(key, /^twinbox_sk_\w+$/);
    const copy = page.getByRole('button', { name: 'Copy key' });
    t.ok(await copy.isVisible(), 'the script shows the copy button');
    await copy.click();
    await page.waitForSelector('#copy-status:has-text("Copied.")');
    t.equal(
      await page.evaluate(() =>
        (
          globalThis as unknown as { navigator: { clipboard: { readText(): Promise<string> } } }
        ).navigator.clipboard.readText(),
      ),
      key,
      'the clipboard holds the key',
    );
    await screenshot(t, page, 'api-keys');

    // The user's CLI uses the key.
    const me = await apiAs(origin, key, '/me');
    t.equal(me.status, 200);
    t.equal(me.body.account.email, email);
    t.equal(me.body.token_type, 'api_key');
    t.equal((await apiAs(origin, key, '/sandboxes')).status, 200);

    // The list shows when it was last used (written in the background: look again until it shows).
    let lastUsed = 'never';
    for (let i = 0; i < 50 && lastUsed === 'never'; i++) {
      await page.getByRole('link', { name: 'API keys' }).click();
      await page.waitForURL(`${origin}/settings/api-keys`);
      t.notMatch(await text(page, 'main'), key, 'the key is never shown again');
      lastUsed = await text(page, 'tbody tr td:nth-child(4)');
    }
    t.match(lastUsed, /^\d{4}-\d\d-\d\d \d\d:\d\d UTC$/, 'last used');

    // Revoke it, through the confirmation.
    await page.getByRole('link', { name: 'Revoke laptop' }).click();
    await page.waitForSelector('text=This cannot be undone');
    await screenshot(t, page, 'revoke');
    await page.getByRole('button', { name: 'Revoke key' }).click();
    await page.waitForURL(/\/settings\/api-keys\?revoked=/);
    t.match(await text(page, '[role=status]'), 'Revoked the key laptop');
    t.match(await text(page, 'tbody tr td:nth-child(5)'), /^revoked /);
    const refused = await apiAs(origin, key, '/me');
    t.equal(refused.status, 401, 'the API refuses the revoked key');

    // Sign out: pages ask for sign-in again.
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(`${origin}/login?signed_out=1`);
    await page.goto(`${origin}/settings/api-keys`);
    await page.waitForURL(`${origin}/login?next=%2Fsettings%2Fapi-keys`);
    t.equal(await text(page, 'h1'), 'Sign in');
    t.same(errors, [], 'no script errors, no CSP violations');
  },
);

t.test(
  'GitHub sign-in in the browser: back to the page that asked; a conflict shows its detail as text',
  { skip: chromiumSkip },
  async (t) => {
    const { twinbox, origin, newContext } = await rig(t);
    // hubot@example.com signs up by e-mail and connects octocat's GitHub.
    const owner = await (await newContext()).newPage();
    await owner.goto(`${origin}/signup`);
    await owner.getByLabel('E-mail').fill('hubot@example.com');
    await owner.getByRole('button', { name: 'Sign up' }).click();
    await owner.getByLabel('Code').fill(await codeFor(twinbox, 'hubot@example.com', 0));
    await owner.getByRole('button', { name: 'Confirm and sign in' }).click();
    await owner.waitForURL(`${origin}/dashboard`);
    await owner.goto(`${origin}/integrations`);
    await owner.getByRole('link', { name: 'Connect GitHub' }).click();
    await owner.getByRole('button', { name: /octocat/ }).click();
    await owner.waitForURL(`${origin}/integrations?connected=github`);

    // Another browser: a page that needs sign-in, "Sign in with GitHub" as octocat, back on that page.
    const page = await (await newContext()).newPage();
    const dialogs: string[] = [];
    page.on('dialog', (dialog) => {
      dialogs.push(dialog.message());
      void dialog.dismiss();
    });
    await page.goto(`${origin}/settings/api-keys`);
    await page.getByRole('link', { name: 'Sign in with GitHub' }).click();
    await page.getByRole('button', { name: /octocat/ }).click();
    await page.waitForURL(`${origin}/settings/api-keys`);
    t.equal(await text(page, 'header .who'), 'hubot@example.com', 'signed in to the linked account');

    // Signed out, GitHub sign-in as hubot, whose e-mail is the account that has octocat: the conflict.
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(`${origin}/login?signed_out=1`);
    await page.getByRole('link', { name: 'Sign in with GitHub' }).click();
    await page.getByRole('button', { name: /hubot/ }).click();
    await page.waitForURL(/\/login\?error=scm_identity_already_linked/);
    t.match(await text(page, '[role=alert]'), 'scm_identity_already_linked');
    t.match(await text(page, '#detail'), /already linked to another Twinbox account/);

    // The detail is reflected from the URL: a crafted one must stay text.
    const payload = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">';
    await page.goto(
      `${origin}/login?error=scm_identity_already_linked&detail=${encodeURIComponent(payload)}`,
    );
    t.equal(await page.textContent('#detail'), payload, 'shown as text');
    t.equal(await page.evaluate(() => (globalThis as { __pwned?: number }).__pwned), undefined);
    t.equal(await page.locator('body script, body img').count(), 0);
    t.same(dialogs, []);
  },
);

t.test(
  'a form on another site, or on a page without an origin, is refused with a page that says why',
  { skip: chromiumSkip },
  async (t) => {
    const { twinbox, origin, newContext } = await rig(t);
    const context = await newContext();
    const page = await context.newPage();
    await page.goto(`${origin}/signup`);
    await page.getByLabel('E-mail').fill('victim@example.com');
    await page.getByRole('button', { name: 'Sign up' }).click();
    await page.getByLabel('Code').fill(await codeFor(twinbox, 'victim@example.com', 0));
    await page.getByRole('button', { name: 'Confirm and sign in' }).click();
    await page.waitForURL(`${origin}/dashboard`);
    const account = (await twinbox.store.accounts.findBy('email', 'victim@example.com'))[0]!;

    // The signed-in victim clicks a button on another site that posts "create an API key" to Twinbox.
    await page.goto(await attackerSite(t, `${origin}/settings/api-keys`));
    await page.getByRole('button', { name: 'Claim your prize' }).click();
    await page.waitForURL(`${origin}/settings/api-keys`);
    t.equal(await text(page, 'h1'), 'Refused');
    t.match(await text(page, '#detail'), /sent from another site/);
    await screenshot(t, page, 'refused');

    // The same form in a document without an origin (a data: URL): Origin: null.
    await page.goto(
      `data:text/html,${encodeURIComponent(`<form method="post" action="${origin}/settings/api-keys"><input type="hidden" name="name" value="planted"><button>Go</button></form>`)}`,
    );
    await page.getByRole('button', { name: 'Go' }).click();
    await page.waitForURL(`${origin}/settings/api-keys`);
    t.equal(await text(page, 'h1'), 'Refused');
    t.match(await text(page, '#detail'), /Origin: null/);
    t.same(await twinbox.apiKeys.list(account.id), [], 'no key was planted');

    // And the victim's own page still works.
    await page.goto(`${origin}/settings/api-keys`);
    await page.getByRole('button', { name: 'Create API key' }).click();
    await page.waitForSelector('#new-key');
    t.equal((await twinbox.apiKeys.list(account.id)).length, 1);
  },
);
