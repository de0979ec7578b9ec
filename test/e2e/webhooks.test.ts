import t from 'tap';
import { createHmac } from 'node:crypto';
import { Octokit } from '@octokit/rest';
import { WebClient } from '@slack/web-api';
import { call, createUser } from '../helpers/twinbox.ts';
import {
  deployingTwinbox,
  deploySandbox,
  exampleFiles,
  githubToDeployFrom,
  until,
} from '../helpers/deploy.ts';
import { requireHost } from '../security/isolation-fixtures.ts';
import { chromiumSkip, launchChromium } from '../helpers/chromium.ts';

interface Received {
  source: string;
  type: string;
  id: string;
  summary: string;
}

// The two tests are independent (a GitHub twin and a Twinbox each) and mostly wait on deploys: they run
// at once.
t.jobs = 2;

// A real deploy with full isolation (root, bubblewrap, cgroups; the npm registry for the app's `stripe`):
// the twins deliver inside the sandbox's network namespace, to the app's port there.
t.test(
  'the webhooks example app receives verified events from its Stripe, GitHub and Slack twins',
  async (t) => {
    if (!requireHost(t, { bwrap: true, root: true, cgroups: true })) return;
    const gh = await githubToDeployFrom(t);
    await gh.createRepo({ owner: 'octocat', name: 'shop', files: await exampleFiles('webhooks-app') });
    const tb = await deployingTwinbox(t, gh);
    const user = await createUser(tb);
    const sandbox = await deploySandbox(tb, user, { repo: 'octocat/shop', branch: 'main' }, 240_000);
    const logs = async () =>
      (await call(tb, { url: `/sandboxes/${sandbox.sandbox_id}/logs`, token: user.key })).body;
    if (sandbox.status !== 'ready') t.comment(await logs());
    t.equal(sandbox.status, 'ready', sandbox.error ?? '');
    t.equal(sandbox.isolation, 'full', 'the app and its twins are in their own network namespace');
    t.same(Object.keys(sandbox.twins).sort(), ['github', 'slack', 'stripe']);
    const env: Record<string, string> = sandbox.env_vars;
    t.match(env.STRIPE_WEBHOOK_SECRET, /^whsec_/, 'the app has the secrets the vendors verify with');
    t.ok(env.GITHUB_WEBHOOK_SECRET, 'GITHUB_WEBHOOK_SECRET');
    t.ok(env.SLACK_SIGNING_SECRET, 'SLACK_SIGNING_SECRET');

    const admin = async (twin: string) => {
      const response = await fetch(`${sandbox.twins[twin].admin_url}/webhooks`, {
        headers: { authorization: `Bearer ${sandbox.twin_admin_token}` },
      });
      return (await response.json()) as {
        target: { url: string } | null;
        deliveries: Array<{ event: string; state: string; url: string; attempts: unknown[] }>;
      };
    };
    const paths = {
      stripe: '/api/webhooks/stripe',
      github: '/api/webhooks/github',
      slack: '/api/slack/events',
    };
    for (const [twin, path] of Object.entries(paths)) {
      t.same((await admin(twin)).target, { url: `http://127.0.0.1:3000${path}`, events: ['*'] }, twin);
    }
    t.match(
      await logs(),
      /webhooks: stripe events go to http:\/\/127\.0\.0\.1:3000\/api\/webhooks\/stripe \(twinbox\.yml\), signed with STRIPE_WEBHOOK_SECRET/,
    );

    const received = async (): Promise<Received[]> =>
      ((await (await fetch(`${sandbox.app_url}/events.json`)).json()) as { received: Received[] }).received;
    const arrives = (what: string, match: (r: Received) => boolean) =>
      until(async () => (await received()).some(match), what, 60_000);

    t.test(
      'Stripe Checkout in Chromium: 4000 0000 0000 0002 is declined, then 4242 4242 4242 4242 pays and the app shows paid',
      { skip: chromiumSkip },
      async (t) => {
        const browser = await launchChromium(t);
        const page = await browser.newPage();
        const twinHost = new URL(sandbox.twins.stripe.base_url).host;
        await page.goto(sandbox.app_url);
        await page.getByRole('button', { name: 'Buy a T-shirt ($20.00)' }).click();
        // The app created the session with stripe-node and sent the browser to its url: the twin's page.
        await page.waitForURL((url) => url.host === twinHost, { timeout: 60_000 });
        const sessionId = /\/c\/pay\/(cs_test_\w+)$/.exec(new URL(page.url()).pathname)?.[1];
        t.ok(sessionId, `a checkout page of the twin: ${page.url()}`);
        const order = async () =>
          (
            (await (await fetch(`${sandbox.app_url}/events.json`)).json()) as {
              orders: Record<string, { status: string }>;
            }
          ).orders[sessionId!];
        t.match(await order(), { status: 'unpaid' });

        const pay = async (card: string) => {
          for (const [label, text] of [
            ['Email', 'shopper@example.com'],
            ['Card number', card],
            ['Expiration date (MM / YY)', '12 / 34'],
            ['Security code (CVC)', '123'],
            ['Cardholder name', 'Ada Lovelace'],
          ] as const) {
            const field = page.getByLabel(label, { exact: true });
            await field.click();
            await field.press('ControlOrMeta+a');
            await field.press('Delete');
            await field.pressSequentially(text);
          }
          await page.getByRole('button', { name: 'Pay', exact: true }).click();
        };

        await pay('4000 0000 0000 0002');
        await page
          .getByRole('alert')
          .filter({ hasText: 'Your card was declined.' })
          .waitFor({ timeout: 60_000 });
        t.equal(new URL(page.url()).host, twinHost, 'the decline is shown on the checkout page');
        t.match(await order(), { status: 'unpaid' }, 'the app has not been told of any payment');

        await pay('4242 4242 4242 4242');
        await page.waitForURL(`${sandbox.app_url}/orders/${sessionId}`, { timeout: 60_000 });
        // The success page may come before the event: the app's page refreshes until its webhook arrived.
        await page.locator('#status[data-status="paid"]').waitFor({ timeout: 60_000 });
        t.match(await page.locator('body').innerText(), /Confirmed by Stripe's signed event evt_\w+/);
        const events = await received();
        t.ok(
          events.some(
            (r) =>
              r.source === 'stripe' && r.type === 'checkout.session.completed' && r.summary === sessionId,
          ),
          'checkout.session.completed reached the app, verified by constructEvent',
        );
        const deliveries = (await admin('stripe')).deliveries.filter(
          (d) => d.event === 'checkout.session.completed',
        );
        t.match(deliveries, [{ state: 'delivered', url: 'http://127.0.0.1:3000/api/webhooks/stripe' }]);
      },
    );

    t.test('GitHub: an issue opened with Octokit reaches the app as a verified issues.opened', async (t) => {
      const octokit = new Octokit({ baseUrl: sandbox.twins.github.base_url, auth: env.GITHUB_TOKEN });
      const me = await octokit.rest.users.getAuthenticated();
      await octokit.rest.repos.createForAuthenticatedUser({ name: 'storefront' });
      const issue = await octokit.rest.issues.create({
        owner: me.data.login,
        repo: 'storefront',
        title: 'Checkout button is blue',
      });
      await arrives('issues.opened at the app', (r) => r.source === 'github' && r.type === 'issues.opened');
      const seen = (await received()).find((r) => r.type === 'issues.opened')!;
      t.equal(seen.summary, issue.data.title);
      const deliveries = (await admin('github')).deliveries.filter((d) => d.event === 'issues');
      t.match(deliveries, [{ state: 'delivered', url: 'http://127.0.0.1:3000/api/webhooks/github' }]);
    });

    t.test(
      'Slack: a message posted with @slack/web-api reaches the app as a verified message event',
      async (t) => {
        const slack = new WebClient(env.SLACK_BOT_TOKEN, {
          slackApiUrl: `${sandbox.twins.slack.base_url}/api/`,
        });
        const posted = await slack.chat.postMessage({ channel: 'general', text: 'Order shipped' });
        t.equal(posted.ok, true);
        await arrives(
          'the message event at the app',
          (r) => r.source === 'slack' && r.summary === 'Order shipped',
        );
        t.match(
          (await received()).find((r) => r.source === 'slack'),
          { type: 'message', id: /^Ev/ },
        );
        t.match((await admin('slack')).deliveries, [{ event: 'message', state: 'delivered' }]);
      },
    );

    t.test('the app believes only signed events: forged ones are refused', async (t) => {
      const body = JSON.stringify({ action: 'opened', issue: { title: 'forged' } });
      const forged = await fetch(`${sandbox.app_url}/api/webhooks/github`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-github-event': 'issues',
          'x-hub-signature-256': `sha256=${createHmac('sha256', 'not-the-secret').update(body).digest('hex')}`,
        },
        body,
      });
      t.equal(forged.status, 400);
      const stripeForged = await fetch(`${sandbox.app_url}/api/webhooks/stripe`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'stripe-signature': 't=1,v1=00' },
        body: '{"type":"checkout.session.completed"}',
      });
      t.equal(stripeForged.status, 400);
      t.notOk((await received()).some((r) => r.summary === 'forged'));
    });
  },
);

// Fails at the profile step, before anything runs: no isolation needed.
t.test('a webhook path that is not a path on the app fails the sandbox with what was wrong', async (t) => {
  const gh = await githubToDeployFrom(t);
  await gh.createRepo({
    owner: 'octocat',
    name: 'misconfigured',
    files: {
      ...(await exampleFiles('zero-dep')),
      '.github/twinbox.yml': 'twins: [stripe]\nwebhooks:\n  stripe: https://attacker.example/hook\n',
    },
  });
  const tb = await deployingTwinbox(t, gh);
  const user = await createUser(tb);
  const sandbox = await deploySandbox(tb, user, { repo: 'octocat/misconfigured', branch: 'main' });
  t.equal(sandbox.status, 'failed');
  t.equal(
    sandbox.error,
    'Runtime profile: .github/twinbox.yml: "webhooks.stripe" must be a path on the app starting with / (no scheme or host), e.g. /api/webhooks/stripe, or false for no deliveries',
  );
});
