/**
 * What people do in a Slack workspace that reaches an app, played through the admin API: a user posts a
 * message (the app gets its `message` event), runs a slash command, clicks a button or a shortcut (an
 * interaction). Over Socket Mode when the app is connected (socket-mode.ts), else over HTTP to the webhook
 * target, form-encoded and signed as Slack sends them. A slash command's answer (its ack's payload, or
 * the HTTP answer's body) and what the app posts to `response_url` land in the channel as Slack shows
 * them: `in_channel` as a message from the app, else as an ephemeral message to the user.
 */
import { randomBytes } from 'node:crypto';
import Joi from 'joi';
import { TwinInputError } from '../../contract.ts';
import type { Engine, EngineRecord } from '../../engine/emulate.ts';
import { json } from '../../runtime/http.ts';
import type { WebhookSigner, WebhookTarget } from '../../runtime/webhooks.ts';
import { ACK_TIMEOUT_MS, type SocketModeHub } from './socket-mode.ts';

export interface SlackAppContext {
  engine: Engine;
  hub: SocketModeHub;
  signer: WebhookSigner;
  signingSecret: string;
  verificationToken: string;
  appId: string;
  /** The twin's own URL: HTTP-mode payloads' `response_url` is built on it. */
  baseUrl: string;
  target(): WebhookTarget | undefined;
  botUserId(): string | undefined;
  /** A Web API call as `user` (a user id; the bot when undefined), answered as the twin answers it. */
  call(user: string | undefined, method: string, params: Record<string, unknown>): Promise<Json>;
}

type Json = Record<string, unknown>;

const name = Joi.string().min(1).max(200);
/**
 * How long the person waits for the app's answer: Slack's 3 s by default. A test on a loaded machine may
 * wait longer for an app that answers at once, so that its answer does not hinge on the machine's speed.
 */
const ackTimeout = Joi.number().integer().min(100).max(60_000).default(ACK_TIMEOUT_MS);
const messageSchema = Joi.object({
  user: name.required(),
  channel: name.required(),
  text: Joi.string().min(1).max(40_000).required(),
  thread_ts: Joi.string().pattern(/^\d+\.\d+$/),
});
const commandSchema = Joi.object({
  command: Joi.string()
    .pattern(/^\/[\w-]{1,31}$/)
    .required(),
  text: Joi.string().allow('').max(4_000).default(''),
  user: name,
  channel: name,
  ack_timeout_ms: ackTimeout,
});
const interactionSchema = Joi.object({
  type: Joi.string()
    .valid(
      'block_actions',
      'shortcut',
      'message_action',
      'view_submission',
      'view_closed',
      'block_suggestion',
    )
    .required(),
  user: name,
  channel: name,
  /** The rest of the payload as Slack documents it for the type (`actions`, `callback_id`, `view`...). */
  payload: Joi.object().unknown(true).default({}),
  ack_timeout_ms: ackTimeout,
});

/** Slack's answer to a slash command nobody answered in time ("failed with the error operation_timeout"). */
const OPERATION_TIMEOUT = 'operation_timeout';
/** A response_url works for 30 minutes and 5 times (api.slack.com/interactivity/handling#message_responses). */
const RESPONSE_URL_TTL_MS = 30 * 60_000;
const RESPONSE_URL_USES = 5;
const MAX_RESPONSE_URLS = 500;

/** How an answer to the user was shown: posted in the channel or to the user alone, or why not. */
interface Shown {
  as: 'in_channel' | 'ephemeral';
  ts?: string;
  error?: string;
}

interface ResponseUrl {
  secret: string;
  channel: string;
  user: string;
  expires: number;
  uses: number;
}

function validate<T>(schema: Joi.Schema, body: unknown): T {
  const { error, value } = schema.validate(body ?? {}, { abortEarly: true });
  if (error) throw new TwinInputError(400, error.message);
  return value as T;
}

export class SlackAppActions {
  private readonly responseUrls = new Map<string, ResponseUrl>();

  constructor(private readonly ctx: SlackAppContext) {}

  private users() {
    return this.ctx.engine.store.collection('slack.users', ['user_id', 'email']);
  }

  private team(): EngineRecord | undefined {
    return this.ctx.engine.store.collection('slack.teams', ['team_id']).all()[0];
  }

  /** A user by name or id; the first seeded person when none is named. */
  private user(nameOrId: string | undefined, at: string): EngineRecord {
    const live = this.users()
      .all()
      .filter((u) => !u.deleted);
    const found = nameOrId
      ? live.find((u) => u.name === nameOrId || u.user_id === nameOrId)
      : live.find((u) => !u.is_bot && u.name !== 'admin');
    if (!found) throw new TwinInputError(400, `${at}: no user ${nameOrId ? `"${nameOrId}"` : 'to act as'}`);
    return found;
  }

  private channel(nameOrId: string | undefined, at: string): EngineRecord {
    const channels = this.ctx.engine.store.collection('slack.channels', ['channel_id', 'name']).all();
    const found = nameOrId
      ? channels.find((c) => c.channel_id === nameOrId || (c.name === nameOrId && !c.is_im))
      : (channels.find((c) => c.name === 'general') ?? channels[0]);
    if (!found) throw new TwinInputError(400, `${at}: no channel ${nameOrId ? `"${nameOrId}"` : ''}`);
    return found;
  }

