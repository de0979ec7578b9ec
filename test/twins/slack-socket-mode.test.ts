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
import { createHmac } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import t, { type Test } from 'tap';
import { Ajv } from 'ajv';
import WebSocket from 'ws';
import { App, LogLevel, SocketModeReceiver } from '@slack/bolt';
import { SocketModeClient } from '@slack/socket-mode';
import { TwinAdminClient } from '../../server/twins/kit/admin-client.ts';
import { tempHost, webhookReceiver } from './helpers.ts';
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

/** The refused client logs its failure as an error: expected here, so kept out of the output. */
const quiet = {
  debug() {},
  info() {},
  warn() {},
  error() {},
  setLevel() {},
  getLevel: () => LogLevel.ERROR,
  setName() {},
};

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
      // Bolt acks at once; Slack's 3 s would make the answer hinge on this machine's load.
      ack_timeout_ms: 8_000,
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

/** A raw WebSocket client of the twin: every message it gets, in order, and a wait for the next. */
async function rawConnection(url: string) {
  const socket = new WebSocket(url);
  const inbox: Array<Record<string, unknown>> = [];
  const waiters: Array<() => void> = [];
  socket.on('message', (data) => {
    inbox.push(JSON.parse(data.toString()) as Record<string, unknown>);
    waiters.splice(0).forEach((wake) => wake());
  });
  await new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
  });
  return {
    socket,
    async next(what: string): Promise<Record<string, unknown>> {
      return until(what, () =>
        inbox.length ? inbox.shift() : new Promise<undefined>((wake) => waiters.push(() => wake(undefined))),
      );
    },
    /** The next envelope of `type`; others met on the way (the bot's own messages' events) are acked. */
    async nextOf(type: string, what: string): Promise<Record<string, unknown>> {
      for (;;) {
        const message = await this.next(what);
        if (message.type === type) return message;
        this.ack(message.envelope_id);
      }
    },
    ack(envelopeId: unknown, payload?: unknown) {
      socket.send(JSON.stringify({ envelope_id: envelopeId, ...(payload ? { payload } : {}) }));
    },
    async close() {
      if (socket.readyState === WebSocket.CLOSED) return;
      await new Promise<void>((resolve) => {
        socket.once('close', () => resolve());
        socket.close(1000);
      });
    },
  };
}

/** The HTTP status a WebSocket handshake to `url` is refused with. */
function refusedWith(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url);
    socket.once('unexpected-response', (_req, res) => {
      resolve(res.statusCode ?? 0);
      socket.terminate();
    });
    socket.once('open', () => reject(new Error(`${url} was accepted`)));
    socket.once('error', () => {});
  });
}

async function connectionsOpen(apiUrl: string, init: RequestInit): Promise<Record<string, unknown>> {
  const response = await fetch(`${apiUrl}apps.connections.open`, { method: 'POST', ...init });
  return (await response.json()) as Record<string, unknown>;
}

