import type { TwinSummary } from '../../contract.ts';
import { engineItems, newestFirst, record, summaryTable, text } from '../../kit/summary.ts';

/** A Slack `ts` ("1795435618.000001", seconds) as an ISO time; the raw text when it is not one. */
function slackTime(ts: unknown): string {
  const seconds = Number.parseFloat(text(ts));
  return Number.isFinite(seconds) ? new Date(seconds * 1000).toISOString() : text(ts);
}

/** The Slack twin's snapshot (the engine's collections) as channels and messages, newest first. */
export function summarizeSlack(state: unknown): TwinSummary {
  const users = new Map(engineItems(state, 'slack.users').map((u) => [u.user_id, text(u.name)]));
  const channels = engineItems(state, 'slack.channels');
  const channelNames = new Map(channels.map((c) => [c.channel_id, text(c.name)]));
  const messages = engineItems(state, 'slack.messages').sort(
    (a, b) => Number.parseFloat(text(b.ts)) - Number.parseFloat(text(a.ts)) || Number(b.id) - Number(a.id),
  );
  return {
    tables: [
      summaryTable(
        'Channels',
        ['Channel', 'Topic', 'Members', 'Private', 'Archived'],
        newestFirst(channels).map((c) => [
          `#${text(c.name)}`,
          text(record(c.topic)?.value),
          text(c.num_members ?? (Array.isArray(c.members) ? c.members.length : '')),
          c.is_private === true ? 'yes' : 'no',
          c.is_archived === true ? 'yes' : 'no',
        ]),
      ),
      summaryTable(
        'Messages',
        ['Channel', 'From', 'Text', 'Time'],
        messages.map((m) => [
          channelNames.has(m.channel_id) ? `#${channelNames.get(m.channel_id)}` : text(m.channel_id),
          users.get(m.user) ?? text(m.user),
          text(m.text),
          slackTime(m.ts),
        ]),
      ),
    ],
  };
}