  /** `POST /messages`: a user posts in a channel, as a person would in Slack; the app gets the event. */
  async postMessage(body: unknown): Promise<{ status: number; body: unknown }> {
    const m = validate<{ user: string; channel: string; text: string; thread_ts?: string }>(
      messageSchema,
      body,
    );
    const user = this.user(m.user, 'user');
    if (user.is_bot) throw new TwinInputError(400, `user: "${m.user}" is a bot; post as a person`);
    const answer = await this.ctx.call(String(user.user_id), 'chat.postMessage', {
      channel: m.channel,
      text: m.text,
      ...(m.thread_ts ? { thread_ts: m.thread_ts } : {}),
    });
    if (answer.ok !== true) throw new TwinInputError(400, `chat.postMessage: ${String(answer.error)}`);
    return { status: 201, body: answer };
  }

  /** `POST /commands`: a user runs a slash command; the answer is what the app acknowledged it with. */
  async command(body: unknown): Promise<{ status: number; body: unknown }> {
    const c = validate<{
      command: string;
      text: string;
      user?: string;
      channel?: string;
      ack_timeout_ms: number;
    }>(commandSchema, body);
    const user = this.user(c.user, 'user');
    const channel = this.channel(c.channel, 'channel');
    const team = this.team();
    const responseUrl = this.issueResponseUrl(String(channel.channel_id), String(user.user_id));
    const payload = {
      token: this.ctx.verificationToken,
      team_id: team?.team_id,
      team_domain: team?.domain,
      channel_id: channel.channel_id,
      channel_name: channel.name,
      user_id: user.user_id,
      user_name: user.name,
      command: c.command,
      text: c.text,
      api_app_id: this.ctx.appId,
      is_enterprise_install: 'false',
      response_url: responseUrl,
      trigger_id: triggerId(),
    };
    const result = await this.deliver('slash_commands', payload, true, c.ack_timeout_ms);
    const shown =
      result.acked && result.response !== undefined
        ? await this.respond(String(channel.channel_id), String(user.user_id), result.response)
        : undefined;
    return { status: 200, body: { ...result, ...(shown ? { shown } : {}), payload } };
  }

  /** `POST /interactions`: a user clicks a button, a shortcut, submits a modal... */
  async interaction(body: unknown): Promise<{ status: number; body: unknown }> {
    const i = validate<{
      type: string;
      user?: string;
      channel?: string;
      payload: Json;
      ack_timeout_ms: number;
    }>(interactionSchema, body);
    const user = this.user(i.user, 'user');
    const channel = i.channel ? this.channel(i.channel, 'channel') : undefined;
    const team = this.team();
    const payload: Json = {
      type: i.type,
      token: this.ctx.verificationToken,
      api_app_id: this.ctx.appId,
      team: { id: team?.team_id, domain: team?.domain },
      user: { id: user.user_id, username: user.name, name: user.name, team_id: team?.team_id },
      enterprise: null,
      is_enterprise_install: false,
      trigger_id: triggerId(),
      ...(channel
        ? {
            channel: { id: channel.channel_id, name: channel.name },
            response_url: this.issueResponseUrl(String(channel.channel_id), String(user.user_id)),
          }
        : {}),
      ...i.payload,
    };
    const answersWithPayload = i.type === 'view_submission' || i.type === 'block_suggestion';
    const result = await this.deliver('interactive', payload, answersWithPayload, i.ack_timeout_ms);
    return { status: 200, body: { ...result, payload } };
  }

  /**
   * Over Socket Mode when connected, else POSTed to the webhook target as Slack posts slash commands and
   * interactions: form-encoded (an interaction as one `payload` field of JSON), signed.
   */
  private async deliver(
    type: 'slash_commands' | 'interactive',
    payload: Json,
    acceptsResponsePayload: boolean,
    ackTimeoutMs: number,
  ): Promise<{ via: string; acked: boolean; response?: unknown; error?: string; envelope_id?: string }> {
    if (this.ctx.hub.open) {
      const sent = this.ctx.hub.send(type, payload, { acceptsResponsePayload, retries: false, ackTimeoutMs });
      const acked = await sent.settled;
      return {
        via: 'socket_mode',
        envelope_id: sent.record.envelope_id,
        acked,
        ...(acked
          ? sent.record.response !== undefined
            ? { response: sent.record.response }
            : {}
          : { error: OPERATION_TIMEOUT }),
      };
    }
    const target = this.ctx.target();
    if (!target) {
      throw new TwinInputError(
        409,
        'no app to send it to: no Socket Mode connection is open and no webhook target is set',
      );
    }
    const form =
      type === 'interactive'
        ? new URLSearchParams({ payload: JSON.stringify(payload) })
        : new URLSearchParams(
            Object.entries(payload).map(([k, v]): [string, string] => [k, String(v ?? '')]),
          );
    const text = form.toString();
    const headers = {
      'content-type': 'application/x-www-form-urlencoded',
      ...this.ctx.signer({
        event: type,
        body: text,
        secret: this.ctx.signingSecret,
        guid: String(payload.trigger_id),
        attempt: 1,
      }),
    };
    try {
      const res = await fetch(target.url, {
        method: 'POST',
        headers,
        body: text,
        signal: AbortSignal.timeout(ackTimeoutMs),
      });
      const answer = await res.text();
      if (!res.ok) return { via: 'http', acked: false, error: `http_${res.status}` };
      return { via: 'http', acked: true, ...(answer ? { response: parseAnswer(answer) } : {}) };
    } catch {
      return { via: 'http', acked: false, error: OPERATION_TIMEOUT };
    }
  }