t.test(
  'the Socket Mode protocol: hello, envelopes, acks, retries, one-time URLs, response_url',
  async (t) => {
    const { env, call, admin } = await start(t);
    const apiUrl = env.SLACK_API_URL!;
    const opened = await connectionsOpen(apiUrl, {
      headers: { authorization: `Bearer ${env.SLACK_APP_TOKEN}` },
    });
    valid(t, connectionsOpenAnswer, opened, 'apps.connections.open');
    const url = String(opened.url);
    const appId = /^xapp-1-(A[A-Z0-9]+)-/.exec(env.SLACK_APP_TOKEN!)![1];
    t.equal(new URL(url).searchParams.get('app_id'), appId, "the URL names the app-level token's app");

    const app = await rawConnection(url);
    t.teardown(() => app.close());
    const hello = await app.next('hello');
    valid(t, helloMessage, hello, 'hello');
    t.match(hello, { num_connections: 1, connection_info: { app_id: appId } });
    t.equal(await refusedWith(url), 401, 'the URL works once');
    t.equal(
      await refusedWith(url.replace(/ticket=[^&]+/, 'ticket=forged')),
      401,
      'a made-up ticket is refused',
    );

    // A person's message reaches the app as an events_api envelope; not acknowledged, it comes again.
    const posted = await call('POST', '/messages', { user: 'ada', channel: 'general', text: 'is prod up?' });
    t.equal(posted.status, 201);
    const first = await app.next('the message event');
    valid(t, envelope, first, 'the envelope');
    t.match(first, {
      type: 'events_api',
      accepts_response_payload: false,
      retry_attempt: 0,
      retry_reason: '',
    });
    valid(t, eventWrapper, first.payload, 'the event_callback payload');
    const payload = first.payload as { api_app_id: string; event: Record<string, unknown> };
    t.equal(payload.api_app_id, appId);
    t.match(payload.event, {
      type: 'message',
      text: 'is prod up?',
      channel: posted.body.channel,
      channel_type: 'channel',
    });
    const retry = await app.next('the retry of the unacknowledged event');
    t.match(retry, { envelope_id: first.envelope_id, retry_attempt: 1, retry_reason: 'timeout' });
    t.same(retry.payload, first.payload, 'the retry carries the same event');
    app.ack(retry.envelope_id);
    const record = await until('the ack recorded', async () => {
      const listing = (await call('GET', '/socket-mode')).body.envelopes as Array<Record<string, unknown>>;
      const found = listing.find((e) => e.envelope_id === first.envelope_id);
      return found?.state === 'acked' ? found : undefined;
    });
    t.match(record, { type: 'events_api', attempts: 2 });

    // A button click: an interactive envelope, acknowledged; its response_url then posts in the channel.
    const clicking = call('POST', '/interactions', {
      type: 'block_actions',
      user: 'grace',
      channel: 'general',
      payload: { actions: [{ type: 'button', action_id: 'approve', value: 'yes' }] },
      ack_timeout_ms: 8_000,
    });
    const click = await app.nextOf('interactive', 'the interaction');
    valid(t, envelope, click, 'the envelope');
    t.match(click, { type: 'interactive', accepts_response_payload: false });
    const action = click.payload as Record<string, unknown>;
    t.match(action, {
      type: 'block_actions',
      api_app_id: appId,
      user: { username: 'grace' },
      channel: { name: 'general' },
      actions: [{ action_id: 'approve' }],
    });
    t.match(action.trigger_id, /^\d+\.\d+\.[0-9a-f]+$/);
    app.ack(click.envelope_id);
    t.match((await clicking).body, { via: 'socket_mode', acked: true });
    const responseUrl = String(action.response_url);
    t.ok(
      responseUrl.startsWith(new URL(apiUrl).origin),
      'response_url is on the origin the app reached the twin at',
    );
    const responded = await fetch(responseUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ response_type: 'in_channel', text: 'Approved by grace' }),
    });
    t.equal(responded.status, 200);
    t.same(await responded.json(), { ok: true });
    const reader = slackClient(env.SLACK_BOT_TOKEN, { slackApiUrl: apiUrl });
    const history = await reader.conversations.history({ channel: String(posted.body.channel) });
    t.ok(
      history.messages?.some((m) => m.text === 'Approved by grace'),
      'the response_url message is in the channel',
    );
    const forged = await fetch(responseUrl.replace(/\/[^/]+$/, '/forged'), { method: 'POST', body: '{}' });
    t.equal(forged.status, 404, 'a response_url with another secret is refused');
    await forged.text();

    // A slash command nobody acknowledges fails as Slack shows it, after Slack's three seconds.
    const timedOut = call('POST', '/commands', { command: '/status', user: 'ada' });
    const command = await app.nextOf('slash_commands', 'the slash command');
    t.match(command, { type: 'slash_commands', accepts_response_payload: true });
    valid(t, slashCommand, command.payload, 'the slash command payload');
    t.match((await timedOut).body, { acked: false, error: 'operation_timeout' });

    // With the connection closed, events go over HTTP again.
    await app.close();
    await until('the connection gone', async () =>
      ((await call('GET', '/socket-mode')).body.connections as unknown[]).length === 0 ? true : undefined,
    );
    const receiver = await webhookReceiver(t);
    await admin.setWebhookTarget({ url: receiver.url });
    await call('POST', '/messages', { user: 'ada', channel: 'general', text: 'anyone?' });
    const overHttp = JSON.parse((await receiver.next(15_000)).body) as Record<string, unknown>;
    valid(t, eventWrapper, overHttp, 'the event POSTed over HTTP');
    t.match(overHttp, {
      type: 'event_callback',
      api_app_id: appId,
      event: { type: 'message', text: 'anyone?' },
    });

    // And a slash command is POSTed form-encoded and signed, as Slack sends it to a request URL.
    const viaHttp = call('POST', '/commands', {
      command: '/status',
      text: 'prod',
      user: 'ada',
      ack_timeout_ms: 8_000,
    });
    const form = await receiver.next(15_000);
    t.match(form.headers['content-type'], /^application\/x-www-form-urlencoded/);
    const ts = String(form.headers['x-slack-request-timestamp']);
    const signature = `v0=${createHmac('sha256', env.SLACK_SIGNING_SECRET!).update(`v0:${ts}:${form.body}`).digest('hex')}`;
    t.equal(form.headers['x-slack-signature'], signature, 'signed with SLACK_SIGNING_SECRET');
    const fields = Object.fromEntries(new URLSearchParams(form.body));
    valid(t, slashCommand, fields, 'the slash command form');
    t.match(fields, { command: '/status', text: 'prod', user_name: 'ada', api_app_id: appId });
    t.match((await viaHttp).body, { via: 'http', acked: true, response: 'ok', shown: { as: 'ephemeral' } });
  },
);

