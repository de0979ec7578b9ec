/** The records Twinbox keeps. Times are ISO-8601 UTC strings. */

export type Plan = 'free' | 'pro';

export interface AccountRecord {
  id: string;
  /** Normalized (see identity/email.ts); unique across accounts. */
  email: string;
  plan: Plan;
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

/** A saved scenario: a seed document for twins, owned by one account. */
export interface ScenarioRecord {
  id: string;
  owner_id: string;
  name: string;
  twins: string[];
  seed: Record<string, unknown>;
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
}
