/**
 * The Slack twin's scenario presets: ready-made seeds and the counts each one promises. GET /scenarios
 * lists them (server/scenarios/presets.ts sets the order); test/scenarios/presets.test.ts starts each one
 * and checks every promised count through the official SDK, before and after a reset.
 */
import type { TwinPresets } from '../../contract.ts';

export const slackPresets: TwinPresets = {
  promiseKeys: {
    users:
      'users (the engine also always has user `admin` and the bot user; they count only when the seed names them)',
    channels:
      'channels (the engine also always has `#general` and `#random`; they count only when the seed names them)',
    messages: 'messages',
  },
  presets: [
    {
      id: 'preset_team_workspace',
      name: 'Team workspace',
      description:
        'A Slack workspace with four people, three channels (#general, #engineering, #design) and a short message history in each.',
      twins: ['slack'],
      seed: {
        slack: {
          team: { name: 'Acme', domain: 'acme' },
          users: [
            { name: 'ada', real_name: 'Ada Lovelace', email: 'ada@acme.example.com' },
            { name: 'grace', real_name: 'Grace Hopper', email: 'grace@acme.example.com' },
            { name: 'linus', real_name: 'Linus Torvalds', email: 'linus@acme.example.com' },
            { name: 'margaret', real_name: 'Margaret Hamilton', email: 'margaret@acme.example.com' },
          ],
          channels: [
            {
              name: 'general',
              topic: 'Company-wide announcements',
              messages: [
                { user: 'ada', text: 'Welcome to Acme, everyone!' },
                { user: 'grace', text: 'All-hands is on Thursday at 10:00.' },
              ],
            },
            {
              name: 'engineering',
              topic: 'Builds, deploys and code review',
              members: ['ada', 'grace', 'linus'],
              messages: [
                { user: 'linus', text: 'main is green again.' },
                { user: 'grace', text: 'Deploying v1.4.0 to staging.' },
                { user: 'ada', text: 'Staging looks good, shipping to production.' },
              ],
            },
            {
              name: 'design',
              topic: 'UI and brand',
              members: ['margaret', 'ada'],
              messages: [{ user: 'margaret', text: 'New logo drafts are in Figma.' }],
            },
          ],
        },
      },
      promises: { slack: { users: 4, channels: 3, messages: 6 } },
    },
    {
      id: 'preset_support_channel',
      name: 'Customer support channel',
      description:
        'A Slack workspace with a private #support channel (two agents and the bot) holding open customer questions.',
      twins: ['slack'],
      seed: {
        slack: {
          team: { name: 'Helpdesk', domain: 'helpdesk' },
          users: [
            { name: 'sam', real_name: 'Sam Agent', email: 'sam@helpdesk.example.com' },
            { name: 'alex', real_name: 'Alex Agent', email: 'alex@helpdesk.example.com' },
            { name: 'casey', real_name: 'Casey Customer', email: 'casey@customer.example.com' },
          ],
          channels: [
            {
              name: 'support',
              topic: 'Customer questions — reply in thread',
              is_private: true,
              members: ['sam', 'alex', 'casey'],
              messages: [
                { user: 'casey', text: 'Hi! I was charged twice for my March invoice.' },
                { user: 'sam', text: 'Sorry about that, looking into it now.' },
                { user: 'casey', text: 'Also, how do I change the card on file?' },
                { user: 'alex', text: 'Settings → Billing → Payment method.' },
                { user: 'casey', text: 'Still waiting on the refund for the double charge.' },
              ],
            },
          ],
        },
      },
      promises: { slack: { users: 3, channels: 1, messages: 5 } },
    },
  ],
};
