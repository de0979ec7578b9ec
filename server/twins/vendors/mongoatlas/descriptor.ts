/** What Twinbox knows of the MongoDB Atlas twin without running it (TwinDescriptor); its driver is twin.ts. */
import Joi from 'joi';
import type { TwinDescriptor } from '../../contract.ts';
import { seedValidator } from '../../kit/seed-validator.ts';
import { describeMongoAtlasChange } from './changes.ts';
import { summarizeMongoAtlas } from './summary.ts';
import { mongoatlasPresets } from './presets.ts';

export interface MongoAtlasSeed {
  projects?: Array<{ name: string }>;
  clusters?: Array<{
    name: string;
    project: string;
    provider?: string;
    instance_size?: string;
    region?: string;
  }>;
  database_users?: Array<{
    username: string;
    project: string;
    roles?: Array<{ database_name: string; role_name: string }>;
  }>;
  databases?: Array<{ cluster: string; name: string; collections?: string[] }>;
  /** Documents already stored, reachable through the Data API. */
  documents?: Array<{
    cluster: string;
    database: string;
    collection: string;
    document: Record<string, unknown>;
  }>;
}

const NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;
const DB_NAME = /^[^/\\. "$*<>:|?]{1,63}$/;

const schema = Joi.object<MongoAtlasSeed>({
  projects: Joi.array().items(Joi.object({ name: Joi.string().pattern(NAME, 'project name').required() })),
  clusters: Joi.array().items(
    Joi.object({
      name: Joi.string().pattern(NAME, 'cluster name').required(),
      project: Joi.string().required(),
      provider: Joi.string().valid('AWS', 'GCP', 'AZURE'),
      instance_size: Joi.string().pattern(/^M\d+$/, 'instance size'),
      region: Joi.string().pattern(/^[A-Z0-9_]+$/, 'region'),
    }),
  ),
  database_users: Joi.array().items(
    Joi.object({
      username: Joi.string().min(1).max(1024).required(),
      project: Joi.string().required(),
      roles: Joi.array().items(
        Joi.object({ database_name: Joi.string().required(), role_name: Joi.string().required() }),
      ),
    }),
  ),
  databases: Joi.array().items(
    Joi.object({
      cluster: Joi.string().required(),
      name: Joi.string().pattern(DB_NAME, 'database name').required(),
      collections: Joi.array().items(Joi.string().min(1).max(255)),
    }),
  ),
  documents: Joi.array().items(
    Joi.object({
      cluster: Joi.string().required(),
      database: Joi.string().pattern(DB_NAME, 'database name').required(),
      collection: Joi.string().min(1).max(255).required(),
      document: Joi.object().required(),
    }),
  ),
});

/** The engine always has project `Project0` with cluster `Cluster0`, which a seed may name too. */
const validateMongoAtlasSeed = seedValidator('mongoatlas', schema);

export const mongoatlasDescriptor: TwinDescriptor<MongoAtlasSeed, 'mongoatlas'> = {
  name: 'mongoatlas',
  description:
    'MongoDB Atlas Administration API v2 (projects, clusters, database users, databases, collections) with service-account OAuth, and the Data API v1 (find, insert, update, delete, aggregate) on the emulate engine',
  hosts: ['cloud.mongodb.com', 'data.mongodb-api.com'],
  envVarNames: [
    'MONGODB_ATLAS_BASE_URL',
    'MONGODB_ATLAS_CLIENT_ID',
    'MONGODB_ATLAS_CLIENT_SECRET',
    'MONGODB_DATA_API_URL',
    'MONGODB_DATA_API_KEY',
  ],
  summarize: summarizeMongoAtlas,
  describeChange: describeMongoAtlasChange,
  validateSeed: validateMongoAtlasSeed,
  presets: mongoatlasPresets,
};
