/**
 * The MongoDB Atlas twin's scenario presets: ready-made seeds and the counts each one promises. GET /scenarios
 * lists them (server/scenarios/presets.ts sets the order); test/scenarios/presets.test.ts starts each one
 * and checks every promised count through the official SDK, before and after a reset.
 */
import type { TwinPresets } from '../../contract.ts';

export const mongoatlasPresets: TwinPresets = {
  promiseKeys: {
    projects: "projects, with the engine's Project0",
    clusters: "clusters, with the engine's Cluster0",
    documents: 'documents in every collection, through the Data API',
  },
  presets: [
    {
      id: 'preset_mongo_orders',
      name: 'Orders on MongoDB Atlas',
      description:
        "A MongoDB Atlas project (Acme) with a production cluster holding a shop database of three orders and two customers, an app database user, beside the engine's Project0 and Cluster0, reached through the Admin API with a service account and through the Data API.",
      twins: ['mongoatlas'],
      seed: {
        mongoatlas: {
          projects: [{ name: 'Acme' }],
          clusters: [{ name: 'AcmeProd', project: 'Acme', region: 'EU_WEST_1' }],
          database_users: [{ username: 'shop-app', project: 'Acme' }],
          databases: [{ cluster: 'AcmeProd', name: 'shop', collections: ['orders', 'customers'] }],
          documents: [
            {
              cluster: 'AcmeProd',
              database: 'shop',
              collection: 'customers',
              document: { _id: 'c1', name: 'Ada Lovelace' },
            },
            {
              cluster: 'AcmeProd',
              database: 'shop',
              collection: 'customers',
              document: { _id: 'c2', name: 'Grace Hopper' },
            },
            {
              cluster: 'AcmeProd',
              database: 'shop',
              collection: 'orders',
              document: { customer: 'c1', total: 2900, status: 'paid' },
            },
            {
              cluster: 'AcmeProd',
              database: 'shop',
              collection: 'orders',
              document: { customer: 'c1', total: 900, status: 'refunded' },
            },
            {
              cluster: 'AcmeProd',
              database: 'shop',
              collection: 'orders',
              document: { customer: 'c2', total: 29000, status: 'paid' },
            },
          ],
        },
      },
      promises: { mongoatlas: { projects: 2, clusters: 2, documents: 5 } },
    },
  ],
};
