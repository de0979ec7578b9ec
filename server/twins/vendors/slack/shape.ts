/**
 * Brings the engine's Web API answers to the shape Slack documents (its Web API description, which the twin
 * tests read from `../shared/vendor-schemas/slack/` and check every response against): users with `updated`, `is_app_user`
 * and image URLs, conversations with `is_general` and the sharing flags, threads with `thread_ts`,
 * `reply_count`, `subscribed` and `parent_user_id`, history with `pin_count`, and no request options echoed
 * back as message fields. The engine's routes and state stay as shipped; only what goes out changes.
 */
import { createHash } from 'node:crypto';
import type { Engine, EngineRecord } from '../../engine/emulate.ts';
import { bytesAnswer } from '../../runtime/http.ts';

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => !!v && typeof v === 'object' && !Array.isArray(v);

/** Request options the engine keeps on a message; Slack applies them and never returns them. */
const REQUEST_ONLY = ['mrkdwn', 'parse', 'link_names', 'unfurl_links', 'unfurl_media', 'metadata'];
/** Profile fields of newer Slack releases the engine adds, outside Slack's published description. */
const UNDOCUMENTED_PROFILE = ['status_emoji_display_info', 'huddle_state', 'huddle_state_expiration_ts'];
const AVATAR_SIZES = [24, 32, 48, 72, 192, 512] as const;
/** The icon a workspace without one of its own shows (Slack's default team avatar). */
const TEAM_ICON = 'https://a.slack-edge.com/80588/img/avatars-teams/ava_0001';

/** The methods whose answers this layer changes (the cases of `fix`); others pass untouched. */
const FIXED = new Set([
  'users.list',
  'users.info',
  'users.lookupByEmail',
  'users.profile.get',
  'team.info',
  'conversations.list',
  'conversations.info',
  'conversations.create',
  'conversations.join',
  'conversations.open',
  'conversations.rename',
  'conversations.unarchive',
  'conversations.setTopic',
  'conversations.setPurpose',
  'conversations.invite',
  'conversations.history',
  'conversations.replies',
  'chat.postMessage',
  'chat.update',
  'chat.meMessage',
  'chat.scheduleMessage',
  'reactions.get',
]);

const seconds = (iso: unknown) =>
  typeof iso === 'string' && !Number.isNaN(Date.parse(iso)) ? Math.floor(Date.parse(iso) / 1000) : 0;

/** Parameters of a Web API call, from its query and its form or JSON body (as the engine reads them). */
async function paramsOf(request: Request): Promise<Record<string, string>> {
  const out: Record<string, string> = Object.fromEntries(new URL(request.url).searchParams);
  const text = await request
    .clone()
    .text()
    .catch(() => '');
  if (/json/i.test(request.headers.get('content-type') ?? '')) {
    try {
      const parsed: unknown = JSON.parse(text);
      if (isObject(parsed)) {
        for (const [k, v] of Object.entries(parsed)) if (typeof v === 'string') out[k] = v;
      }
    } catch {
      // Unparseable JSON: the engine saw no parameters either.
    }
  } else for (const [k, v] of new URLSearchParams(text)) out[k] = v;
  return out;
}

export class SlackShape {
  constructor(private readonly engine: Engine) {}

  private collection(name: string, index: string[]) {
    return this.engine.store.collection<EngineRecord>(name, index);
  }

  /** Whether `finish` may change the answer to a request for `pathname` (and so reads its parameters). */
  changes(pathname: string): boolean {
    return FIXED.has(/^\/api\/([\w.]+)$/.exec(pathname)?.[1] ?? '');
  }

  /**
   * The response Slack would give for a Web API call, from the engine's. `caller` is the calling user's
   * id (threads say whether they follow them).
   */
  async finish(request: Request, response: Response, caller: string | undefined): Promise<Response> {
    const method = /^\/api\/([\w.]+)$/.exec(new URL(request.url).pathname)?.[1];
    if (!method || !FIXED.has(method) || !/json/i.test(response.headers.get('content-type') ?? '')) {
      return response;
    }
    let body: unknown;
    try {
      body = await response.clone().json();
    } catch {
      return response;
    }
    if (!isObject(body) || body.ok !== true) return response;
    const params = await paramsOf(request);
    this.fix(method, body, params, caller);
    const headers = new Headers(response.headers);
    headers.delete('content-length');
    // As bytes (runtime/http.ts): a Response made from text wraps it in a stream to be read back.
    return bytesAnswer(Buffer.from(JSON.stringify(body)), { status: response.status, headers });
  }

