import {
  bodyField,
  bodyObject,
  successfulMutation,
  type RequestLogEntry,
} from '../../runtime/request-log.ts';

type Describe = (field: (name: string) => string | undefined, response: Record<string, unknown>) => string;

const channelName = (response: Record<string, unknown>) => {
  const channel = bodyObject(response.channel);
  return typeof channel?.name === 'string' ? `#${channel.name}` : undefined;
};

/** Web API methods that change state, by name. `field` reads a request parameter ('?' when absent). */
const METHODS: Record<string, Describe> = {
  'chat.postMessage': (field, r) =>
    `message ${String(r.ts ?? '')} posted in ${String(r.channel ?? field('channel'))}${field('thread_ts') !== '?' ? ` (reply to ${field('thread_ts')})` : ''}`,
  'chat.postEphemeral': (field) => `ephemeral message posted in ${field('channel')} for ${field('user')}`,
  'chat.meMessage': (field, r) => `me message ${String(r.ts ?? '')} posted in ${field('channel')}`,
  'chat.update': (field, r) =>
    `message ${String(r.ts ?? field('ts'))} updated in ${String(r.channel ?? field('channel'))}`,
  'chat.delete': (field, r) =>
    `message ${String(r.ts ?? field('ts'))} deleted from ${String(r.channel ?? field('channel'))}`,
  'chat.scheduleMessage': (field, r) =>
    `message ${String(r.scheduled_message_id ?? '')} scheduled in ${String(r.channel ?? field('channel'))} for ${field('post_at')}`,
  'chat.deleteScheduledMessage': (field) =>
    `scheduled message ${field('scheduled_message_id')} deleted from ${field('channel')}`,
  'conversations.create': (field, r) => {
    const id = String(bodyObject(r.channel)?.id ?? '');
    return `channel ${channelName(r) ?? `#${field('name')}`} created${id ? ` (${id})` : ''}`;
  },
  'conversations.archive': (field) => `channel ${field('channel')} archived`,
  'conversations.unarchive': (field) => `channel ${field('channel')} unarchived`,
  'conversations.rename': (field, r) =>
    `channel ${field('channel')} renamed to ${channelName(r) ?? `#${field('name')}`}`,
  'conversations.setTopic': (field) => `topic of ${field('channel')} set`,
  'conversations.setPurpose': (field) => `purpose of ${field('channel')} set`,
  'conversations.join': (field) => `joined channel ${field('channel')}`,
  'conversations.leave': (field) => `left channel ${field('channel')}`,
  'conversations.invite': (field) => `${field('users')} invited to ${field('channel')}`,
  'conversations.kick': (field) => `${field('user')} removed from ${field('channel')}`,
  'reactions.add': (field) =>
    `reaction :${field('name')}: added to message ${field('timestamp')} in ${field('channel')}`,
  'reactions.remove': (field) =>
    `reaction :${field('name')}: removed from message ${field('timestamp')} in ${field('channel')}`,
  'pins.add': (field) => `message ${field('timestamp')} pinned in ${field('channel')}`,
  'pins.remove': (field) => `message ${field('timestamp')} unpinned in ${field('channel')}`,
  'oauth.v2.access': () => 'OAuth access token issued',
  'oauth.access': () => 'OAuth access token issued',
};

/**
 * What a Slack Web API call changed ("message 1712.0001 posted in C0123"). Slack answers 200 with
 * `ok: false` for its errors, so only `ok: true` answers count.
 */
export function describeSlackChange(entry: RequestLogEntry): string | undefined {
  const mutation = successfulMutation(entry);
  if (!mutation) return undefined;
  const method = /^\/api\/([A-Za-z.]+)$/.exec(mutation.pathname)?.[1];
  const describe = method ? METHODS[method] : undefined;
  const response = bodyObject(entry.response_body);
  if (!describe || response?.ok !== true) return undefined;
  // Parameters come in the body (JSON or form) or, for some clients, in the query string.
  const query = new URLSearchParams(entry.path.split('?')[1] ?? '');
  const field = (name: string) => bodyField(entry.request_body, name) ?? query.get(name) ?? '?';
  return describe(field, response);
}
