import t from 'tap';
import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromiumSkip, launchChromium } from '../helpers/chromium.ts';
import { call, createUser } from '../helpers/twinbox.ts';
import { deployingTwinbox, deploySandbox, githubToDeployFrom, until } from '../helpers/deploy.ts';
import { requireHost } from '../security/isolation-fixtures.ts';

// Stripe's Checkout quickstart as Stripe writes it (test/e2e/apps/stripe-checkout/): stripe-node with its
// default configuration (it calls https://api.stripe.com, which the sandbox's interception hands to its
// Stripe twin), Express on the fixed port 4242, its own URL from DOMAIN, a /webhook route that verifies
// checkout.session.completed with constructEvent. The twinbox.yml below is all that says "Twinbox".
const APP = fileURLToPath(new URL('./apps/stripe-checkout/', import.meta.url));
const TWINBOX_YML = [
  'port: 4242',
  'env:',
  "  DOMAIN: '${APP_URL}'",
  'webhooks:',
  '  stripe: /webhook',
  '',
].join('\n');

async function appFiles(): Promise<Record<string, string>> {
  const files: Record<string, string> = {};
  const walk = async (dir: string) => {
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) await walk(path);
      else files[relative(APP, path)] = await readFile(path, 'utf8');
    }
  };
  await walk(APP);
  return files;
}

interface Delivery {
  event: string;
  url: string;
  state: string;
  status_code?: number;
}

t.test(
  'the Stripe Checkout quickstart, unmodified: Buy, the twin pays 4242 and declines 0002, the webhook verifies',
  { skip: chromiumSkip, timeout: 600_000 },
  async (t) => {
    if (!requireHost(t, { bwrap: true, root: true, cgroups: true })) return;
    const gh = await githubToDeployFrom(t);
    const files = await appFiles();
    t.match(
      files['server.js'],
      "require('stripe')(process.env.STRIPE_SECRET_KEY)",
      'the default configuration',
    );
    await gh.createRepo({
      owner: 'octocat',
      name: 'checkout',
      files: { ...files, '.github/twinbox.yml': TWINBOX_YML },
    });
    const tb = await deployingTwinbox(t, gh);
    const user = await createUser(tb);
    const logs = async () =>
      (await call(tb, { url: `/sandboxes/${sandbox.sandbox_id}/logs`, token: user.key })).body as string;

    // Chromium starts while the sandbox deploys: neither waits on the other. Its failure, if any, is
    // thrown where the browser is first needed.
    const browserStarting = launchChromium(t);
    browserStarting.catch(() => {});
    // Installs express and stripe from the registry through the sandbox's install proxy.
    const sandbox = await deploySandbox(tb, user, { repo: 'octocat/checkout', branch: 'main' }, 400_000);
    if (sandbox.status !== 'ready') t.comment(await logs());
    t.equal(sandbox.status, 'ready', sandbox.error ?? '');
    t.equal(sandbox.isolation, 'full', 'in its own network namespace');
    t.same(Object.keys(sandbox.twins), ['stripe'], 'the stripe dependency brought a Stripe twin');
    t.equal(sandbox.env_vars.DOMAIN, sandbox.app_url, 'DOMAIN: ${APP_URL}');
    const twinOrigin = new URL(sandbox.twins.stripe.base_url).origin;

    const browser = await browserStarting;
    const page = await browser.newPage();
    await page.goto(sandbox.app_url);
    t.equal(await page.title(), 'Buy cool new product', "the app's own page, on its fixed port");

    // "Buy": the app creates a Checkout Session at api.stripe.com (the twin) and redirects to its page.
    await page.getByRole('button', { name: 'Buy' }).click();
    await page.waitForURL((url) => url.origin === twinOrigin && url.pathname.startsWith('/c/pay/cs_test_'), {
      timeout: 60_000,
    });
    const sessionId = new URL(page.url()).pathname.slice('/c/pay/'.length);
    t.equal(await page.getByTestId('total').textContent(), '$20.00');

    const fill = async (card: string) => {
      await page.getByLabel('Email').fill('');
      await page.getByLabel('Email').pressSequentially('person@example.com');
      await page.getByLabel('Card number').pressSequentially(card);
      await page.getByLabel('Expiration date (MM / YY)').pressSequentially('12 / 34');
      await page.getByLabel('Security code (CVC)').pressSequentially('123');
      await page.getByLabel('Cardholder name').fill('');
      await page.getByLabel('Cardholder name').pressSequentially('Pat Person');
      await page.getByRole('button', { name: 'Pay' }).click();
    };
    await fill('4000 0000 0000 0002');
    await page.getByRole('alert').waitFor({ timeout: 60_000 });
    t.equal(await page.getByRole('alert').textContent(), 'Your card was declined.');

    await fill('4242 4242 4242 4242');
    await page.waitForURL(`${sandbox.app_url}/success.html`, { timeout: 60_000 });
    t.equal(await page.title(), 'Thanks for your order!', "the app's success page, at its DOMAIN");
    t.match(await page.textContent('body'), 'We appreciate your business!');

    // The app's webhook handler verified the event (it answers 400 to a bad signature) and fulfilled it.
    let orders: Array<{ session: string; payment_status: string; amount_total: number }> = [];
    await until(
      async () => {
        orders = ((await (await fetch(`${sandbox.app_url}/orders`)).json()) as { fulfilled: typeof orders })
          .fulfilled;
        return orders.length > 0;
      },
      'the app to fulfil the order from its webhook',
      60_000,
    );
    t.same(orders, [{ session: sessionId, payment_status: 'paid', amount_total: 2000 }]);
    const admin = await fetch(`${sandbox.twins.stripe.admin_url}/webhooks`, {
      headers: { authorization: `Bearer ${sandbox.twin_admin_token}` },
    });
    const { deliveries } = (await admin.json()) as { deliveries: Delivery[] };
    t.match(
      deliveries.filter((d) => d.event === 'checkout.session.completed'),
      [{ state: 'delivered', url: /\/webhook$/, status_code: 200 }],
      "the twin's delivery log: the app answered 200",
    );

    const log = await logs();
    t.match(log, `Fulfilled Checkout Session ${sessionId}`);
    t.notMatch(log, /blocked outbound call/, 'no call left the sandbox');
  },
);
