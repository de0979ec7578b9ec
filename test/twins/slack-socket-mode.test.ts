/**
 * The Slack twin's Socket Mode (issue 22): a real Bolt app (`socketMode`, SocketModeReceiver) connects
 * with SLACK_APP_TOKEN, gets a person's message and answers it with chat.postMessage, acknowledges a slash
 * command with its response; the raw protocol (hello, envelopes, acks, retries, one-time URLs) is checked
 * against Slack's description of it; token types are refused as Slack refuses them.
 *
 * Slack's Web API description (2020) has neither `apps.connections.open` nor Socket Mode: the Web API calls
 * Bolt makes (auth.test, chat.postMessage) go through the checked fetch (`vendorFetch('slack')`), and
 * apps.connections.open's answer, the `hello` message and the envelopes are checked here against what
 * Slack's reference pages document (cited at each schema).
 */
import t, { type Test } from 'tap';
import { Ajv } from 'ajv';
import WebSocket from 'ws';
import { App, LogLevel, SocketModeReceiver } from '@slack/bolt';
import { SocketModeClient } from '@slack/socket-mode';
import { TwinAdminClient } from '../../server/twins/kit/admin-client.ts';
import { tempHost } from './helpers.ts';
import { slackClient, vendorFetch } from './vendor-schema.ts';

const seed = {
  team: { name: 'Acme', domain: 'acme' },
  users: [
    { name: 'ada', real_name: 'Ada Lovelace', email: 'ada@example.com' },
    { name: 'grace', real_name: 'Grace Hopper', email: 'grace@example.com' },
  ],
  channels: [{ name: 'general', topic: 'General' }],
};

const ajv = new Ajv({ allErrors: true });

/** https://api.slack.com/methods/apps.connections.open: `{ok: true, url: "wss://..."}`, errors as every method. */
const connectionsOpenAnswer = ajv.compile({
  oneOf: [
    {
      type: 'object',
      required: ['ok', 'url'],
      additionalProperties: false,
      properties: { ok: { const: true }, url: { type: 'string', pattern: '^wss?://[^/]+/link/\\?' } },
    },
    {
      type: 'object',
      required: ['ok', 'error'],
      properties: { ok: { const: false }, error: { type: 'string' } },
    },
  ],
});

/** The `hello` message (https://api.slack.com/apis/connections/socket-implement#connect). */
const helloMessage = ajv.compile({
  type: 'object',
  required: ['type', 'num_connections', 'debug_info', 'connection_info'],
  properties: {
    type: { const: 'hello' },
    num_connections: { type: 'integer', minimum: 1 },
    debug_info: {
      type: 'object',
      required: ['host', 'build_number', 'approximate_connection_time'],
      properties: {
        host: { type: 'string' },
        build_number: { type: 'integer' },
        approximate_connection_time: { type: 'integer' },
      },
    },
    connection_info: {
      type: 'object',
      required: ['app_id'],
      properties: { app_id: { type: 'string', pattern: '^A[A-Z0-9]+$' } },
    },
  },
});

/** An envelope (https://api.slack.com/apis/connections/socket-implement#events). */
const envelope = ajv.compile({
  type: 'object',
  required: ['envelope_id', 'type', 'payload', 'accepts_response_payload'],
  properties: {
    envelope_id: { type: 'string', minLength: 1 },
    type: { enum: ['events_api', 'slash_commands', 'interactive'] },
    payload: { type: 'object' },
    accepts_response_payload: { type: 'boolean' },
    retry_attempt: { type: 'integer', minimum: 0 },
    retry_reason: { type: 'string' },
  },
});

/**
 * The Events API wrapper, as Slack's published description of it says (slack-api-specs,
 * events-api/slack_common_event_wrapper_schema.json: these required fields and types).
 */
const eventWrapper = ajv.compile({
  type: 'object',
  required: ['token', 'team_id', 'api_app_id', 'event', 'type', 'event_id', 'event_time', 'authed_users'],
  properties: {
    token: { type: 'string' },
    team_id: { type: 'string' },
    api_app_id: { type: 'string' },
    event: {
      type: 'object',
      required: ['type', 'event_ts'],
      properties: { type: { type: 'string' }, event_ts: { type: 'string' } },
    },
    type: { const: 'event_callback' },
    event_id: { type: 'string' },
    event_time: { type: 'integer' },
    authed_users: { type: 'array', minItems: 1, uniqueItems: true, items: { type: 'string' } },
  },
});

/** A slash command's payload (https://api.slack.com/interactivity/slash-commands#app_command_handling). */
const slashCommand = ajv.compile({
  type: 'object',
  required: [
    'token',
    'team_id',
    'team_domain',
    'channel_id',
    'channel_name',
    'user_id',
    'user_name',
    'command',
    'text',
    'api_app_id',
    'response_url',
    'trigger_id',
  ],
  properties: Object.fromEntries(
    ['token', 'team_id', 'team_domain', 'channel_id', 'channel_name', 'user_id', 'user_name']
      .concat(['command', 'text', 'api_app_id', 'response_url', 'trigger_id'])
      .map((k) => [k, { type: 'string' }]),
  ),
});

function valid(t: Test, check: ReturnType<typeof ajv.compile>, value: unknown, what: string): void {
  t.ok(check(value), `${what} is as Slack documents it`, { errors: check.errors, value });
}

