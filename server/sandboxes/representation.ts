import Joi from 'joi';
import type { SandboxRecord } from '../store/records.ts';
import { SANDBOX_STATUSES } from './states.ts';

/** The sandbox as the API shows it: the spec's fields first, then ours (docs/api.md). */
export interface SandboxView {
  sandbox_id: string;
  status: SandboxRecord['status'];
  app_url: string | null;
  twins: SandboxRecord['twins'];
  env_vars: Record<string, string>;
  repo: string;
  branch: string | null;
  pr_url: string | null;
  scenario_id: string | null;
  ttl_minutes: number;
  seed: Record<string, unknown> | null;
  seed_notes: string[];
  twin_admin_token: string;
  error: string | null;
  isolation: 'full' | 'none' | null;
  blocked_egress: Array<{ host: string; port: number; count: number; first_seen: string }>;
  created_at: string;
  updated_at: string;
  expires_at: string;
}

export function toSandboxView(sandbox: SandboxRecord): SandboxView {
  return {
    sandbox_id: sandbox.id,
    status: sandbox.status,
    app_url: sandbox.app_url,
    twins: sandbox.twins,
    env_vars: sandbox.env_vars,
    repo: sandbox.repo,
    branch: sandbox.branch,
    pr_url: sandbox.pr_url,
    scenario_id: sandbox.scenario_id,
    ttl_minutes: sandbox.ttl_minutes,
    seed: sandbox.seed,
    seed_notes: sandbox.seed_notes,
    twin_admin_token: sandbox.twin_admin_token,
    error: sandbox.error,
    isolation: sandbox.isolation ?? null,
    blocked_egress: sandbox.blocked_egress ?? [],
    created_at: sandbox.created_at,
    updated_at: sandbox.updated_at,
    expires_at: sandbox.expires_at,
  };
}

const stringMap = Joi.object().pattern(Joi.string(), Joi.string());

export const twinEntrySchema = Joi.object({
  base_url: Joi.string().uri().required(),
  admin_url: Joi.string().uri().required(),
  env_vars: stringMap.required(),
}).label('TwinEntry');

export const sandboxViewSchema = Joi.object({
  sandbox_id: Joi.string().guid().required(),
  status: Joi.string()
    .valid(...SANDBOX_STATUSES)
    .required(),
  app_url: Joi.string().uri().allow(null).required(),
  twins: Joi.object().pattern(Joi.string(), twinEntrySchema).required(),
  env_vars: stringMap.required(),
  repo: Joi.string().required(),
  branch: Joi.string().allow(null).required(),
  pr_url: Joi.string().allow(null).required(),
  scenario_id: Joi.string().allow(null).required(),
  ttl_minutes: Joi.number().integer().required(),
  seed: Joi.object()
    .allow(null)
    .required()
    .description('The seed applied to the twins, keyed by twin name (from scenario_id or scenario_prompt).'),
  seed_notes: Joi.array()
    .items(Joi.string())
    .required()
    .description('What the prompt planner could not interpret; empty when everything was understood.'),
  twin_admin_token: Joi.string()
    .required()
    .description("Bearer token for the twins' admin_url; visible to the sandbox's owner only."),
  error: Joi.string().allow(null).required().description('Why the sandbox failed; null otherwise.'),
  isolation: Joi.string()
    .valid('full', 'none')
    .allow(null)
    .required()
    .description(
      '`full`: own network namespace, bubblewrap and limits; `none`: development without isolation; null until deployed.',
    ),
  blocked_egress: Joi.array()
    .items(
      Joi.object({
        host: Joi.string().required(),
        port: Joi.number().integer().required(),
        count: Joi.number().integer().required(),
        first_seen: Joi.string().isoDate().required(),
      }).label('BlockedEgress'),
    )
    .required()
    .description(
      'Outbound calls the code tried and was refused (the outbound-call guard), per host and port.',
    ),
  created_at: Joi.string().isoDate().required(),
  updated_at: Joi.string().isoDate().required(),
  expires_at: Joi.string().isoDate().required(),
}).label('Sandbox');

export const sandboxPageSchema = Joi.object({
  sandboxes: Joi.array().items(sandboxViewSchema).required(),
  next_cursor: Joi.string().allow(null).required(),
}).label('SandboxPage');
