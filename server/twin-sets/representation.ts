import Joi from 'joi';
import type { SandboxRecord } from '../store/records.ts';
import { twinEntrySchema } from '../sandboxes/representation.ts';
import { SANDBOX_STATUSES } from '../sandboxes/states.ts';

/** A twin set as the API shows it (docs/api.md, "Twin sets"): a sandbox's twin fields, no app. */
export interface TwinSetView {
  id: string;
  status: SandboxRecord['status'];
  twins: SandboxRecord['twins'];
  env_vars: Record<string, string>;
  twin_names: string[];
  scenario_id: string | null;
  seed: Record<string, unknown> | null;
  seed_notes: string[];
  ttl_minutes: number;
  twin_admin_token: string;
  error: string | null;
  created_at: string;
  updated_at: string;
  expires_at: string;
}

export function toTwinSetView(record: SandboxRecord): TwinSetView {
  return {
    id: record.id,
    status: record.status,
    twins: record.twins,
    env_vars: record.env_vars,
    twin_names: record.twin_names,
    scenario_id: record.scenario_id,
    seed: record.seed,
    seed_notes: record.seed_notes,
    ttl_minutes: record.ttl_minutes,
    twin_admin_token: record.twin_admin_token,
    error: record.error,
    created_at: record.created_at,
    updated_at: record.updated_at,
    expires_at: record.expires_at,
  };
}

export const twinSetViewSchema = Joi.object({
  id: Joi.string().guid().required(),
  status: Joi.string()
    .valid(...SANDBOX_STATUSES)
    .required()
    .description('queued, then building while its twins start, then ready; failed, expired or deleted.'),
  twins: Joi.object()
    .pattern(Joi.string(), twinEntrySchema)
    .required()
    .description('Each twin once ready: its public base_url, admin_url and variables. Empty before.'),
  env_vars: Joi.object()
    .pattern(Joi.string(), Joi.string())
    .required()
    .description("Every twin's variables in one map (then the request's env): what an app is given."),
  twin_names: Joi.array().items(Joi.string()).required(),
  scenario_id: Joi.string().allow(null).required(),
  seed: Joi.object().allow(null).required(),
  seed_notes: Joi.array().items(Joi.string()).required(),
  ttl_minutes: Joi.number().integer().required(),
  twin_admin_token: Joi.string().required().description("Bearer token for the twins' admin_url."),
  error: Joi.string().allow(null).required().description('Why it failed; null otherwise.'),
  created_at: Joi.string().isoDate().required(),
  updated_at: Joi.string().isoDate().required(),
  expires_at: Joi.string().isoDate().required(),
}).label('TwinSet');

export const twinSetPageSchema = Joi.object({
  twin_sets: Joi.array().items(twinSetViewSchema).required(),
  next_cursor: Joi.string().allow(null).required(),
}).label('TwinSetPage');
