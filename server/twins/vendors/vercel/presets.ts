/**
 * The Vercel twin's scenario presets: ready-made seeds and the counts each one promises. GET /scenarios
 * lists them (server/scenarios/presets.ts sets the order); test/scenarios/presets.test.ts starts each one
 * and checks every promised count through the official SDK, before and after a reset.
 */
import type { TwinPresets } from '../../contract.ts';

export const vercelPresets: TwinPresets = {
  promiseKeys: {
    teams: 'teams',
    projects: 'projects in those teams',
    env_vars: 'environment variables of those projects',
  },
  presets: [
    {
      id: 'preset_vercel_team',
      name: 'Vercel team with two projects',
      description:
        'A Vercel team (acme) with a Next.js web app carrying two environment variables and an API project with one, for an app that manages its deployments and settings through the Vercel REST API.',
      twins: ['vercel'],
      seed: {
        vercel: {
          teams: [{ slug: 'acme', name: 'Acme' }],
          projects: [
            {
              name: 'acme-web',
              team: 'acme',
              framework: 'nextjs',
              env: [
                { key: 'NEXT_PUBLIC_SITE_URL', value: 'https://acme.dev', type: 'plain' },
                {
                  key: 'DATABASE_URL',
                  value: 'postgres://acme:acme@db.acme.dev/acme',
                  target: ['production'],
                },
              ],
            },
            { name: 'acme-api', team: 'acme', env: [{ key: 'LOG_LEVEL', value: 'info', type: 'plain' }] },
          ],
        },
      },
      promises: { vercel: { teams: 1, projects: 2, env_vars: 3 } },
    },
  ],
};
