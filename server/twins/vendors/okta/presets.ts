/**
 * The Okta twin's scenario presets: ready-made seeds and the counts each one promises. GET /scenarios
 * lists them (server/scenarios/presets.ts sets the order); test/scenarios/presets.test.ts starts each one
 * and checks every promised count through the official SDK, before and after a reset.
 */
import type { TwinPresets } from '../../contract.ts';

export const oktaPresets: TwinPresets = {
  promiseKeys: {
    users: 'users',
    groups: 'groups, not the built-in `Everyone`',
    memberships: 'memberships in those groups',
  },
  presets: [
    {
      id: 'preset_identity_directory',
      name: 'Company directory on Okta',
      description:
        'An Okta org with four people (one of them suspended) in an Engineering and a Support group, and an OIDC app for the deployed app to sign people in with.',
      twins: ['okta'],
      seed: {
        okta: {
          users: [
            { login: 'ada@acme.example.com', first_name: 'Ada', last_name: 'Lovelace' },
            { login: 'grace@acme.example.com', first_name: 'Grace', last_name: 'Hopper' },
            { login: 'linus@acme.example.com', first_name: 'Linus', last_name: 'Torvalds' },
            {
              login: 'mallory@acme.example.com',
              first_name: 'Mallory',
              last_name: 'Moe',
              status: 'SUSPENDED',
            },
          ],
          groups: [
            {
              name: 'Engineering',
              description: 'Builds the product',
              members: ['ada@acme.example.com', 'grace@acme.example.com', 'linus@acme.example.com'],
            },
            { name: 'Support', description: 'Answers customers', members: ['grace@acme.example.com'] },
          ],
          redirect_uris: ['http://localhost:3000/authorization-code/callback'],
        },
      },
      promises: { okta: { users: 4, groups: 2, memberships: 4 } },
    },
  ],
};
