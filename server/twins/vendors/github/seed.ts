import Joi from 'joi';
import { TwinInputError } from '../../contract.ts';
import { assertSafeKeys } from '../../runtime/safe-json.ts';

/** File contents: text, or `{ base64 }` for binary files. `null` deletes the file. */
export type FileContent = string | { base64: string } | null;

export interface GitHubRepoSeed {
  owner: string;
  name: string;
  private?: boolean;
  description?: string;
  default_branch?: string;
  /** Files committed onto the default branch, on top of the initial README. */
  files?: Record<string, FileContent>;
  /** Further branches, each with the files it adds on top of the default branch. */
  branches?: Record<string, Record<string, FileContent>>;
  /** Issues, created in order (numbers 1, 2, ... shared with pulls, which come after them). */
  issues?: GitHubIssueSeed[];
  /** Pull requests, each with its head branch (created from the default branch when missing). */
  pulls?: GitHubPullSeed[];
  [key: string]: unknown;
}

/** A comment as a seed gives it; `user` is a login (created as a user when unknown; default: the repo owner). */
export interface GitHubCommentSeed {
  body: string;
  user?: string;
}

export interface GitHubIssueSeed {
  title: string;
  body?: string;
  state?: 'open' | 'closed';
  /** Label names, created on the repository when missing. */
  labels?: string[];
  comments?: GitHubCommentSeed[];
}

export interface GitHubPullSeed {
  title: string;
  /** Head branch in the same repository; created from the default branch when missing. */
  head: string;
  /** Base branch (default: the default branch); must exist. */
  base?: string;
  body?: string;
  state?: 'open' | 'closed';
  /** Files committed onto `head`, so the pull request has a diff. */
  files?: Record<string, FileContent>;
  /** Issue comments on the pull request (the conversation tab). */
  comments?: GitHubCommentSeed[];
  /** Review comments on the diff (pulls.listReviewComments). */
  review_comments?: Array<GitHubCommentSeed & { path: string; line?: number }>;
}

export interface GitHubSeed {
  users?: Array<{ login: string; name?: string; email?: string; [key: string]: unknown }>;
  orgs?: Array<Record<string, unknown>>;
  repos?: GitHubRepoSeed[];
  oauth_apps?: Array<{
    client_id: string;
    client_secret: string;
    name?: string;
    redirect_uris?: string[];
    /** User tokens expire after 8 hours and come with refresh tokens, as a GitHub App's do. */
    expiring_tokens?: boolean;
  }>;
  apps?: Array<Record<string, unknown>>;
  /** Login that GITHUB_TOKEN authenticates as (default: first user). */
  token_login?: string;
  /** Webhook target for every event of this twin (the deploy worker usually sets it later). */
  webhook?: { url: string; secret?: string; events?: string[] };
  /** When set, /login/oauth/authorize approves at once as this login (as GitHub does for an app already authorised). */
  oauth?: { auto_approve?: string };
}

const files = Joi.object().pattern(
  Joi.string().pattern(/^[^/].*[^/]$|^[^/]$/),
  Joi.alternatives(
    Joi.string().allow(''),
    Joi.object({ base64: Joi.string().base64().allow('').required() }),
    null,
  ),
);

const login = Joi.string().pattern(/^[A-Za-z0-9-]+$/);
const branchName = Joi.string().pattern(/^[^\s~^:?*[\\]+$/);
const comment = Joi.object({ body: Joi.string().min(1).required(), user: login });

const issueSchema = Joi.object({
  title: Joi.string().trim().min(1).required(),
  body: Joi.string().allow(''),
  state: Joi.string().valid('open', 'closed'),
  labels: Joi.array().items(Joi.string().trim().min(1)),
  comments: Joi.array().items(comment),
});

const pullSchema = Joi.object({
  title: Joi.string().trim().min(1).required(),
  head: branchName.required(),
  base: branchName.invalid(Joi.ref('head')).messages({ 'any.invalid': '{{#label}} must differ from head' }),
  body: Joi.string().allow(''),
  state: Joi.string().valid('open', 'closed'),
  files,
  comments: Joi.array().items(comment),
  review_comments: Joi.array().items(
    Joi.object({
      path: Joi.string().min(1).required(),
      body: Joi.string().min(1).required(),
      line: Joi.number().integer().min(1),
      user: login,
    }),
  ),
});

/** One repository, as a seed document and the admin API's create-repository call both give it. */
export const repoSchema = Joi.object({
  owner: Joi.string()
    .pattern(/^[A-Za-z0-9-]+$/)
    .required(),
  name: Joi.string()
    .pattern(/^[A-Za-z0-9._-]+$/)
    .required(),
  private: Joi.boolean(),
  description: Joi.string().allow(''),
  default_branch: Joi.string(),
  files,
  branches: Joi.object().pattern(Joi.string(), files),
  issues: Joi.array().items(issueSchema),
  pulls: Joi.array().items(pullSchema),
});

const schema = Joi.object<GitHubSeed>({
  users: Joi.array().items(
    Joi.object({
      login: Joi.string()
        .pattern(/^[A-Za-z0-9-]+$/)
        .required(),
      name: Joi.string(),
      email: Joi.string().email(),
    }).unknown(true),
  ),
  orgs: Joi.array().items(Joi.object({ login: Joi.string().required() }).unknown(true)),
  repos: Joi.array().items(repoSchema.unknown(true)),
  oauth_apps: Joi.array().items(
    Joi.object({
      client_id: Joi.string().required(),
      client_secret: Joi.string().required(),
      name: Joi.string(),
      redirect_uris: Joi.array().items(Joi.string()),
      expiring_tokens: Joi.boolean(),
    }),
  ),
  apps: Joi.array().items(
    Joi.object({
      app_id: Joi.number().integer().required(),
      slug: Joi.string().required(),
      private_key: Joi.string().required(),
    }).unknown(true),
  ),
  token_login: Joi.string(),
  webhook: Joi.object({
    url: Joi.string()
      .uri({ scheme: ['http', 'https'] })
      .required(),
    secret: Joi.string(),
    events: Joi.array().items(Joi.string()),
  }),
  oauth: Joi.object({ auto_approve: Joi.string() }),
});

export const DEFAULT_GITHUB_SEED: GitHubSeed = {
  users: [{ login: 'octocat', name: 'The Octocat', email: 'octocat@github.com' }],
};

export function validateGitHubSeed(seed: unknown): GitHubSeed {
  if (seed === undefined || seed === null) return DEFAULT_GITHUB_SEED;
  assertSafeKeys(seed, 'github seed');
  const { error, value } = schema.validate(seed);
  if (error) throw new TwinInputError(400, `github seed: ${error.message}`);
  return value;
}

/** The part of our seed the engine understands; files, webhook and oauth are applied by the twin. */
export function engineSeed(seed: GitHubSeed): Record<string, unknown> {
  return {
    ...(seed.users ? { users: seed.users } : {}),
    ...(seed.orgs ? { orgs: seed.orgs } : {}),
    ...(seed.repos
      ? {
          repos: seed.repos.map(({ files: _f, branches: _b, issues: _i, pulls: _p, ...repo }) => ({
            auto_init: true,
            ...repo,
          })),
        }
      : {}),
    ...(seed.oauth_apps ? { oauth_apps: seed.oauth_apps } : {}),
    ...(seed.apps ? { apps: seed.apps } : {}),
  };
}
