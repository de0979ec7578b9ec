import Joi from 'joi';
import { SANDBOX_STATUSES } from './states.ts';

/**
 * GitHub's naming rules: an owner is 1-39 alphanumerics or single hyphens, not at either end; a
 * repository name is 1-100 of letters, digits, `.`, `-`, `_`, and not `.` or `..`.
 */
const OWNER = '[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}';
const REPO_NAME = '(?!\\.\\.?$)[A-Za-z0-9._-]{1,100}';
export const REPO_PATTERN = new RegExp(`^${OWNER}/${REPO_NAME}$`);

/** git's ref-name rules (git check-ref-format), the ones that matter for a branch typed by a person. */
const BRANCH_PATTERN =
  /^(?!\/|.*\/$|.*\/\/|.*\.\.|.*@\{|.*\.lock(?:\/|$)|.*\/\.|\.|-|@$)[^\x00-\x20\x7f~^:?*[\\]{1,255}(?<!\.)$/;

/** A conventional environment variable name (what shells, Node and most runtimes accept). */
export const ENV_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
export const ENV_MAX_ENTRIES = 100;
export const ENV_MAX_BYTES = 64 * 1024;
export const TTL_MIN = 1;
export const TTL_MAX = 480;
export const TTL_DEFAULT = 60;

export const envSchema = Joi.object()
  .pattern(Joi.string().pattern(ENV_NAME_PATTERN), Joi.string().allow('').max(ENV_MAX_BYTES))
  .max(ENV_MAX_ENTRIES)
  .custom((value: Record<string, string>) => {
    const bytes = Object.entries(value).reduce(
      (sum, [key, text]) => sum + Buffer.byteLength(key) + Buffer.byteLength(text),
      0,
    );
    if (bytes > ENV_MAX_BYTES) throw new Error(`"env" is larger than ${ENV_MAX_BYTES} bytes in all`);
    return value;
  })
  .messages({
    'any.custom': '{#error.message}',
    'object.unknown':
      '{#label} is not a valid name: env names must match [A-Za-z_][A-Za-z0-9_]* (at most 128 characters)',
  });

export const createSandboxSchema = Joi.object({
  repo: Joi.string().pattern(REPO_PATTERN).required().messages({
    'string.pattern.base': '"repo" must be "owner/repo" with GitHub\'s naming rules',
  }),
  branch: Joi.string().pattern(BRANCH_PATTERN).messages({
    'string.pattern.base': '"branch" is not a valid git branch name',
  }),
  pr_url: Joi.string().uri({ scheme: ['http', 'https'] }),
  twins: Joi.array().items(Joi.string().min(1).max(64)).unique().max(20),
  scenario_id: Joi.string().min(1).max(128),
  scenario_prompt: Joi.string().min(1).max(4000),
  ttl_minutes: Joi.number().integer().min(TTL_MIN).max(TTL_MAX).strict(),
  env: envSchema,
})
  .or('branch', 'pr_url')
  .messages({ 'object.missing': 'Give "branch" or "pr_url": one of them is required' })
  .options({ convert: false })
  .label('body');

export const listSandboxesQuery = Joi.object({
  repo: Joi.string().pattern(REPO_PATTERN).messages({
    'string.pattern.base': '"repo" must be "owner/repo"',
  }),
  status: Joi.string().valid(...SANDBOX_STATUSES),
  limit: Joi.number().integer().min(1).max(100).default(20),
  cursor: Joi.string().max(200),
});

export const sandboxIdParam = Joi.object({
  sandbox_id: Joi.string().max(100).required(),
});

/** Minutes an extension adds when none are given (the GitHub App's `/twinbox extend` uses the same). */
export const EXTEND_DEFAULT_MINUTES = 30;

export const extendSandboxSchema = Joi.object({
  minutes: Joi.number().integer().min(1).max(TTL_MAX).strict(),
})
  // No body at all means the default extension.
  .allow(null)
  .label('ExtendRequest');