  private fix(method: string, body: Json, params: Record<string, string>, caller: string | undefined): void {
    switch (method) {
      case 'users.list':
        for (const u of Array.isArray(body.members) ? body.members : []) this.user(u);
        body.cache_ts ??= Math.floor(Date.now() / 1000);
        break;
      case 'users.info':
      case 'users.lookupByEmail':
        this.user(body.user);
        break;
      case 'users.profile.get':
        this.profile(body.profile, undefined);
        break;
      case 'team.info':
        if (isObject(body.team)) {
          body.team.email_domain ??= '';
          body.team.icon ??= {
            image_34: `${TEAM_ICON}-34.png`,
            image_44: `${TEAM_ICON}-44.png`,
            image_68: `${TEAM_ICON}-68.png`,
            image_88: `${TEAM_ICON}-88.png`,
            image_102: `${TEAM_ICON}-102.png`,
            image_132: `${TEAM_ICON}-132.png`,
            image_230: `${TEAM_ICON}-230.png`,
            image_default: true,
          };
        }
        break;
      case 'conversations.list':
        for (const c of Array.isArray(body.channels) ? body.channels : []) this.channel(c);
        break;
      case 'conversations.info':
      case 'conversations.create':
      case 'conversations.join':
      case 'conversations.open':
      case 'conversations.rename':
      case 'conversations.unarchive':
      case 'conversations.setTopic':
      case 'conversations.setPurpose':
      case 'conversations.invite':
        this.channel(body.channel);
        break;
      case 'conversations.history': {
        const channel = params.channel ?? '';
        body.pin_count ??= this.collection('slack.pins', ['pin_id', 'channel_id', 'message_ts']).findBy(
          'channel_id',
          channel,
        ).length;
        body.channel_actions_ts ??= null;
        body.channel_actions_count ??= 0;
        for (const m of Array.isArray(body.messages) ? body.messages : []) this.message(m, channel, caller);
        break;
      }
      case 'conversations.replies':
        for (const m of Array.isArray(body.messages) ? body.messages : []) {
          this.message(m, params.channel ?? '', caller);
        }
        break;
      case 'chat.postMessage':
      case 'chat.update':
      case 'chat.meMessage':
        this.message(body.message, String(body.channel ?? params.channel ?? ''), caller);
        break;
      case 'chat.scheduleMessage':
        // Slack's description of this answer's message: who posts it (user, team, and bot_id for a bot),
        // and no subtype, where the engine sends only `subtype: bot_message`.
        if (isObject(body.message)) {
          const bot = this.botOf(caller);
          body.message.user ??= caller;
          body.message.team ??= this.team()?.team_id;
          if (bot) body.message.bot_id ??= bot.bot_id;
          delete body.message.subtype;
        }
        break;
      case 'reactions.get':
        if (body.type === 'message') {
          body.channel ??= params.channel;
          this.message(body.message, params.channel ?? '', caller);
        }
        break;
    }
  }

  /** The bot whose app user `userId` is, if any. */
  private botOf(userId: unknown): EngineRecord | undefined {
    return this.collection('slack.bots', ['bot_id'])
      .all()
      .find((b) => b.user_id === userId);
  }

  private team(): EngineRecord | undefined {
    return this.collection('slack.teams', ['team_id']).all()[0];
  }

  /** A user as Slack lists one: when it changed, whether it is an app user, its colour, zone and roles. */
  private user(u: unknown): void {
    if (!isObject(u) || typeof u.id !== 'string') return;
    const record = this.collection('slack.users', ['user_id', 'email']).findOneBy('user_id', u.id);
    const digest = createHash('sha256').update(u.id).digest('hex');
    u.updated ??= seconds(record?.updated_at);
    u.is_app_user ??= false;
    u.color ??= digest.slice(0, 6);
    u.tz ??= 'UTC';
    u.tz_label ??= 'Coordinated Universal Time';
    u.tz_offset ??= 0;
    // The engine's own first user is the workspace's primary owner, as the workspace creator is.
    const owner = u.name === 'admin' && u.is_admin === true;
    u.is_owner ??= owner;
    u.is_primary_owner ??= owner;
    u.is_restricted ??= false;
    u.is_ultra_restricted ??= false;
    const bot = u.is_bot ? this.botOf(u.id) : undefined;
    this.profile(u.profile, bot?.bot_id as string | undefined, u.team_id);
  }

