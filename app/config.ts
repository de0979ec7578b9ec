import Joi from 'joi';
import { parse as parseYaml } from 'yaml';
import { PROFILE_PATH } from '../server/deploy/steps/profile.ts';
import { TTL_MAX, TTL_MIN } from '../server/sandboxes/validation.ts';

/**
 * The GitHub App's part of `.github/twinbox.yml`, read from the pull request's BASE branch: the base is
 * what the repository's writers have accepted, so a pull request cannot change which twins, scenario,
 * TTL or variables it is deployed with. The deploy engine reads the same file at the head for the
 * runtime profile (install, build, start, ...); those keys are left to it.
 */
export interface RepoConfig {
  twins?: string[];
  /** A preset or a saved scenario of the installation's account (`scenario_id`). */
  scenario?: string;
  ttl_minutes?: number;
  /** The sandbox's caller `env` (overrides twin variables). Never used for pull requests from forks. */
  env: Record<string, string>;
  /** Base branches whose pull requests get a sandbox (`*` matches any run of characters); absent: all. */
  branches?: string[];
  /** Draft pull requests get a sandbox too; default false (they get one when marked ready for review). */
  drafts: boolean;
}

export const DEFAULT_REPO_CONFIG: RepoConfig = { env: {}, drafts: false };

const schema = Joi.object({
  twins: Joi.array().items(Joi.string().min(1).max(64)).max(20),
  scenario: Joi.string().min(1).max(128),
  ttl_minutes: Joi.number().integer().min(TTL_MIN).max(TTL_MAX),
  env: Joi.object().pattern(
    /^[A-Za-z_][A-Za-z0-9_]*$/,
    Joi.alternatives(Joi.string().allow(''), Joi.number(), Joi.boolean()),
  ),
  branches: Joi.array().items(Joi.string().min(1).max(255)).min(1),
  drafts: Joi.boolean(),
})
  // The runtime-profile keys belong to the deploy engine, which validates them at the head commit.
  .unknown(true);

export class RepoConfigError extends Error {}

/** Parses the file's text (undefined: no file, the defaults). Throws RepoConfigError saying what is wrong. */
export function parseRepoConfig(text: string | undefined): RepoConfig {
  if (text === undefined) return { ...DEFAULT_REPO_CONFIG };
  let parsed: unknown;
  try {
    parsed = parseYaml(text) ?? {};
  } catch (error) {
    throw new RepoConfigError(`${PROFILE_PATH} is not valid YAML: ${(error as Error).message}`);
  }
  if (typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new RepoConfigError(`${PROFILE_PATH} must be a mapping of keys to values.`);
  }
  const { value, error } = schema.validate(parsed, { abortEarly: false });
  if (error) throw new RepoConfigError(`${PROFILE_PATH}: ${error.details.map((d) => d.message).join('; ')}`);
  const v = value as {
    twins?: string[];
    scenario?: string;
    ttl_minutes?: number;
    env?: Record<string, string | number | boolean>;
    branches?: string[];
    drafts?: boolean;
  };
  return {
    ...(v.twins ? { twins: v.twins } : {}),
    ...(v.scenario ? { scenario: v.scenario } : {}),
    ...(v.ttl_minutes ? { ttl_minutes: v.ttl_minutes } : {}),
    env: Object.fromEntries(Object.entries(v.env ?? {}).map(([k, x]) => [k, String(x)])),
    ...(v.branches ? { branches: v.branches } : {}),
    drafts: v.drafts ?? false,
  };
}

/** True when `branch` is one the configuration deploys pull requests into. */
export function branchAllowed(config: RepoConfig, branch: string): boolean {
  if (!config.branches) return true;
  return config.branches.some((pattern) => {
    const source = pattern
      .split('*')
      .map((part) => part.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*');
    return new RegExp(`^${source}$`).test(branch);
  });
}

/** The subset of Octokit this module uses, so tests can hand in any client of the contents API. */
interface ContentsClient {
  rest: {
    repos: {
      getContent(params: {
        owner: string;
        repo: string;
        path: string;
        ref: string;
      }): Promise<{ data: unknown }>;
    };
  };
}

/** The file at `ref` (the base branch), or undefined when the repository has none. */
export async function fetchRepoConfigText(
  octokit: ContentsClient,
  owner: string,
  repo: string,
  ref: string,
): Promise<string | undefined> {
  for (const path of [PROFILE_PATH, '.github/twinbox.yaml']) {
    try {
      const { data } = await octokit.rest.repos.getContent({ owner, repo, path, ref });
      const file = data as { type?: string; content?: string; encoding?: string };
      if (file.type !== 'file' || typeof file.content !== 'string') continue;
      return Buffer.from(file.content, file.encoding === 'base64' ? 'base64' : 'utf8').toString('utf8');
    } catch (error) {
      if ((error as { status?: number }).status === 404) continue;
      throw error;
    }
  }
  return undefined;
}
