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

/** Twins alone, with no repository or app (`POST /twin-sets`, docs/api.md "Twin sets"). */
export interface TwinSet {
  id: string;
  status: SandboxStatus;
  /** Each twin once ready: its public URL, admin URL and variables. */
  twins: Record<string, TwinEntry>;
  /** Every twin's variables in one map (then the request's `env`): what an app is given. */
  env_vars: Record<string, string>;
  twin_names: string[];
  scenario_id: string | null;
  seed: Record<string, unknown> | null;
  seed_notes: string[];
  ttl_minutes: number;
  /** Bearer token for the twins' `admin_url`; a secret. */
  twin_admin_token: string;
  error: string | null;
  created_at: string;
  updated_at: string;
  expires_at: string;
}

export interface CreateTwinSetRequest {
  twins?: string[];
  scenario_id?: string;
  scenario_prompt?: string;
  ttl_minutes?: number;
  env?: Record<string, string>;
}

export interface ListTwinSetsQuery {
  status?: SandboxStatus;
  limit?: number;
  cursor?: string;
}

export interface TwinSetPage {
  twin_sets: TwinSet[];
  next_cursor: string | null;
}

export interface Account {
  id: string;
  email: string;
  email_verified?: boolean;
  plan?: 'free' | 'pro';
  created_at?: string;
  [field: string]: unknown;
}

/** A sign-in connected to the account (today only GitHub). */
export interface Identity {
  provider: 'github';
  provider_id: string;
  login: string;
  created_at: string;
}

/** `GET /me`: who the token belongs to, and which kind of token it is. */
export interface Me {
  account: Account;
  identities: Identity[];
  token_type: 'session' | 'api_key';
}

/** An API key as the API shows it after creation: never the key itself. */
export interface ApiKeyInfo {
  id: string;
  name: string;
  prefix: string;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
}

/**
 * Part of a sandbox's log (`GET /sandboxes/{id}/logs?offset=N`). Offsets count bytes of the sandbox's
 * output from its start and never split a character.
 */
export interface LogChunk {
  text: string;
  /** Offset of the first byte of `text` (`X-Log-Start`): past the asked offset when those bytes are gone. */
  start: number;
  /** Offset to ask from next (`X-Log-Offset`). */
  next: number;
  /** The sandbox has ended and nothing more will be written (`X-Log-Complete`). */
  complete: boolean;
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
