/** The records Twinbox keeps. Times are ISO-8601 UTC strings. */

export type Plan = 'free' | 'pro';

export interface AccountRecord {
  id: string;
  /** Normalized (see identity/email.ts); unique across accounts. */
  email: string;
  plan: Plan;
  /**
   * False while an account made by e-mail sign-up has not proven its address; such an account can
   * hold no session and no API key. Absent on accounts made before the field (and by operators):
   * those count as verified.
   */
  email_verified?: boolean;
  created_at: string;
}

export interface ApiKeyRecord {
  id: string;
  account_id: string;
  /** SHA-256 of the whole key, hex. The key itself is never stored. */
  hash: string;
  /** The first characters of the key, safe to show so a person can tell keys apart. */
  prefix: string;
  name: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

/** A link between an account and an account at a source-code host. */
export interface IdentityRecord {
  id: string;
  account_id: string;
  provider: 'github';
  /** `github:<numeric id>`: unique, so one provider account links to at most one Twinbox account. */
  provider_key: string;
  login: string;
  created_at: string;
}

/** One live one-time code per (e-mail, purpose); see identity/codes.ts. */
export interface VerificationCodeRecord {
  id: string;
  email: string;
  purpose: string;
  /** HMAC-SHA256 of purpose, e-mail and code under the server's code key, hex. */
  code_hash: string;
  attempts: number;
  created_at: string;
  expires_at: string;
  consumed_at: string | null;
}

/** A saved scenario: a seed document for twins, owned by one account. */
export interface ScenarioRecord {
  id: string;
  owner_id: string;
  name: string;
  twins: string[];
  seed: Record<string, unknown>;
  /** When planned from a prompt: what the planner could not interpret. */
  notes?: string[];
  created_at: string;
}

export type SandboxStatus = 'queued' | 'building' | 'ready' | 'failed' | 'expired' | 'deleted';

export interface TwinEntry {
  base_url: string;
  admin_url: string;
  env_vars: Record<string, string>;
}

export interface SandboxRecord {
  id: string;
  owner_id: string;
  status: SandboxStatus;
  repo: string;
  branch: string | null;
  pr_url: string | null;
  /** Twin names asked for (or chosen for) this sandbox. */
  twin_names: string[];
  scenario_id: string | null;
  scenario_prompt: string | null;
  ttl_minutes: number;
  /**
   * Bearer token of this sandbox's twin admin APIs. Kept readable (not hashed) because the owner
   * reads it through the sandbox API; the twins themselves keep only its hash.
   */
  twin_admin_token: string;
  /**
   * Seed documents keyed by twin name, from the scenario or planned from the prompt; what the twins
   * start with and what their reset returns to. Null when nothing is seeded (each twin's default).
   */
  seed: Record<string, unknown> | null;
  /** What the prompt planner could not interpret, or why part of a seed was not applied. */
  seed_notes: string[];
  /** The caller's `env`, kept to be merged over the twins' variables at deploy time. */
  env: Record<string, string>;
  app_url: string | null;
  twins: Record<string, TwinEntry>;
  env_vars: Record<string, string>;
  error: string | null;
  created_at: string;
  updated_at: string;
  expires_at: string;
  ended_at: string | null;
  /** How the app was confined once deployed: `none` in development without isolation (docs/security.md). */
  isolation?: 'full' | 'none' | null;
  /** Outbound calls the sandbox's code tried and was refused, per host and port. */
  blocked_egress?: Array<{ host: string; port: number; count: number; first_seen: string }>;
}

/** A GitHub App installation Twinbox has heard of (app/); its id is the installation's numeric id. */
export interface GitHubInstallationRecord {
  id: string;
  github_account_id: number;
  github_account_login: string;
  /** `User` or `Organization`. */
  github_account_type: string;
  /** Numeric GitHub id of whoever installed the app (`sender` of `installation.created`); null when unknown. */
  installer_github_id: number | null;
  created_at: string;
  updated_at: string;
}

/** A pull request the GitHub App looks after: its sandbox, its Deployment and its one comment. */
export interface GitHubPullRecord {
  /** `<repository id>-<number>`. */
  id: string;
  repo: string;
  number: number;
  html_url: string;
  installation_id: number;
  head_sha: string;
  head_ref: string;
  /** The head is in another repository: deploys wait for `/twinbox deploy` from a writer. */
  fork: boolean;
  state: 'open' | 'closed';
  /** The current sandbox (superseded ones are ended); null before the first or after a refusal. */
  sandbox_id: string | null;
  deployment_id: number | null;
  /** The last deployment status posted for `deployment_id`. */
  deployment_state: string | null;
  comment_id: number | null;
  /** The body last written, so an unchanged comment is not written again. */
  comment_body: string | null;
  /** Head commit a writer approved with `/twinbox deploy` (forks). */
  approved_sha: string | null;
  /** Why there is no sandbox (not connected, waiting for approval, config error, refused), shown in the comment. */
  notice: { kind: string; text: string } | null;
  created_at: string;
  updated_at: string;
}

/** A webhook delivery already accepted (X-GitHub-Delivery), so a repeated delivery does nothing. */
export interface GitHubDeliveryRecord {
  id: string;
  event: string;
  received_at: string;
}

/**
 * One thing Twinbox itself did to a sandbox or saw of it (timeline, server/timeline/events.ts): a deploy
 * step starting or ending, a status change, a crash, an extension, a blocked outbound call. Kept for
 * as long as the sandbox's record, at most a few hundred per sandbox (the oldest go first).
 */
export interface SandboxEventRecord {
  /** `<sandbox_id>_<seq>`. */
  id: string;
  sandbox_id: string;
  /** 1, 2, 3... per sandbox, in the order the events happened; the timeline's cursor counts on it. */
  seq: number;
  at: string;
  kind: 'deploy_step' | 'status' | 'crash' | 'extended' | 'blocked_egress';
  /** One line for a person. */
  summary: string;
  duration_ms?: number;
  detail?: Record<string, unknown>;
}
