import t, { type Test } from 'tap';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readProfile } from '../../server/deploy/steps/profile.ts';
import { planWebhooks } from '../../server/deploy/steps/webhook-targets.ts';

async function profileOf(t: Test, yml: string) {
  const dir = await mkdtemp(join(tmpdir(), 'twinbox-webhooks-profile-'));
  t.teardown(() => rm(dir, { recursive: true, force: true }));
  await mkdir(join(dir, '.github'));
  await writeFile(join(dir, '.github/twinbox.yml'), yml);
  return readProfile(dir);
}

t.test('twinbox.yml webhooks: a path per twin, or false for none', async (t) => {
  const profile = await profileOf(
    t,
    'start: node server.js\nwebhooks:\n  stripe: /api/webhooks/stripe\n  github: /hooks?from=github\n  slack: false\n',
  );
  t.same(profile.webhooks, { stripe: '/api/webhooks/stripe', github: '/hooks?from=github', slack: null });
  t.same((await profileOf(t, 'start: node server.js\n')).webhooks, {}, 'absent: every twin its default');
});

t.test('twinbox.yml webhooks: anything but a path on the app is refused, with what was wrong', async (t) => {
  const refused: Array<[string, RegExp]> = [
    ['stripe: http://evil.example/hook', /"webhooks\.stripe" must be a path on the app starting with \//],
    ['stripe: //evil.example/hook', /"webhooks\.stripe" must be a path on the app/],
    ['stripe: /\\evil.example/hook', /"webhooks\.stripe" must be a path on the app/],
    ['stripe: api/hook', /"webhooks\.stripe" must be a path on the app/],
    ['stripe: /a hook', /"webhooks\.stripe" must be a path on the app/],
    ['stripe: /hook#x', /"webhooks\.stripe" must be a path on the app/],
    ['stripe: 42', /"webhooks\.stripe" must be a path on the app/],
    ['stripe: true', /"webhooks\.stripe" must be a path on the app/],
    [`stripe: /${'a'.repeat(2048)}`, /"webhooks\.stripe" must be a path on the app/],
    ['Stripe: /hook', /"webhooks\.Stripe" is not allowed/],
  ];
  for (const [line, message] of refused) {
    await t.rejects(
      profileOf(t, `start: node server.js\nwebhooks:\n  ${line}\n`),
      { message: new RegExp(`^\\.github/twinbox\\.yml: .*${message.source}`) },
      line.slice(0, 60),
    );
  }
  await t.rejects(profileOf(t, 'start: node server.js\nwebhooks: /hook\n'), {
    message: /"webhooks" must be of type object/,
  });
});

t.test('planWebhooks: configured paths, defaults, off, and the secret the app sees', async (t) => {
  const env = {
    STRIPE_WEBHOOK_SECRET: 'whsec_caller',
    GITHUB_WEBHOOK_SECRET: 'gh-secret',
    SLACK_SIGNING_SECRET: 'slack-secret',
  };
  const { plans, notes } = planWebhooks(
    ['stripe', 'github', 'slack'],
    { stripe: '/api/webhooks/stripe', slack: null, linear: '/linear' },
    env,
  );
  t.same(plans, [
    {
      twin: 'github',
      path: '/api/github/webhooks',
      from: 'default',
      secretVar: 'GITHUB_WEBHOOK_SECRET',
      secret: 'gh-secret',
    },
    {
      twin: 'stripe',
      path: '/api/webhooks/stripe',
      from: 'twinbox.yml',
      secretVar: 'STRIPE_WEBHOOK_SECRET',
      secret: 'whsec_caller',
    },
  ]);
  t.same(notes, [
    'slack: off (webhooks.slack is false in twinbox.yml)',
    'webhooks.linear is ignored: this sandbox has no linear twin',
  ]);

  const defaults = planWebhooks(['slack'], {}, env).plans;
  t.same(
    defaults.map((p) => p.path),
    ['/slack/events'],
    "Bolt's default path",
  );
  const unsigned = planWebhooks(['stripe'], {}, {});
  t.same(unsigned.plans, []);
  t.same(unsigned.notes, ['stripe: not delivered, the app has no STRIPE_WEBHOOK_SECRET to check them with']);
  const silent = planWebhooks(['mailer'], { mailer: '/hooks' }, {}, () => undefined);
  t.same(silent, { plans: [], notes: ['mailer sends no events: webhooks.mailer is ignored'] });
});