t.test('token types: only the app-level token opens a connection, and it calls nothing else', async (t) => {
  const { host, env, admin } = await start(t);
  const apiUrl = env.SLACK_API_URL!;
  const bearer = (token: string) => ({ headers: { authorization: `Bearer ${token}` } });
  for (const [what, init, error] of [
    ['the bot token', bearer(env.SLACK_BOT_TOKEN!), 'not_allowed_token_type'],
    ['an unknown app-level token', bearer(`xapp-1-A0BOGUS-1-${'0'.repeat(64)}`), 'invalid_auth'],
    ['no token', {}, 'not_authed'],
  ] as const) {
    const answer = await connectionsOpen(apiUrl, init);
    valid(t, connectionsOpenAnswer, answer, `apps.connections.open with ${what}`);
    t.same(answer, { ok: false, error }, `${what}: ${error}`);
  }
  const inForm = await connectionsOpen(apiUrl, {
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ token: env.SLACK_APP_TOKEN! }).toString(),
  });
  t.match(
    inForm,
    { ok: true, url: /\/link\/\?ticket=/ },
    'the app-level token may come in the form, as any token',
  );

  // Slack's reference lists not_allowed_token_type for every method; the 2020 description does not have
  // it, so these answers are checked here.
  for (const method of ['auth.test', 'chat.postMessage']) {
    const answer = await fetch(`${apiUrl}${method}`, { method: 'POST', ...bearer(env.SLACK_APP_TOKEN!) });
    t.same(
      await answer.json(),
      { ok: false, error: 'not_allowed_token_type' },
      `${method} refuses the app token`,
    );
  }
  const formAnswer = await fetch(`${apiUrl}auth.test`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ token: env.SLACK_APP_TOKEN! }).toString(),
  });
  t.same(await formAnswer.json(), { ok: false, error: 'not_allowed_token_type' }, 'also from the form');

  // @slack/socket-mode given a bot token as its app token: the start fails with Slack's error.
  const client = new SocketModeClient({
    appToken: env.SLACK_BOT_TOKEN!,
    autoReconnectEnabled: false,
    logger: quiet,
    clientOptions: { slackApiUrl: apiUrl, retryConfig: { retries: 0 } },
  });
  const failed = await client.start().then(
    () => undefined,
    (error: { data?: { error?: string } }) => error,
  );
  t.equal(failed?.data?.error, 'not_allowed_token_type', 'SocketModeClient.start() rejects the bot token');

  // The app token is masked in the request log, and it survives a restart.
  await fetch(`${apiUrl}apps.connections.open?token=${env.SLACK_APP_TOKEN}`, { method: 'POST' });
  const logged = (await admin.requests()).map((e) => JSON.stringify(e));
  t.ok(
    logged.some((line) => line.includes('apps.connections.open')),
    'the calls are logged',
  );
  t.notOk(
    logged.some((line) => line.includes(env.SLACK_APP_TOKEN!)),
    'the app token is masked',
  );
  await host.stop('sb');
  await host.restore(['sb']);
  const again = host.get('sb')!.slack!;
  t.equal(again.env_vars.SLACK_APP_TOKEN, env.SLACK_APP_TOKEN, 'the app token is kept across a restart');
  const reopened = await connectionsOpen(again.env_vars.SLACK_API_URL!, bearer(env.SLACK_APP_TOKEN!));
  t.equal(reopened.ok, true);
});

