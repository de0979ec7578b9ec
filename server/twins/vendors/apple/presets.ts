/**
 * The Apple twin's scenario presets: ready-made seeds and the counts each one promises. GET /scenarios
 * lists them (server/scenarios/presets.ts sets the order); test/scenarios/presets.test.ts starts each one
 * and checks every promised count through the official SDK, before and after a reset.
 */
import type { TwinPresets } from '../../contract.ts';

export const applePresets: TwinPresets = {
  promiseKeys: {
    accounts: 'accounts offered on the Sign in with Apple account picker (Apple has no API that lists them)',
  },
  presets: [
    {
      id: 'preset_apple_sign_in',
      name: 'Sign in with Apple',
      description:
        'Two Apple Accounts that can sign in to the app with Apple, one sharing its email and one hiding it behind a private relay address.',
      twins: ['apple'],
      seed: {
        apple: {
          users: [
            { email: 'tim@icloud.example', name: 'Tim Apple' },
            { email: 'jane@icloud.example', name: 'Jane Appleseed', is_private_email: true },
          ],
        },
      },
      promises: { apple: { accounts: 2 } },
    },
  ],
};