  /**
   * A slash command's or response_url's answer, shown as Slack shows it: `in_channel` posted by the app,
   * anything else to the user alone (ephemeral). An answer with neither text nor blocks shows nothing.
   */
  private async respond(channel: string, user: string, response: unknown): Promise<Shown | undefined> {
    const r = typeof response === 'string' ? { text: response } : (response as Json);
    if (!r || typeof r !== 'object' || (r.text === undefined && r.blocks === undefined)) return undefined;
    const content = {
      channel,
      ...(r.text !== undefined ? { text: String(r.text) } : {}),
      ...(r.blocks !== undefined ? { blocks: r.blocks } : {}),
    };
    const inChannel = r.response_type === 'in_channel';
    const answer = inChannel
      ? await this.ctx.call(undefined, 'chat.postMessage', content)
      : await this.ctx.call(undefined, 'chat.postEphemeral', { ...content, user });
    const as = inChannel ? 'in_channel' : 'ephemeral';
    return answer.ok === true
      ? { as, ts: String(answer.ts ?? answer.message_ts) }
      : { as, error: String(answer.error) };
  }

  /** A `response_url` on the origin the app reaches the twin at (its Socket Mode connection's, else the base URL). */
  private issueResponseUrl(channel: string, user: string): string {
    const id = String(Date.now()) + randomBytes(3).readUIntBE(0, 3);
    const secret = randomBytes(18).toString('base64url');
    this.responseUrls.set(id, {
      secret,
      channel,
      user,
      expires: Date.now() + RESPONSE_URL_TTL_MS,
      uses: 0,
    });
    while (this.responseUrls.size > MAX_RESPONSE_URLS) {
      this.responseUrls.delete(this.responseUrls.keys().next().value!);
    }
    const origin = this.ctx.hub.origin ?? this.ctx.baseUrl;
    return `${origin}/commands/${String(this.team()?.team_id ?? 'T0')}/${id}/${secret}`;
  }

  /** Whether a `/commands/...` path is a live response_url (its secret compared in full). */
  knowsResponseUrl(pathname: string): boolean {
    return this.responseUrlOf(pathname) !== undefined;
  }

  private responseUrlOf(pathname: string): ResponseUrl | undefined {
    const [, , , id, secret] = pathname.split('/');
    const entry = id ? this.responseUrls.get(id) : undefined;
    if (!entry || entry.secret !== secret) return undefined;
    if (entry.expires < Date.now() || entry.uses >= RESPONSE_URL_USES) return undefined;
    return entry;
  }

  /** A POST to a response_url: its JSON message shown as Slack shows it (see `respond`). */
  async answerResponseUrl(request: Request): Promise<Response> {
    const entry = this.responseUrlOf(new URL(request.url).pathname);
    if (!entry) return json(404, { ok: false, error: 'expired_url' });
    let message: unknown;
    try {
      message = JSON.parse(await request.text());
    } catch {
      return json(400, { ok: false, error: 'invalid_payload' });
    }
    if (!message || typeof message !== 'object' || Array.isArray(message)) {
      return json(400, { ok: false, error: 'invalid_payload' });
    }
    entry.uses += 1;
    const shown = await this.respond(entry.channel, entry.user, message);
    if (!shown) return json(400, { ok: false, error: 'no_text' });
    return shown.error ? json(400, { ok: false, error: shown.error }) : json(200, { ok: true });
  }

  /** Admin routes of the Slack twin: what a person does in the workspace. */
  routes(
    method: string,
    subpath: string,
    body: unknown,
  ): Promise<{ status: number; body: unknown }> | undefined {
    if (method === 'POST' && subpath === '/messages') return this.postMessage(body);
    if (method === 'POST' && subpath === '/commands') return this.command(body);
    if (method === 'POST' && subpath === '/interactions') return this.interaction(body);
    if (method === 'GET' && subpath === '/socket-mode') {
      return Promise.resolve({ status: 200, body: this.ctx.hub.describe() });
    }
    return undefined;
  }
}

/** A trigger id as Slack writes them (`<digits>.<digits>.<hex>`). */
function triggerId(): string {
  return `${Date.now()}.${randomBytes(4).readUInt32BE(0)}.${randomBytes(16).toString('hex')}`;
}

/** An HTTP answer to a slash command: JSON when it is, else its text (Slack shows plain text as is). */
function parseAnswer(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}
