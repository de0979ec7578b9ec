import t from 'tap';
import { WebClient, ErrorCode } from '@slack/web-api';
import { TwinAdminClient } from '../../server/twins/admin-client.ts';
import { tempHost } from './helpers.ts';

const seed = {
  team: { name: 'Acme', domain: 'acme' },
  users: [
    { name: 'ada', real_name: 'Ada Lovelace', email: 'ada@example.com' },
    { name: 'grace', real_name: 'Grace Hopper', email: 'grace@example.com' },
  ],
  channels: [{ name: 'general', topic: 'General' }],
};

t.test('slack twin: auth, conversations, chat, users via @slack/web-api', async (t) => {
  const { host } = await tempHost(t);
  const entry = (await host.start('sb', ['slack'], { adminToken: 'admin', seeds: { slack: seed } })).slack!;
  const client = new WebClient(entry.env_vars.SLACK_BOT_TOKEN, {
    slackApiUrl: entry.env_vars.SLACK_API_URL,
    retryConfig: { retries: 0 },
    rejectRateLimitedCalls: true,
  });
  const auth = await client.auth.test();
  t.equal(auth.ok, true);
  t.equal(auth.user, 'twinbox-bot');
  t.ok(auth.bot_id, 'the token is a bot token');

  const created = await client.conversations.create({ name: 'deploys' });
  const channel = created.channel!.id!;
  const list = await client.conversations.list();
  t.ok(list.channels?.some((c) => c.name === 'general'));
  t.ok(list.channels?.some((c) => c.name === 'deploys'));

  const posted = await client.chat.postMessage({ channel, text: 'Sandbox building' });
  t.equal(posted.ok, true);
  await client.chat.update({ channel, ts: posted.ts!, text: 'Sandbox ready' });
  const history = await client.conversations.history({ channel });
  t.same(
    history.messages?.map((m) => m.text),
    ['Sandbox ready'],
  );

  const users = await client.users.list({});
  t.ok(users.members?.some((u) => u.name === 'grace'));
  const grace = await client.users.lookupByEmail({ email: 'grace@example.com' });
  t.equal(grace.user?.real_name, 'Grace Hopper');
  const missing = await client.users
    .lookupByEmail({ email: 'nobody@example.com' })
    .catch((e: { data?: { error?: string } }) => e);
  t.equal((missing as { data?: { error?: string } }).data?.error, 'users_not_found');

  const admin = new TwinAdminClient(entry.admin_url, 'admin');
  await admin.addFault({ rate_limit: true, count: 1 });
  const limited = await client.auth.test().catch((e: { code?: string }) => e);
  t.equal(
    (limited as { code?: string }).code,
    ErrorCode.RateLimitedError,
    'the SDK sees Slack rate limiting',
  );
  t.equal((await client.auth.test()).ok, true, 'then it stops');

  await admin.reset();
  const after = await client.conversations.list();
  t.notOk(
    after.channels?.some((c) => c.name === 'deploys'),
    'reset drops created channels',
  );
  t.equal((await client.auth.test()).user, 'twinbox-bot', 'the bot token still works after reset');
});
