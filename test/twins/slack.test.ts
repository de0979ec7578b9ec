import t from 'tap';
import { ErrorCode } from '@slack/web-api';
import { TwinAdminClient } from '../../server/twins/kit/admin-client.ts';
import { READ_METHODS } from '../../server/twins/vendors/slack/twin.ts';
import { tempHost } from './helpers.ts';
import { slackClient } from './vendor-schema.ts';

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
  const client = slackClient(entry.env_vars.SLACK_BOT_TOKEN, { slackApiUrl: entry.env_vars.SLACK_API_URL });
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

t.test('slack twin: threads, reactions, pins, users and channels as apps read them', async (t) => {
  const { host } = await tempHost(t);
  const entry = (await host.start('sb', ['slack'], { adminToken: 'admin', seeds: { slack: seed } })).slack!;
  const client = slackClient(entry.env_vars.SLACK_BOT_TOKEN, { slackApiUrl: entry.env_vars.SLACK_API_URL });
  const auth = await client.auth.test();
  const team = await client.team.info();
  t.equal(team.team?.name, 'Acme');

  const channels = (await client.conversations.list({ types: 'public_channel,private_channel' })).channels!;
  const general = channels.find((c) => c.name === 'general')!;
  t.equal(general.is_general, true, '#general is the workspace general channel');
  t.equal(channels.find((c) => c.name === 'random')?.is_general, false);
  for (const c of channels) {
    t.equal(c.is_shared, false, `${c.name}: not shared with another workspace`);
    t.equal(c.is_org_shared, false);
  }
  const info = await client.conversations.info({ channel: general.id! });
  t.equal(info.channel?.name, 'general');
  t.equal(info.channel?.is_general, true);
  t.ok((await client.conversations.members({ channel: general.id! })).members?.includes(auth.user_id!));

  const parent = await client.chat.postMessage({ channel: general.id!, text: 'Deploy #12 started' });
  const reply1 = await client.chat.postMessage({
    channel: general.id!,
    text: 'building',
    thread_ts: parent.ts!,
  });
  t.equal(reply1.message?.thread_ts, parent.ts, 'a reply carries its thread');
  t.equal(reply1.message?.parent_user_id, auth.user_id, 'and its parent author');
  await client.chat.postMessage({ channel: general.id!, text: 'ready', thread_ts: parent.ts! });

  const history = await client.conversations.history({ channel: general.id! });
  t.equal(history.pin_count, 0);
  const top = history.messages!.find((m) => m.ts === parent.ts)!;
  t.equal(top.thread_ts, parent.ts, 'a thread parent has thread_ts = its own ts');
  t.equal(top.reply_count, 2);
  t.same(top.reply_users, [auth.user_id]);
  t.equal(typeof top.latest_reply, 'string');
  t.equal(top.subscribed, true, 'the bot follows the thread it started');
  t.notOk(
    history.messages!.some((m) => m.text === 'building'),
    'replies stay in their thread',
  );

  const replies = await client.conversations.replies({ channel: general.id!, ts: parent.ts! });
  t.same(
    replies.messages!.map((m) => m.text),
    ['Deploy #12 started', 'building', 'ready'],
  );
  for (const reply of replies.messages!.slice(1)) {
    t.equal(reply.thread_ts, parent.ts);
    t.equal(reply.parent_user_id, auth.user_id);
  }

  await client.reactions.add({ channel: general.id!, timestamp: parent.ts!, name: 'rocket' });
  const reacted = await client.reactions.get({ channel: general.id!, timestamp: parent.ts! });
  t.same(
    reacted.message?.reactions?.map((r) => [r.name, r.count]),
    [['rocket', 1]],
  );
  await client.reactions.remove({ channel: general.id!, timestamp: parent.ts!, name: 'rocket' });

  await client.pins.add({ channel: general.id!, timestamp: parent.ts! });
  t.equal((await client.conversations.history({ channel: general.id! })).pin_count, 1, 'pins are counted');
  const link = await client.chat.getPermalink({ channel: general.id!, message_ts: parent.ts! });
  t.match(link.permalink, /^https?:\/\//);
  await client.chat.delete({ channel: general.id!, ts: reply1.ts! });

  const random = channels.find((c) => c.name === 'random')!;
  await client.conversations.join({ channel: random.id! });
  const topic = await client.conversations.setTopic({ channel: random.id!, topic: 'Previews' });
  t.equal(topic.channel?.topic?.value, 'Previews');
  const edited = await client.chat.update({ channel: general.id!, ts: parent.ts!, text: 'Deploy #12 done' });
  t.equal(edited.text, 'Deploy #12 done');
  const ephemeral = await client.chat.postEphemeral({
    channel: general.id!,
    user: auth.user_id!,
    text: 'only you',
  });
  t.match(ephemeral.message_ts, /^\d+\.\d+$/);

  const users = await client.users.list({});
  t.equal(typeof users.cache_ts, 'number');
  const grace = users.members!.find((u) => u.name === 'grace')!;
  t.equal(typeof grace.updated, 'number', 'users say when they were last updated');
  t.equal(grace.is_app_user, false);
  for (const size of ['image_24', 'image_32', 'image_48', 'image_72', 'image_192', 'image_512'] as const) {
    t.match(grace.profile?.[size], /^https?:\/\/\S+$/, `${size} is a URL`);
  }
  const bot = await client.users.info({ user: auth.user_id! });
  t.equal(bot.user?.is_bot, true);
  t.equal(bot.user?.is_app_user, false, 'a bot user is not an app user');
  t.equal((await client.users.info({ user: grace.id! })).user?.real_name, 'Grace Hopper');
  const profile = await client.users.profile.get({ user: grace.id! });
  t.equal(profile.profile?.real_name, 'Grace Hopper');
});

t.test('slack twin: a bogus or revoked token fails the way Slack fails it', async (t) => {
  const { host } = await tempHost(t);
  const entry = (await host.start('sb', ['slack'], { adminToken: 'admin', seeds: { slack: seed } })).slack!;
  const url = entry.env_vars.SLACK_API_URL;
  const errorOf = (call: Promise<unknown>) =>
    call.then(
      () => 'ok',
      (e: { data?: { error?: string } }) => e.data?.error,
    );
  const bogus = slackClient('xoxb-1234-not-a-token', { slackApiUrl: url });
  t.equal(await errorOf(bogus.auth.test()), 'invalid_auth');
  t.equal(await errorOf(bogus.conversations.list()), 'invalid_auth');
  t.equal(await errorOf(bogus.chat.postMessage({ channel: 'general', text: 'hi' })), 'invalid_auth');
  t.equal(await errorOf(bogus.users.list({})), 'invalid_auth');
  const anonymous = slackClient(undefined, { slackApiUrl: url });
  t.equal(await errorOf(anonymous.auth.test()), 'not_authed');

  const client = slackClient(entry.env_vars.SLACK_BOT_TOKEN, { slackApiUrl: url });
  // The SDK's response type leaves out `revoked`, which Slack documents.
  const dryRun = (await client.auth.revoke({ test: true })) as { revoked?: boolean };
  t.equal(dryRun.revoked, false, 'test mode revokes nothing');
  t.equal((await client.auth.test()).ok, true);
  const revoked = (await client.auth.revoke()) as { revoked?: boolean };
  t.equal(revoked.revoked, true);
  t.equal(await errorOf(client.auth.test()), 'token_revoked');
  t.equal(await errorOf(client.chat.postMessage({ channel: 'general', text: 'hi' })), 'token_revoked');

  await host.stop('sb');
  await host.restore(['sb']);
  const again = host.get('sb')?.slack;
  t.ok(again, 'the instance comes back from its state file');
  const after = slackClient(entry.env_vars.SLACK_BOT_TOKEN, { slackApiUrl: again!.env_vars.SLACK_API_URL });
  t.equal(await errorOf(after.auth.test()), 'token_revoked', 'a revoked token stays revoked after a restart');
  await new TwinAdminClient(again!.admin_url, 'admin').reset();
  t.equal((await after.auth.test()).ok, true, 'a reset is a fresh install: the bot token works again');
});

// The twin declares which Web API methods only read (all are POSTs), so that the instance does not diff
// the whole state after them (server/twins/vendors/slack/twin.ts, READ_METHODS). Each is called here on a
// workspace with messages, a thread, a reaction, a pin and a scheduled message, and must leave the state
// exactly as it was: a method that wrote would lose its write from the journal.
t.test('slack twin: the methods it declares read-only change nothing', async (t) => {
  const { host } = await tempHost(t);
  const entry = (await host.start('sb', ['slack'], { adminToken: 'admin', seeds: { slack: seed } })).slack!;
  const client = slackClient(entry.env_vars.SLACK_BOT_TOKEN, { slackApiUrl: entry.env_vars.SLACK_API_URL });
  const admin = new TwinAdminClient(entry.admin_url, 'admin');
  const channel = (await client.conversations.list()).channels!.find((c) => c.name === 'general')!.id!;
  const posted = await client.chat.postMessage({ channel, text: 'Sandbox ready' });
  await client.chat.postMessage({ channel, text: 'in the thread', thread_ts: posted.ts! });
  await client.reactions.add({ channel, timestamp: posted.ts!, name: 'rocket' });
  await client.pins.add({ channel, timestamp: posted.ts! });
  // Checked against Slack's description as every answer here: the message names its bot, user and team.
  const scheduled = await client.chat.scheduleMessage({
    channel,
    text: 'later',
    post_at: Math.floor(Date.now() / 1000) + 3600,
  });
  t.equal(
    scheduled.message?.bot_id,
    (await client.auth.test()).bot_id,
    'the scheduled message names its bot',
  );
  const ada = (await client.users.lookupByEmail({ email: 'ada@example.com' })).user!.id!;

  const reads: Array<[string, Record<string, unknown>]> = [
    ['auth.test', {}],
    ['bookmarks.list', { channel_id: channel }],
    ['bots.info', {}],
    ['chat.getPermalink', { channel, message_ts: posted.ts }],
    ['chat.scheduledMessages.list', {}],
    ['conversations.history', { channel }],
    ['conversations.info', { channel }],
    ['conversations.list', {}],
    ['conversations.members', { channel }],
    ['conversations.replies', { channel, ts: posted.ts }],
    ['files.info', { file: 'F0000000000' }],
    ['files.list', {}],
    ['pins.list', { channel }],
    ['reactions.get', { channel, timestamp: posted.ts }],
    ['team.info', {}],
    ['users.getPresence', { user: ada }],
    ['users.info', { user: ada }],
    ['users.list', {}],
    ['users.lookupByEmail', { email: 'grace@example.com' }],
    ['users.profile.get', { user: ada }],
  ];
  t.same(
    reads.map(([method]) => `/api/${method}`).sort(),
    [...READ_METHODS].sort(),
    'each method the twin declares read-only is called here',
  );
  let called = 0;
  for (const [method, params] of reads) {
    const before = JSON.stringify((await admin.state()).state);
    // A refusal (files.info of no file) is an answer too; what matters is that nothing was written.
    await client.apiCall(method, params).catch(() => undefined);
    t.equal(JSON.stringify((await admin.state()).state), before, `${method} leaves the state as it was`);
    called++;
  }
  t.equal(called, 20, 'every declared method was called');

  const before = JSON.stringify((await admin.state()).state);
  await client.chat.postMessage({ channel, text: 'a write' });
  t.not(JSON.stringify((await admin.state()).state), before, 'a write does change it (the check can fail)');
});
