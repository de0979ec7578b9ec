import t from 'tap';
import { chromiumSkip, launchChromium } from '../helpers/chromium.ts';
import { startGitHubTwin } from '../../server/twins/github/standalone.ts';
import { signUpVerified, startIdentityTwinbox } from '../identity/helpers.ts';

t.test(
  'headless Chromium: a GitHub login conflict lands on /login showing the detail, with no script injection',
  { skip: chromiumSkip },
  async (t) => {
    const gh = await startGitHubTwin({
      seed: {
        users: [
          { login: 'octocat', email: 'octocat@example.com' },
          { login: 'hubot', email: 'hubot@example.com' },
        ],
      },
    });
    t.teardown(() => gh.close());
    const twinbox = await startIdentityTwinbox(t, {
      GITHUB_CLIENT_ID: 'Iv1.browser',
      GITHUB_CLIENT_SECRET: 'browser-secret-123',
      GITHUB_OAUTH_URL: gh.baseUrl,
      GITHUB_API_URL: gh.baseUrl,
    });
    await twinbox.server.start();
    const origin = `http://127.0.0.1:${twinbox.server.info.port}`;
    await gh.admin.seed({
      oauth_apps: [
        {
          client_id: 'Iv1.browser',
          client_secret: 'browser-secret-123',
          name: 'Twinbox',
          redirect_uris: [`${origin}/auth/github/callback`],
        },
      ],
    });
    // hubot@example.com is an account already connected to octocat's GitHub identity.
    const { token } = await signUpVerified(twinbox, 'hubot@example.com');
    const browser = await launchChromium(t);

    const owner = await browser.newContext();
    await owner.addCookies([
      { name: 'twinbox_session', value: token, url: origin, httpOnly: true, sameSite: 'Lax' },
    ]);
    const ownerPage = await owner.newPage();
    await gh.admin.setOAuthAutoApprove('octocat');
    await ownerPage.goto(`${origin}/integrations`);
    await ownerPage.click('text=Connect GitHub');
    await ownerPage.waitForURL(/\/integrations\?connected=github/);
    t.match(await ownerPage.textContent('body'), 'Connected as @octocat');

    // Someone signs in with hubot's GitHub, whose e-mail belongs to that account: conflict.
    const context = await browser.newContext();
    const page = await context.newPage();
    const dialogs: string[] = [];
    page.on('dialog', (dialog) => {
      dialogs.push(dialog.message());
      void dialog.dismiss();
    });
    await gh.admin.setOAuthAutoApprove('hubot');
    await page.goto(`${origin}/login`);
    await page.click('text=Sign in with GitHub');
    await page.waitForURL(/\/login\?error=scm_identity_already_linked/);
    t.match(await page.textContent('[role=alert]'), 'scm_identity_already_linked');
    t.match(await page.textContent('#detail'), /already linked to another Twinbox account/);

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