/** A fetch for the Socket Mode client's WebClient: apps.connections.open's answers, checked and kept. */
function connectionsFetch(t: Test, answers: unknown[]): typeof fetch {
  return async (input, init) => {
    const response = await fetch(input, init);
    const body: unknown = await response.clone().json();
    valid(t, connectionsOpenAnswer, body, 'apps.connections.open');
    answers.push(body);
    return response;
  };
}

async function until<T>(what: string, probe: () => Promise<T | undefined> | T | undefined): Promise<T> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

interface HistoryMessage {
  text?: string;
  user?: string;
  bot_id?: string;
  ts: string;
}

async function start(t: Test) {
  const { host } = await tempHost(t);
  const entry = (await host.start('sb', ['slack'], { adminToken: 'admin', seeds: { slack: seed } })).slack!;
  const admin = new TwinAdminClient(entry.admin_url, 'admin');
  const call = async (method: string, path: string, body?: unknown) => {
    const answer = await admin.send(method, path, body === undefined ? undefined : JSON.stringify(body));
    return { status: answer.status, body: JSON.parse(answer.text) as Record<string, unknown> };
  };
  return { host, entry, env: entry.env_vars, admin, call };
}

t.test(
  'Bolt in Socket Mode: connects, answers a message with chat.postMessage, acks a slash command',
  async (t) => {
    const { env, call, admin } = await start(t);
    t.match(
      env.SLACK_APP_TOKEN,
      /^xapp-1-A[A-Z0-9]+-\d{13}-[0-9a-f]{64}$/,
      'an app-level token as Slack writes it',
    );

    const opened: unknown[] = [];
    const receiver = new SocketModeReceiver({
      appToken: env.SLACK_APP_TOKEN!,
      logLevel: LogLevel.ERROR,
      installerOptions: {
        clientOptions: { slackApiUrl: env.SLACK_API_URL, fetch: connectionsFetch(t, opened) },
      },
    });
    const app = new App({
      token: env.SLACK_BOT_TOKEN,
      receiver,
      logLevel: LogLevel.ERROR,
      clientOptions: { slackApiUrl: env.SLACK_API_URL, fetch: vendorFetch('slack') },
    });
    const seen: Array<{ user?: string; channel_type?: string }> = [];
    app.message('deploy', async ({ message, say }) => {
      seen.push(message as { user?: string; channel_type?: string });
      await say(`On it, <@${(message as { user: string }).user}>`);
    });
    app.command('/deploy', async ({ command, ack }) => {
      await ack({ response_type: 'in_channel', text: `Deploying ${command.text} for ${command.user_name}` });
    });
    await app.start();
    // Stopped before the twin is, at the end (teardowns run after the host's).
    let stopped = false;
    t.teardown(() => (stopped ? undefined : app.stop()));
    t.equal(opened.length, 1, 'Bolt opened one connection');
    t.match(opened[0], {
      ok: true,
      url: /^ws:\/\/127\.0\.0\.1:\d+\/link\/\?ticket=[\w-]+&app_id=A[A-Z0-9]+$/,
    });

    const listing = await until('the connection in the admin API', async () => {
      const got = await call('GET', '/socket-mode');
      return (got.body.connections as unknown[]).length === 1 ? got.body : undefined;
    });
    t.equal((listing.connections as unknown[]).length, 1, 'one Socket Mode connection is open');

    const posted = await call('POST', '/messages', {
      user: 'ada',
      channel: 'general',
      text: 'please deploy main',
    });
    t.equal(posted.status, 201);
    const channel = String(posted.body.channel);

    const reader = slackClient(env.SLACK_BOT_TOKEN, { slackApiUrl: env.SLACK_API_URL });
    const messagesIn = async (id: string) =>
      ((await reader.conversations.history({ channel: id })).messages ?? []) as HistoryMessage[];
    const reply = await until('the bot reply', async () =>
      (await messagesIn(channel)).find((m) => m.text?.startsWith('On it')),
    );
    t.equal(seen.length, 1, 'the app got the message event once');
    t.equal(seen[0]?.channel_type, 'channel');
    const envelopes = (await call('GET', '/socket-mode')).body.envelopes as Array<Record<string, unknown>>;
    t.match(envelopes[0], { type: 'events_api', state: 'acked', attempts: 1 }, 'Bolt acked the event');
    const log = await admin.requests();
    t.ok(
      log.some((e) => e.path === '/api/chat.postMessage' && e.status === 200),
      'the reply was a chat.postMessage call',
    );
    t.match(reply.text, /^On it, <@U\w+>$/, 'the bot answered in the channel with chat.postMessage');
    const bot = await reader.auth.test();
    t.equal(reply.user, bot.user_id, 'posted by the bot');

    const command = await call('POST', '/commands', {
      command: '/deploy',
      text: 'v2',
      user: 'grace',
      channel: 'general',
    });
    t.equal(command.status, 200);
    t.match(command.body, {
      via: 'socket_mode',
      acked: true,
      response: { response_type: 'in_channel', text: 'Deploying v2 for grace' },
      shown: { as: 'in_channel' },
    });
    valid(t, slashCommand, command.body.payload, 'the slash command payload');
    const messages = await messagesIn(channel);
    t.ok(
      messages.some((m) => m.text === 'Deploying v2 for grace' && m.user === bot.user_id),
      "the ack's response is posted in the channel by the app",
    );
    await app.stop();
    stopped = true;
    // Bolt's stop() resolves before the close handshake ends: the twin sees the connection go first.
    await until('the connection closed', async () => {
      const got = await call('GET', '/socket-mode');
      return (got.body.connections as unknown[]).length === 0 ? true : undefined;
    });
  },
);
