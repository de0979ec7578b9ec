/**
 * The Slack twin driven by @slack/web-api 6, the previous major that many Bolt apps still pin (issue 23,
 * part 3): the same calls an app makes with today's major in slack.test.ts, every answer checked against
 * Slack's description (`slackClientV6`, slack-v6-client.ts).
 */
import t from 'tap';
import { ErrorCode, type WebAPIPlatformError, type WebAPICallResult } from 'slack-web-api-v6';
import { tempHost } from './helpers.ts';
import { slackClientV6 } from './slack-v6-client.ts';

const seed = {
  team: { name: 'Acme', domain: 'acme' },
  users: [{ name: 'ada', real_name: 'Ada Lovelace', email: 'ada@example.com' }],
  channels: [{ name: 'general', topic: 'General' }],
};

t.test('slack twin: auth, posting, paginated history and typed errors with @slack/web-api 6', async (t) => {
  const { host } = await tempHost(t);
  const entry = (await host.start('sb', ['slack'], { adminToken: 'admin', seeds: { slack: seed } })).slack!;
  const { client, checks } = slackClientV6(entry.env_vars.SLACK_BOT_TOKEN!, entry.env_vars.SLACK_API_URL!);

  const auth = await client.auth.test();
  t.equal(auth.ok, true);
  t.equal(auth.user, 'twinbox-bot');
  t.ok(auth.bot_id, 'the token is a bot token');

  const general = (await client.conversations.list()).channels?.find((c) => c.name === 'general');
  if (!general?.id) throw new Error('the seeded #general is not listed');
  const posted: string[] = [];
  for (let i = 1; i <= 5; i++) {
    const message = await client.chat.postMessage({ channel: general.id, text: `build step ${i}` });
    t.equal(message.ok, true);
    t.equal(message.message?.text, `build step ${i}`);
    posted.push(message.ts!);
  }

  // An app reads the whole history through the SDK's cursor pagination, two messages a page.
  const pages: WebAPICallResult[] = [];
  for await (const page of client.paginate('conversations.history', { channel: general.id, limit: 2 }))
    pages.push(page);
  t.ok(pages.length >= 3, `${pages.length} pages of at most two messages`);
  const read = pages.flatMap(
    (page) => (page as { messages?: Array<{ ts?: string; text?: string }> }).messages ?? [],
  );
  t.ok(
    pages.every((page) => ((page as { messages?: unknown[] }).messages?.length ?? 0) <= 2),
    'each page keeps to the limit',
  );
  t.same(
    read.filter((m) => m.text?.startsWith('build step')).map((m) => m.ts),
    [...posted].reverse(),
    'every message once, newest first',
  );

  // A Slack error is raised as the SDK's typed platform error, with Slack's code in its data.
  const failure = await client.chat.postMessage({ channel: 'C0NOTACHANNEL', text: 'x' }).then(
    () => undefined,
    (error: WebAPIPlatformError) => error,
  );
  t.equal(failure?.code, ErrorCode.PlatformError);
  t.equal(failure?.data.error, 'channel_not_found');
  t.equal(failure?.data.ok, false);

  const bogus = slackClientV6('xoxb-0000-not-a-token', entry.env_vars.SLACK_API_URL!).client;
  const refused = await bogus.auth.test().then(
    () => undefined,
    (error: WebAPIPlatformError) => error,
  );
  t.equal(refused?.code, ErrorCode.PlatformError);
  t.equal(refused?.data.error, 'invalid_auth');

  t.ok(checks.count >= 10, `${checks.count} answers checked against Slack's description`);
});
