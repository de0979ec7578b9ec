/**
 * The Clerk twin's scenario presets: ready-made seeds and the counts each one promises. GET /scenarios
 * lists them (server/scenarios/presets.ts sets the order); test/scenarios/presets.test.ts starts each one
 * and checks every promised count through the official SDK, before and after a reset.
 */
import type { TwinPresets } from '../../contract.ts';

export const clerkPresets: TwinPresets = {
  promiseKeys: {
    users: 'users, as @clerk/backend lists them',
    organizations: 'organizations, as @clerk/backend lists them',
    memberships: 'memberships in those organizations, as @clerk/backend lists them',
  },
  presets: [
    {
      id: 'preset_clerk_team',
      name: 'Clerk users in an organization',
      description:
        'Three Clerk users (one with a password, one on the pro plan in its public metadata) and an Acme organization where Ada is admin and Grace a member, for an app that signs people in with Clerk and checks their organization role.',
      twins: ['clerk'],
      seed: {
        clerk: {
          users: [
            {
              email: 'ada@acme.dev',
              first_name: 'Ada',
              last_name: 'Lovelace',
              password: 'analytical-engine',
              public_metadata: { plan: 'pro' },
            },
            { email: 'grace@acme.dev', first_name: 'Grace', last_name: 'Hopper' },
            { email: 'linus@example.org', username: 'linus' },
          ],
          organizations: [
            {
              name: 'Acme',
              slug: 'acme',
              members: [
                { email: 'ada@acme.dev', role: 'org:admin' },
                { email: 'grace@acme.dev', role: 'org:member' },
              ],
            },
          ],
        },
      },
      promises: { clerk: { users: 3, organizations: 1, memberships: 2 } },
    },
  ],
};
