/**
 * The Linear twin's scenario presets: ready-made seeds and the counts each one promises. GET /scenarios
 * lists them (server/scenarios/presets.ts sets the order); test/scenarios/presets.test.ts starts each one
 * and checks every promised count through the official SDK, before and after a reset.
 */
import type { TwinPresets } from '../../contract.ts';

export const linearPresets: TwinPresets = {
  promiseKeys: {
    teams: "teams, with the engine's default ENG team",
    issues: "issues, with the engine's sample issue",
  },
  presets: [
    {
      id: 'preset_linear_triage',
      name: 'Linear bug triage',
      description:
        "A Linear workspace (Acme) with a Web team, two people, Bug and Regression labels and three issues (one in progress, one done, one with a comment), beside the engine's default Engineering team and its sample issue.",
      twins: ['linear'],
      seed: {
        linear: {
          organization: { name: 'Acme', url_key: 'acme' },
          users: [
            { email: 'ada@acme.dev', name: 'Ada Lovelace', admin: true },
            { email: 'grace@acme.dev', name: 'Grace Hopper' },
          ],
          teams: [{ key: 'WEB', name: 'Web' }],
          labels: [
            { name: 'Bug', color: '#d92d20', team: 'WEB' },
            { name: 'Regression', color: '#f79009', team: 'WEB' },
          ],
          issues: [
            {
              team: 'WEB',
              title: 'Checkout button does nothing on Safari',
              state: 'In Progress',
              assignee: 'grace@acme.dev',
              labels: ['Bug', 'Regression'],
              priority: 1,
            },
            { team: 'WEB', title: 'Typo on the pricing page', state: 'Done', labels: ['Bug'], priority: 4 },
            { team: 'WEB', title: 'Receipt email shows the wrong currency', state: 'Todo', priority: 2 },
          ],
          comments: [{ issue: 'WEB-1', body: 'Reproduced on Safari 17 only.', user: 'ada@acme.dev' }],
        },
      },
      promises: { linear: { teams: 2, issues: 4 } },
    },
  ],
};