/** A Web API call to the twin's port as if it had come to another origin (its Host and scheme). */
function callAt(
  apiUrl: string,
  method: string,
  headers: Record<string, string>,
  body: string,
): Promise<Record<string, unknown>> {
  const target = new URL(`${apiUrl}${method}`);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      target,
      { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

t.test("URLs follow the origin the caller reached the twin at: Slack's own host, a public URL", async (t) => {
  const { env, call } = await start(t);
  const apiUrl = env.SLACK_API_URL!;
  const app = { authorization: `Bearer ${env.SLACK_APP_TOKEN}` };

  // Intercepted, the app called https://slack.com: the URL is Slack's own Socket Mode host, which the
  // sandbox hands back to the twin; its ticket is the twin's.
  const intercepted = await callAt(
    apiUrl,
    'apps.connections.open',
    { ...app, host: 'slack.com', 'x-forwarded-proto': 'https' },
    '',
  );
  t.match(intercepted, {
    ok: true,
    url: /^wss:\/\/wss-primary\.slack\.com\/link\/\?ticket=[\w-]+&app_id=A[A-Z0-9]+$/,
  });
  const ticketed = new URL(String(intercepted.url));
  const socket = await rawConnection(
    `${apiUrl.replace(/^http/, 'ws').replace(/\/api\/$/, '')}/link/${ticketed.search}`,
  );
  t.teardown(() => socket.close());
  t.match(await socket.next('hello'), { type: 'hello' }, 'its ticket opens a connection');

  const publicOrigin = await callAt(
    apiUrl,
    'apps.connections.open',
    { ...app, host: 'sb--slack.twinbox.test:8443', 'x-forwarded-proto': 'https' },
    '',
  );
  t.match(
    publicOrigin,
    { ok: true, url: /^wss:\/\/sb--slack\.twinbox\.test:8443\/link\/\?ticket=/ },
    'a public https origin gives wss on it',
  );

  // A permalink is written with the origin of the call that asked for it.
  const posted = await call('POST', '/messages', { user: 'ada', channel: 'general', text: 'link me' });
  await socket.nextOf('events_api', 'the message event').then((e) => socket.ack(e.envelope_id));
  const form = new URLSearchParams({
    channel: String(posted.body.channel),
    message_ts: String(posted.body.ts),
  });
  const bot = { authorization: `Bearer ${env.SLACK_BOT_TOKEN}` };
  const viaSlack = await callAt(
    apiUrl,
    'chat.getPermalink',
    { ...bot, host: 'slack.com', 'x-forwarded-proto': 'https' },
    form.toString(),
  );
  t.match(viaSlack, { ok: true, permalink: /^https:\/\/slack\.com\/archives\/C\w+\/p\d+$/ });
  const viaPublic = await callAt(
    apiUrl,
    'chat.getPermalink',
    { ...bot, host: 'sb--slack.twinbox.test:8443', 'x-forwarded-proto': 'https' },
    form.toString(),
  );
  t.match(viaPublic, {
    ok: true,
    permalink: /^https:\/\/sb--slack\.twinbox\.test:8443\/archives\/C\w+\/p\d+$/,
  });
});

t.test('the admin routes that play a person refuse bad input with a 4xx and a detail', async (t) => {
  const { call } = await start(t);
  const refusals: Array<[string, unknown, number, RegExp]> = [
    ['/messages', { user: 'ada', channel: 'general' }, 400, /"text" is required/],
    ['/messages', { user: 'nobody', channel: 'general', text: 'hi' }, 400, /no user "nobody"/],
    ['/messages', { user: 'twinbox-bot', channel: 'general', text: 'hi' }, 400, /is a bot/],
    ['/messages', { user: 'ada', channel: 'nowhere', text: 'hi' }, 400, /channel_not_found/],
    ['/commands', { text: 'x' }, 400, /"command" is required/],
    ['/commands', { command: 'deploy' }, 400, /"command" with value "deploy" fails/],
    ['/commands', { command: '/deploy', ack_timeout_ms: 10 }, 400, /"ack_timeout_ms" must be greater/],
    ['/commands', { command: '/deploy', channel: 'nowhere' }, 400, /no channel "nowhere"/],
    ['/commands', { command: '/deploy' }, 409, /no Socket Mode connection is open and no webhook target/],
    ['/interactions', { type: 'poke' }, 400, /"type" must be one of/],
  ];
  for (const [path, body, status, detail] of refusals) {
    const answer = await call('POST', path, body);
    t.equal(answer.status, status, `${path} ${JSON.stringify(body)}: ${status}`);
    t.match(answer.body.detail, detail);
  }
});
