/**
 * The public API's shapes as a client sees them (docs/api.md). Declared here rather than imported from
 * server/ so the client, the Action and the CLI bundle without any server code, and so a server-side
 * rename shows up as a failing client test instead of silently changing the contract.
 */

export type SandboxStatus = 'queued' | 'building' | 'ready' | 'failed' | 'expired' | 'deleted';

export interface TwinEntry {
  base_url: string;
  admin_url: string;
  env_vars: Record<string, string>;
}

export interface Sandbox {
  sandbox_id: string;
  status: SandboxStatus;
  app_url: string | null;
  twins: Record<string, TwinEntry>;
  env_vars: Record<string, string>;
  repo: string;
  branch: string | null;
  pr_url: string | null;
  scenario_id: string | null;
  ttl_minutes: number;
  /** The seed applied to the twins, keyed by twin name (from `scenario_id` or `scenario_prompt`). */
  seed: Record<string, unknown> | null;
  /** What the prompt planner could not interpret; empty when everything was understood. */
  seed_notes: string[];
  /** Bearer token for the twins' `admin_url`; a secret. */
  twin_admin_token: string;
  error: string | null;
  created_at: string;
  updated_at: string;
  expires_at: string;
}

export interface CreateSandboxRequest {
  repo: string;
  branch?: string;
  pr_url?: string;
  twins?: string[];
  scenario_id?: string;
  scenario_prompt?: string;
  ttl_minutes?: number;
  env?: Record<string, string>;
}

export interface ListSandboxesQuery {
  repo?: string;
  status?: SandboxStatus;
  limit?: number;
  cursor?: string;
}

export interface SandboxPage {
  sandboxes: Sandbox[];
  next_cursor: string | null;
}

export interface Account {
  id: string;
  email: string;
  [field: string]: unknown;
}

export interface SignedIn {
  account: Account;
  /** A JWT session; it can mint API keys, so it is never stored by the CLI. */
  token: string;
}

export interface NewApiKey {
  id: string;
  name: string;
  prefix: string;
  created_at: string;
  /** The key itself: in this response only. */
  key: string;
}

/** The error body every Twinbox error has (docs/api.md, "Errors"). */
export interface ErrorBody {
  statusCode: number;
  error: string;
  message: string;
  detail: string;
  code?: string;
}