  /**
   * A profile with the images Slack gives users without a picture of their own (Gravatar's, keyed by the
   * address, as Slack does), the avatar hash that names them, and `fields`.
   */
  private profile(profile: unknown, botId: string | undefined, teamId?: unknown): void {
    if (!isObject(profile)) return;
    for (const key of UNDOCUMENTED_PROFILE) delete profile[key];
    const who = String(profile.email ?? profile.display_name ?? profile.real_name ?? '');
    const gravatar = createHash('md5').update(who.trim().toLowerCase()).digest('hex');
    profile.avatar_hash ??= `g${gravatar.slice(0, 11)}`;
    for (const size of AVATAR_SIZES) {
      const key = `image_${size}`;
      if (!profile[key])
        profile[key] = `https://secure.gravatar.com/avatar/${gravatar}.jpg?s=${size}&d=identicon`;
    }
    profile.fields ??= null;
    if (typeof teamId === 'string') profile.team ??= teamId;
    if (botId) {
      profile.bot_id ??= botId;
      profile.always_active ??= false;
    }
  }

  /** A conversation with the flags Slack always sends: the general channel, and that nothing is shared. */
  private channel(c: unknown): void {
    if (!isObject(c) || typeof c.id !== 'string') return;
    const teamId = this.team()?.team_id;
    if (c.is_im === true) {
      c.is_org_shared ??= false;
      c.priority ??= 0;
      return;
    }
    c.is_general ??= this.generalChannelId() === c.id;
    c.is_shared ??= false;
    c.is_ext_shared ??= false;
    c.is_org_shared ??= false;
    c.is_pending_ext_shared ??= false;
    c.pending_shared ??= [];
    c.pending_connected_team_ids ??= [];
    c.shared_team_ids ??= typeof teamId === 'string' ? [teamId] : [];
    c.unlinked ??= 0;
    c.parent_conversation ??= null;
    c.previous_names ??= [];
  }

  /** The workspace's general channel: the engine always creates `#general` first. */
  private generalChannelId(): string | undefined {
    const channels = this.collection('slack.channels', ['channel_id', 'name']).all();
    return (channels.find((c) => c.name === 'general') ?? channels[0])?.channel_id as string | undefined;
  }

  /**
   * A message as Slack returns it: a thread parent with `thread_ts` (its own ts), its reply count, users
   * and latest reply, and whether the caller follows it (its author and repliers do); a reply with its
   * parent's author.
   */
  private message(m: unknown, channel: string, caller: string | undefined): void {
    if (!isObject(m) || typeof m.ts !== 'string') return;
    for (const key of REQUEST_ONLY) delete m[key];
    if (m.reply_broadcast === undefined) delete m.reply_broadcast;
    if (typeof m.icon_emoji === 'string' || typeof m.icon_url === 'string') {
      m.icons ??= typeof m.icon_emoji === 'string' ? { emoji: m.icon_emoji } : { image_48: m.icon_url };
      delete m.icon_emoji;
      delete m.icon_url;
    }
    const messages = this.collection('slack.messages', ['ts', 'channel_id']);
    const inChannel = messages.findBy('channel_id', channel);
    const replies = inChannel.filter((r) => r.thread_ts === m.ts && r.ts !== m.ts);
    if (replies.length > 0 || (typeof m.reply_count === 'number' && m.reply_count > 0)) {
      const users = [...new Set(replies.map((r) => String(r.user)))];
      m.thread_ts ??= m.ts;
      m.reply_count = replies.length;
      m.reply_users = users;
      m.reply_users_count = users.length;
      const latest = replies.map((r) => String(r.ts)).sort();
      if (latest.length) m.latest_reply = latest.at(-1);
      m.subscribed = !!caller && (m.user === caller || users.includes(caller));
      return;
    }
    if (typeof m.thread_ts === 'string' && m.thread_ts !== m.ts) {
      const parent = inChannel.find((p) => p.ts === m.thread_ts);
      if (parent && typeof parent.user === 'string') m.parent_user_id ??= parent.user;
    }
  }
}
