import Joi from 'joi';
import { SANDBOX_STATUSES } from '../sandboxes/states.ts';
import { envSchema, TTL_MAX, TTL_MIN } from '../sandboxes/validation.ts';

/**
 * A `POST /twin-sets` body: the twin and seeding fields of `POST /sandboxes`, under the same rules, and
 * nothing about a repository (a `repo` here is refused as an unknown field, not ignored).
 */
export const createTwinSetSchema = Joi.object({
  twins: Joi.array()
    .items(Joi.string().min(1).max(64))
    .unique()
    .max(20)
    .description(
      'Twin names from GET /twins; may be omitted when scenario_id or scenario_prompt names some.',
    ),
  scenario_id: Joi.string().min(1).max(128),
  scenario_prompt: Joi.string().min(1).max(4000),
  ttl_minutes: Joi.number().integer().min(TTL_MIN).max(TTL_MAX).strict(),
  env: envSchema.description("Extra variables laid over the twins' own in `env_vars`."),
})
  .options({ convert: false })
  .label('TwinSetRequest');

export const listTwinSetsQuery = Joi.object({
  status: Joi.string().valid(...SANDBOX_STATUSES),
  limit: Joi.number().integer().min(1).max(100).default(20),
  cursor: Joi.string().max(200),
});

export const twinSetIdParam = Joi.object({
  twin_set_id: Joi.string().max(100).required(),
});
