/**
 * The Microsoft twin's scenario presets: ready-made seeds and the counts each one promises. GET /scenarios
 * lists them (server/scenarios/presets.ts sets the order); test/scenarios/presets.test.ts starts each one
 * and checks every promised count through the official SDK, before and after a reset.
 */
import type { TwinPresets } from '../../contract.ts';

export const microsoftPresets: TwinPresets = {
  promiseKeys: {
    users: 'users of the tenant, as Graph `GET /users` lists them',
  },
  presets: [
    {
      id: 'preset_entra_tenant',
      name: 'Microsoft Entra ID tenant',
      description:
        'An Entra ID tenant (contoso.example) with three people who can sign in to the app with Microsoft, listed by Microsoft Graph.',
      twins: ['microsoft'],
      seed: {
        microsoft: {
          users: [
            { email: 'adele@contoso.example', name: 'Adele Vance' },
            { email: 'megan@contoso.example', name: 'Megan Bowen' },
            { email: 'lee@contoso.example', name: 'Lee Gu' },
          ],
        },
      },
      promises: { microsoft: { users: 3 } },
    },
  ],
};
