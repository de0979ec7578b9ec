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
  /**
   * The connection's GitHub OAuth token, which fetches the owner's private repositories. Sealed with
   * AES-256-GCM (server/identity/secret-box.ts), never kept in plain text. Absent on links made before
   * tokens were kept.
   */
  github_token?: SealedGitHubToken | null;
}

export interface SealedGitHubToken {
  /** Sealed access token. */
  access_token: string;
  /** Sealed refresh token; null when GitHub gave none (OAuth Apps' tokens do not expire). */
  refresh_token: string | null;
  /** When the access token expires; null: it does not. */
  expires_at: string | null;
  /** When the refresh token expires; null: unknown or none. */
  refresh_expires_at: string | null;
  updated_at: string;
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

/** `app`: a repository's branch or pull request with its twins (POST /sandboxes); `twins`: twins alone. */
export type SandboxKind = 'app' | 'twins';

export interface SandboxRecord {
  id: string;
  owner_id: string;
  status: SandboxStatus;
  /**
   * Absent on sandboxes made before twin sets: `app`. A twin set (POST /twin-sets) runs the same lifecycle,
   * pod, router, TTL and quota as a sandbox, with no repository and no app.
   */
  kind?: SandboxKind;
  /** `owner/repo`; empty for a twin set. */
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
  /**
   * The GitHub App installation that started this sandbox (app/): its source is fetched with that
   * installation's token, minted at fetch time. Absent or null: the owner's GitHub connection.
   */
  installation_id?: number | null;
  /** Outbound calls the sandbox's code tried and was refused, per host and port. */
  blocked_egress?: Array<{ host: string; port: number; count: number; first_seen: string }>;
  /**
   * The runner process that took this sandbox's deploy and holds its pod (docs/scaling.md); set when
   * the deploy starts (`building`). Absent on sandboxes of a single process made before runners.
   */
  runner_id?: string | null;
}

/**
 * A runner process (TWINBOX_ROLE=runner or all) on a shared PostgreSQL: where the others reach the
 * sandboxes it holds, and whether it still lives (docs/scaling.md). Its id is TWINBOX_RUNNER_ID.
 */
export interface RunnerRecord {
  id: string;
  /** Internal base URL (TWINBOX_RUNNER_URL): API processes proxy its sandboxes' hosts and logs there. */
  url: string;
  started_at: string;
  /** Renewed every few seconds while it runs; older than TWINBOX_RUNNER_STALE_SECONDS means it died. */
  heartbeat_at: string;
  /** Set once its sandboxes were failed because its heartbeat went stale; cleared when it starts again. */
  lost_at: string | null;
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
  /**
   * No longer written: the first comment is written under the pull request's lock across processes
   * (app/lock.ts). Records from before may carry it; it is ignored.
   */
  comment_claim?: { by: string; until: string } | null;
  /** The body last written, so an unchanged comment is not written again. */
  comment_body: string | null;
  /** Head commit a writer approved with `/twinbox deploy` (forks). */
  approved_sha: string | null;
  /** Why there is no sandbox (not connected, waiting for approval, config error, refused), shown in the comment. */
  notice: { kind: string; text: string } | null;
  created_at: string;
  updated_at: string;
}

/**
 * A job of the embedded job queue (server/jobs/embedded.ts; on PostgreSQL jobs live in pg-boss). A keyed
 * job's record stays once finished, without its data, so that its key is never accepted again.
 */
export interface JobRecord {
  /** `k` and a hash of queue and key for a keyed job, else a random UUID. */
  id: string;
  queue: string;
  key: string | null;
  /** What the handler gets; null once the job has finished. */
  data: Record<string, unknown> | null;
  state: 'queued' | 'active' | 'done' | 'failed';
  /** Runs started, this one included: more than 1 after a run was cut off. */
  attempts: number;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  /** The handler's error, for a `failed` job. */
  error: string | null;
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

/**
 * A record that lapses at `expires_at`. `expires_hour` (its UTC hour, `YYYY-MM-DDTHH`) is indexed, so
 * store/expiry.ts finds the lapsed ones hour by hour with the Store's equality lookups and deletes them.
 */
export interface ExpiringRecord {
  id: string;
  expires_at: string;
  expires_hour: string;
}

/**
 * A GitHub sign-in or connect flow between its start and its callback (identity/github/state.ts); its
 * id is the nonce of the `state` parameter. Kept in the Store, so the callback may reach any process.
 */
export interface OAuthStateRecord extends ExpiringRecord {
  purpose: 'login' | 'connect';
  /** connect only: the signed-in account. */
  account_id: string | null;
  /** PKCE verifier, sent at the code exchange; useless without the code GitHub gives the browser. */
  code_verifier: string;
  /** login only: the page to land on once signed in (already checked by `safeNext`). */
  next: string | null;
  /** SHA-256 (base64url) of the random value in the starting browser's cookie. */
  binding_hash: string;
  created_at: string;
}

/** The recent hits of one rate-limited key (identity/rate-limit.ts); its id is a hash of limiter and key. */
export interface RateLimitRecord extends ExpiringRecord {
  /** Epoch milliseconds of the hits still inside the window, oldest first. */
  hits: number[];
}

/**
 * A session (JWT) signed out before its expiry; its id is the token's `jti`. Kept until the token would
 * have expired anyway (`expires_at`), then swept.
 */
export interface RevokedSessionRecord extends ExpiringRecord {
  account_id: string;
  revoked_at: string;
}

/**
 * A key every process of one Store signs or hashes with (the JWT secret when TWINBOX_JWT_SECRET is
 * unset, the code key), made once by whichever process needs it first (auth/shared-secrets.ts).
 */
export interface ServerSecretRecord {
  id: string;
  value: string;
  created_at: string;
}

/** How far store/expiry.ts has swept one collection: every hour before `swept_before` is done. */
export interface SweepCursorRecord {
  /** The collection's table name. */
  id: string;
  swept_before: string;
}

/**
 * One request a router forwarded into a sandbox, to its app or (sent from outside) to one of its twins:
 * what the timeline shows as `app_request` and ties twin calls to (timeline/app-requests.ts).
 */
export interface ForwardedRequestRecord {
  /** 1, 2, 3... per sandbox in the order requests ended, across restarts; 0 while in flight. */
  seq: number;
  request_id: string;
  /** `app`, or the twin's name for a request sent to a twin through the router. */
  target: string;
  method: string;
  path: string;
  /** Names of the query parameters; their values are never kept (they may carry secrets). */
  query_keys: string[];
  started_at: number;
  /** Undefined while in flight. */
  ended_at?: number;
  /** Undefined when no answer reached the client (it went away, or the backend never answered). */
  status?: number;
  /** The trace id of the W3C `traceparent` the client sent, so a traced app's twin calls can be tied. */
  trace_id?: string;
}

/**
 * A batch of a sandbox's forwarded requests, written together off the request path by the process whose
 * router forwarded them (timeline/app-requests.ts), so any process's timeline shows them and they survive
 * a restart. Consecutive seqs; swept once it expires (store/expiry.ts).
 */
export interface AppRequestBatchRecord extends ExpiringRecord {
  /** `<sandbox_id>_<first_seq>`. */
  sandbox_id: string;
  first_seq: number;
  last_seq: number;
  requests: ForwardedRequestRecord[];
}
