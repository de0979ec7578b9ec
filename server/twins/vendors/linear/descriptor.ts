/** What Twinbox knows of the Linear twin without running it (TwinDescriptor); its driver is twin.ts. */
import Joi from 'joi';
import type { TwinDescriptor } from '../../contract.ts';
import { seedValidator } from '../../kit/seed-validator.ts';
import { describeLinearChange } from './changes.ts';
import { summarizeLinear } from './summary.ts';
import { linearPresets } from './presets.ts';

export interface LinearSeed {
  organization?: { name: string; url_key?: string };
  users?: Array<{ email: string; name?: string; admin?: boolean }>;
  teams?: Array<{ key: string; name: string; states?: Array<{ name: string; type?: string }> }>;
  labels?: Array<{ name: string; color?: string; team?: string }>;
  projects?: Array<{ name: string; team?: string; description?: string }>;
  issues?: Array<{
    team: string;
    title: string;
    description?: string;
    state?: string;
    priority?: number;
    assignee?: string;
    labels?: string[];
    project?: string;
  }>;
  /** Comments on issues, which are named by identifier (`ENG-2`). */
  comments?: Array<{ issue: string; body: string; user?: string }>;
  webhook?: { url: string; events?: string[] };
}

const STATE_TYPES = ['triage', 'backlog', 'unstarted', 'started', 'completed', 'canceled'];

const schema = Joi.object<LinearSeed>({
  organization: Joi.object({
    name: Joi.string().min(1).max(100).required(),
    url_key: Joi.string().pattern(/^[a-z0-9-]{1,50}$/, 'url key'),
  }),
  users: Joi.array().items(
    Joi.object({ email: Joi.string().email().required(), name: Joi.string().min(1), admin: Joi.boolean() }),
  ),
  teams: Joi.array().items(
    Joi.object({
      key: Joi.string()
        .pattern(/^[A-Z][A-Z0-9]{0,6}$/, 'team key')
        .required(),
      name: Joi.string().min(1).required(),
      states: Joi.array()
        .items(Joi.object({ name: Joi.string().min(1).required(), type: Joi.string().valid(...STATE_TYPES) }))
        .min(1),
    }),
  ),
  labels: Joi.array().items(
    Joi.object({
      name: Joi.string().min(1).required(),
      color: Joi.string().pattern(/^#[0-9a-fA-F]{6}$/, 'hex colour'),
      team: Joi.string(),
    }),
  ),
  projects: Joi.array().items(
    Joi.object({ name: Joi.string().min(1).required(), team: Joi.string(), description: Joi.string() }),
  ),
  issues: Joi.array().items(
    Joi.object({
      team: Joi.string().required(),
      title: Joi.string().min(1).required(),
      description: Joi.string(),
      state: Joi.string(),
      priority: Joi.number().integer().min(0).max(4),
      assignee: Joi.string().email(),
      labels: Joi.array().items(Joi.string()),
      project: Joi.string(),
    }),
  ),
  comments: Joi.array().items(
    Joi.object({
      issue: Joi.string()
        .pattern(/^[A-Z][A-Z0-9]{0,6}-\d+$/, 'issue identifier')
        .required(),
      body: Joi.string().min(1).required(),
      user: Joi.string().email(),
    }),
  ),
  webhook: Joi.object({
    url: Joi.string()
      .uri({ scheme: ['http', 'https'] })
      .required(),
    events: Joi.array().items(Joi.string()),
  }),
});

const validateLinearSeed = seedValidator('linear', schema);

export const linearDescriptor: TwinDescriptor<LinearSeed, 'linear'> = {
  name: 'linear',
  description:
    'Linear GraphQL API (viewer, users, teams, workflow states, issues, comments, labels, projects, cycles, webhooks) and OAuth on the emulate engine',
  hosts: ['api.linear.app'],
  envVarNames: ['LINEAR_API_KEY', 'LINEAR_API_URL', 'LINEAR_WEBHOOK_SECRET'],
  // Linear has no framework default; a Next.js-style route like the other twins'.
  webhook: { path: '/api/webhooks/linear', secretVar: 'LINEAR_WEBHOOK_SECRET' },
  summarize: summarizeLinear,
  validateSeed: validateLinearSeed,
  presets: linearPresets,
  describeChange: describeLinearChange,
};
