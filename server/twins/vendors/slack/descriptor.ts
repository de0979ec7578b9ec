/** What Twinbox knows of the Slack twin without running it (TwinDescriptor); its driver is twin.ts. */
import Joi from 'joi';
import type { TwinDescriptor } from '../../contract.ts';
import { seedValidator } from '../../kit/seed-validator.ts';
import { summarizeSlack } from './summary.ts';
import { describeSlackChange } from './changes.ts';
import { slackPresets } from './presets.ts';

export interface SlackSeed {
  team?: { name?: string; domain?: string };
  users?: Array<{ name: string; real_name?: string; email?: string; [key: string]: unknown }>;
  channels?: Array<{
    name: string;
    topic?: string;
    purpose?: string;
    is_private?: boolean;
    /** User names; the channel's members are exactly these plus the bot (default: every user). */
    members?: string[];
    /** History, oldest first; `user` is a user name (default: the seed's first user). */
    messages?: Array<{ user?: string; text: string }>;
    [key: string]: unknown;
  }>;
  /** Name of the bot user SLACK_BOT_TOKEN authenticates as (default `twinbox-bot`). */
  bot_name?: string;
  webhook?: { url: string; events?: string[] };
}

const schema = Joi.object<SlackSeed>({
  team: Joi.object({ name: Joi.string(), domain: Joi.string() }),
  users: Joi.array().items(
    Joi.object({
      name: Joi.string().required(),
      real_name: Joi.string(),
      email: Joi.string().email(),
    }).unknown(true),
  ),
  channels: Joi.array().items(
    Joi.object({
      name: Joi.string()
        .pattern(/^[a-z0-9_-]+$/)
        .required(),
      topic: Joi.string(),
      purpose: Joi.string(),
      is_private: Joi.boolean(),
      members: Joi.array().items(Joi.string().min(1)),
      messages: Joi.array().items(
        Joi.object({ user: Joi.string().min(1), text: Joi.string().min(1).required() }),
      ),
    }).unknown(true),
  ),
  bot_name: Joi.string().pattern(/^[a-z0-9_-]+$/),
  webhook: Joi.object({
    url: Joi.string()
      .uri({ scheme: ['http', 'https'] })
      .required(),
    events: Joi.array().items(Joi.string()),
  }),
});

const DEFAULT_SEED: SlackSeed = {
  users: [{ name: 'ada', real_name: 'Ada Lovelace', email: 'ada@example.com' }],
  channels: [{ name: 'general', topic: 'General' }],
};

const validateSlackSeed = seedValidator('slack', schema, { empty: DEFAULT_SEED });

export const slackDescriptor: TwinDescriptor<SlackSeed, 'slack'> = {
  name: 'slack',
  description:
    'Slack Web API (auth.test, conversations, chat.postMessage/update, users) on the emulate engine, Events API over HTTP or Socket Mode',
  hosts: ['slack.com', 'wss-primary.slack.com', 'wss-backup.slack.com'],
  envVarNames: ['SLACK_BOT_TOKEN', 'SLACK_SIGNING_SECRET', 'SLACK_API_URL', 'SLACK_APP_TOKEN'],
  // Bolt's default request URL path.
  webhook: { path: '/slack/events', secretVar: 'SLACK_SIGNING_SECRET' },
  summarize: summarizeSlack,
  validateSeed: validateSlackSeed,
  presets: slackPresets,
  describeChange: describeSlackChange,
};
