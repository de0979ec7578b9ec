/** What Twinbox knows of the Vercel twin without running it (TwinDescriptor); its driver is twin.ts. */
import Joi from 'joi';
import { TwinInputError, type TwinDescriptor } from '../../contract.ts';
import { seedValidator } from '../../kit/seed-validator.ts';
import { describeVercelChange } from './changes.ts';
import { summarizeVercel } from './summary.ts';
import { vercelPresets } from './presets.ts';

export interface VercelSeed {
  /** The account the instance's VERCEL_TOKEN belongs to (default `developer`). */
  user?: { username: string; name?: string; email?: string };
  teams?: Array<{ slug: string; name?: string }>;
  projects?: Array<{
    name: string;
    team?: string;
    framework?: string;
    env?: Array<{ key: string; value: string; type?: string; target?: string[] }>;
  }>;
}

const ENV_TYPES = ['encrypted', 'plain', 'sensitive', 'system'];
const ENV_TARGETS = ['production', 'preview', 'development'];
const SLUG = /^[a-z0-9][a-z0-9-]{0,47}$/;

const schema = Joi.object<VercelSeed>({
  user: Joi.object({
    username: Joi.string().pattern(SLUG, 'slug').required(),
    name: Joi.string(),
    email: Joi.string().email(),
  }),
  teams: Joi.array().items(
    Joi.object({ slug: Joi.string().pattern(SLUG, 'slug').required(), name: Joi.string() }),
  ),
  projects: Joi.array().items(
    Joi.object({
      name: Joi.string()
        .pattern(/^[a-z0-9._-]{1,100}$/, 'project name')
        .required(),
      team: Joi.string().pattern(SLUG, 'slug'),
      framework: Joi.string(),
      env: Joi.array().items(
        Joi.object({
          key: Joi.string()
            .pattern(/^[A-Za-z_][A-Za-z0-9_]*$/, 'variable name')
            .required(),
          value: Joi.string().allow('').required(),
          type: Joi.string().valid(...ENV_TYPES),
          target: Joi.array()
            .items(Joi.string().valid(...ENV_TARGETS))
            .min(1),
        }),
      ),
    }),
  ),
});

const validateVercelSeed = seedValidator('vercel', schema, {
  check(value) {
    for (const p of value.projects ?? []) {
      if (p.team && !(value.teams ?? []).some((t) => t.slug === p.team))
        throw new TwinInputError(
          400,
          `vercel seed: project "${p.name}" names team "${p.team}", which the seed lacks`,
        );
    }
  },
});

export const vercelDescriptor: TwinDescriptor<VercelSeed, 'vercel'> = {
  name: 'vercel',
  description:
    'Vercel REST API (user, teams, projects, project env vars and domains, deployments) on the emulate engine',
  hosts: ['api.vercel.com'],
  envVarNames: ['VERCEL_TOKEN', 'VERCEL_API_URL'],
  summarize: summarizeVercel,
  describeChange: describeVercelChange,
  validateSeed: validateVercelSeed,
  presets: vercelPresets,
};
