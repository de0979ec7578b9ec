import Joi from 'joi';
import { resolve } from 'node:path';

/** Every setting Twinbox reads, validated once at start. Nothing else reads process.env. */
export interface Config {
  env: 'development' | 'production' | 'test';
  port: number;
  bindHost: string;
  /** Host name put into app and twin URLs handed to callers. */
  publicHost: string;
  dataDir: string;
  /**
   * Where the sandbox pod's bundle is made (server/deploy/pods/pod-bundle.ts), shared by the Twinboxes that
   * name it; unset: `<dataDir>/pod-bundle`, this Twinbox's own.
   */
  podBundleDir: string | undefined;
  /** PostgreSQL store (docs/store.md); unset: the embedded store under `dataDir`. */
  databaseUrl: string | undefined;
  jwtSecret: string | undefined;
  /**
   * AES-256 key (32 bytes) sealing secrets at rest (GitHub tokens); required in production, else one is
   * generated under `dataDir` (server/identity/secret-box.ts).
   */
  encryptionKey: Buffer | undefined;
  sessionTtlMinutes: number;
  adminToken: string | undefined;
  freeTtlCapMinutes: number;
  deployConcurrency: number;
  /** TWINBOX_JOB_LEASE_SECONDS: how long a dead process's running job stays claimed (PostgreSQL). */
  jobLeaseSeconds: number;
  /** TWINBOX_JOB_WORKERS: false when this process queues jobs but works none. */
  jobWorkers: boolean;
  /** TWINBOX_JOB_KEY_RETENTION_DAYS: days a job key is kept at least (PostgreSQL; docs/jobs.md). */
  jobKeyRetentionDays: number;
  reaperIntervalMs: number;
  ownerEmail: string;
  logLevel: string;
  /** `auto`: readable lines on a terminal outside production, JSON otherwise (server/logger.ts). */
  logFormat: 'auto' | 'pretty' | 'json';
  /** Where GitHub's web pages live; pull-request URLs must point there (or at github.com). */
  githubWebUrl: string;
  githubApiUrl: string;
  /** Token for fetching source from GitHub; ignored in production, where the owner's connection is used. */
  githubToken: string | undefined;
  /** How long a started app has to answer HTTP before its sandbox fails. */
  deployHealthTimeoutMs: number;
  /** How long a sandbox pod (the process hosting its twins) has to start. */
  podStartTimeoutMs: number;
  /** How long install + build may take before the sandbox fails. */
  deployBuildTimeoutMs: number;
  /** Data-segment limit (RLIMIT_DATA) of each app process and its build steps, in MiB. */
  appMemoryMb: number;
  /** Per-sandbox log buffer kept in memory (the log file on disk keeps everything). */
  appLogBytes: number;
  /** `auto` isolates apps with bubblewrap when it works here; `off` runs plain process groups. */
  sandboxIsolation: 'auto' | 'off';
  /** `local` deploys apps with the embedded engine; `none` leaves sandboxes queued (API-only tests). */
  deployEngine: 'local' | 'none';
  /** How long an ended sandbox's app URL answers with the "expired / deleted" page (0: not at all). */
  endedPageMinutes: number;
  /** SMTP server for mail (`smtp://user:pass@host:587`); unset: files in `<dataDir>/outbox/`. */
  smtpUrl: string | undefined;
  mailFrom: string;
  /** Requests per minute one client IP may make to the e-mail code endpoints. */
  authIpLimitPerMinute: number;
  /** OAuth app of the GitHub sign-in; the GitHub routes answer with an error redirect without it. */
  githubClientId: string | undefined;
  githubClientSecret: string | undefined;
  /** Base URL of this server as browsers reach it (OAuth callback); default http://<publicHost>:<port>. */
  publicUrl: string | undefined;
  /** Base URL of the web app (/login, /integrations); default: publicUrl. */
  webUrl: string | undefined;
  /** The GitHub App (app/): set when GITHUB_APP_ID, GITHUB_APP_PRIVATE_KEY and GITHUB_WEBHOOK_SECRET all are. */
  githubApp: { appId: string; privateKey: string; webhookSecret: string } | undefined;
  /** Apps are served at `<sandbox-id>.<sandboxDomain>`, twins at `<sandbox-id>--<twin>.<sandboxDomain>`. */
  sandboxDomain: string;
  /** Caps on a repository's source, on both fetch paths: bytes unpacked and number of files. */
  sourceMaxBytes: number;
  sourceMaxFiles: number;
  /** Largest request body a twin reads (after its credentials are checked). */
  twinBodyBytes: number;
  /** Per-sandbox limits (docs/security.md): processes, CPU in cores, /tmp and workspace in MiB. */
  sandboxPids: number;
  sandboxCpus: number;
  sandboxTmpMb: number;
  /** The workspace's cap: the size of its disk image (server/deploy/steps/workspace.ts), on the data dir's disk. */
  sandboxDiskMb: number;
  /** The per-sandbox log file on disk is capped at this many bytes (older output is dropped). */
  appLogFileBytes: number;
  /** Sandboxes not yet ended that one account may hold, per plan. */
  sandboxQuota: { free: number; pro: number };
  /**
   * `host:port` pairs an install step may reach besides the registries of npm's config and the repository's
   * `.npmrc` (server/deploy/steps/npm-registries.ts); nothing else leaves a sandbox.
   */
  installEgress: Array<{ host: string; port: number }>;
  /**
   * What this process runs (docs/scaling.md): `all` (one process: API, web, App, router and deploys),
   * `api` (API, web, GitHub App intake, reaper; the router forwards to runners) or `runner` (deploys
   * and the pods of its sandboxes, their router on its internal URL). `api` and `runner` need
   * PostgreSQL and the admin token.
   */
  role: 'all' | 'api' | 'runner';
  /** This runner's id in the registry; default: derived from the data directory (stable across restarts). */
  runnerId: string | undefined;
  /** Where other processes reach this runner; default http://<publicHost>:<port once listening>. */
  runnerUrl: string | undefined;
  /** A runner whose heartbeat is older than this is lost: its sandboxes fail (docs/scaling.md). */
  runnerStaleSeconds: number;
}

const schema = Joi.object({
  NODE_ENV: Joi.string().valid('development', 'production', 'test').default('development'),
  PORT: Joi.number().integer().min(0).max(65535).default(3000),
  TWINBOX_BIND_HOST: Joi.string().hostname().default('127.0.0.1'),
  TWINBOX_PUBLIC_HOST: Joi.string().hostname().default('127.0.0.1'),
  TWINBOX_DATA_DIR: Joi.string().min(1).default('./.twinbox'),
  TWINBOX_POD_BUNDLE_DIR: Joi.string().min(1),
  TWINBOX_DATABASE_URL: Joi.string()
    .uri({ scheme: ['postgres', 'postgresql'] })
    .messages({
      'string.uriCustomScheme': '"TWINBOX_DATABASE_URL" must be a postgres:// or postgresql:// URL',
      'string.uri': '"TWINBOX_DATABASE_URL" must be a postgres:// or postgresql:// URL',
    }),
  TWINBOX_JWT_SECRET: Joi.string().min(32).messages({
    'string.min': '"TWINBOX_JWT_SECRET" must be at least 32 characters (use 32+ random bytes)',
  }),
  TWINBOX_ENCRYPTION_KEY: Joi.string()
    .custom((value: string, helpers) =>
      /^[A-Za-z0-9+/_-]+={0,2}$/.test(value.trim()) && Buffer.from(value.trim(), 'base64').length === 32
        ? value.trim()
        : helpers.error('any.invalid'),
    )
    .messages({
      'any.invalid':
        '"TWINBOX_ENCRYPTION_KEY" must be 32 bytes in base64 (make one with: openssl rand -base64 32)',
    }),
  TWINBOX_SESSION_TTL_MINUTES: Joi.number()
    .integer()
    .min(5)
    .max(60 * 24 * 30)
    .default(60 * 24),
  TWINBOX_ADMIN_TOKEN: Joi.string().min(32).messages({
    'string.min': '"TWINBOX_ADMIN_TOKEN" must be at least 32 characters (use 32+ random bytes)',
  }),
  TWINBOX_FREE_TTL_CAP_MINUTES: Joi.number().integer().min(1).max(480).default(60),
  TWINBOX_DEPLOY_CONCURRENCY: Joi.number().integer().min(1).max(64).default(4),
  TWINBOX_JOB_LEASE_SECONDS: Joi.number().integer().min(1).max(3600).default(60),
  TWINBOX_JOB_WORKERS: Joi.string().valid('on', 'off').default('on'),
  // At least 8: GitHub redelivers a delivery up to 3 days later (7 on GitHub Enterprise Server).
  TWINBOX_JOB_KEY_RETENTION_DAYS: Joi.number().integer().min(8).max(36500).default(30),
  TWINBOX_REAPER_INTERVAL_MS: Joi.number().integer().min(50).max(60_000).default(1000),
  TWINBOX_OWNER_EMAIL: Joi.string().email({ tlds: false }).default('owner@twinbox.local'),
  LOG_LEVEL: Joi.string().valid('fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent').default('info'),
  // Production always logs JSON (collectors parse it); asking for pretty there is a mistake worth naming.
  LOG_FORMAT: Joi.string()
    .valid('auto', 'pretty', 'json')
    .default('auto')
    .when('NODE_ENV', { is: 'production', then: Joi.valid(Joi.override, 'auto', 'json') })
    .messages({ 'any.only': '"LOG_FORMAT" must be one of auto, pretty, json (production: auto or json)' }),
  GITHUB_OAUTH_URL: Joi.string()
    .uri({ scheme: ['http', 'https'] })
    .default('https://github.com'),
  GITHUB_API_URL: Joi.string()
    .uri({ scheme: ['http', 'https'] })
    .default('https://api.github.com'),
  GITHUB_TOKEN: Joi.string().min(1),
  TWINBOX_HEALTH_TIMEOUT_MS: Joi.number().integer().min(100).max(600_000).default(30_000),
  TWINBOX_POD_START_TIMEOUT_MS: Joi.number().integer().min(1000).max(600_000).default(90_000),
  TWINBOX_BUILD_TIMEOUT_MS: Joi.number().integer().min(1000).max(3_600_000).default(600_000),
  TWINBOX_APP_MEMORY_MB: Joi.number().integer().min(64).max(65_536).default(1024),
  TWINBOX_APP_LOG_BYTES: Joi.number()
    .integer()
    .min(1024)
    .max(64 * 1024 * 1024)
    .default(1024 * 1024),
  TWINBOX_SANDBOX_ISOLATION: Joi.string().valid('auto', 'off').default('auto'),
  TWINBOX_DEPLOY_ENGINE: Joi.string().valid('local', 'none').default('local'),
  TWINBOX_ENDED_PAGE_MINUTES: Joi.number().integer().min(0).max(10_080).default(60),
  SMTP_URL: Joi.string().uri({ scheme: ['smtp', 'smtps'] }),
  TWINBOX_MAIL_FROM: Joi.string().min(3).default('Twinbox <no-reply@twinbox.local>'),
  TWINBOX_AUTH_IP_LIMIT: Joi.number().integer().min(1).max(100_000).default(30),
  GITHUB_CLIENT_ID: Joi.string().min(1),
  GITHUB_CLIENT_SECRET: Joi.string().min(1),
  TWINBOX_PUBLIC_URL: Joi.string().uri({ scheme: ['http', 'https'] }),
  TWINBOX_WEB_URL: Joi.string().uri({ scheme: ['http', 'https'] }),
  GITHUB_APP_ID: Joi.string().pattern(/^\d+$/).messages({
    'string.pattern.base': '"GITHUB_APP_ID" must be the numeric id of the GitHub App',
  }),
  GITHUB_APP_PRIVATE_KEY: Joi.string()
    .pattern(/-----BEGIN [A-Z ]*PRIVATE KEY-----/)
    .messages({
      'string.pattern.base': '"GITHUB_APP_PRIVATE_KEY" must be the App\'s PEM private key',
    }),
  GITHUB_WEBHOOK_SECRET: Joi.string().min(16).messages({
    'string.min': '"GITHUB_WEBHOOK_SECRET" must be at least 16 characters',
  }),
  TWINBOX_SANDBOX_DOMAIN: Joi.string().hostname().default('localhost'),
  TWINBOX_SOURCE_MAX_BYTES: Joi.number()
    .integer()
    .min(1024)
    .default(512 * 1024 * 1024),
  TWINBOX_SOURCE_MAX_FILES: Joi.number().integer().min(1).default(50_000),
  TWINBOX_TWIN_BODY_BYTES: Joi.number()
    .integer()
    .min(1024)
    .max(256 * 1024 * 1024)
    .default(1024 * 1024),
  TWINBOX_SANDBOX_PIDS: Joi.number().integer().min(8).max(65_536).default(256),
  TWINBOX_SANDBOX_CPUS: Joi.number().min(0.05).max(256).default(1),
  TWINBOX_SANDBOX_TMP_MB: Joi.number().integer().min(1).max(1_048_576).default(256),
  TWINBOX_SANDBOX_DISK_MB: Joi.number().integer().min(16).max(1_048_576).default(2048),
  TWINBOX_APP_LOG_FILE_BYTES: Joi.number()
    .integer()
    .min(4096)
    .default(16 * 1024 * 1024),
  TWINBOX_SANDBOX_QUOTA_FREE: Joi.number().integer().min(1).max(100_000).default(3),
  TWINBOX_SANDBOX_QUOTA_PRO: Joi.number().integer().min(1).max(100_000).default(50),
  TWINBOX_INSTALL_EGRESS: Joi.string()
    .allow('')
    .pattern(/^\s*([A-Za-z0-9.-]+:\d{1,5}\s*(,\s*|$))*$/)
    // Added to the registries npm is configured with (server/deploy/steps/npm-registries.ts), which need no entry.
    .default('')
    .messages({
      'string.pattern.base': '"TWINBOX_INSTALL_EGRESS" must be a comma-separated list of host:port',
    }),
  TWINBOX_ROLE: Joi.string().valid('all', 'api', 'runner').default('all'),
  TWINBOX_RUNNER_ID: Joi.string()
    .pattern(/^[A-Za-z0-9_-]{1,40}$/)
    .messages({ 'string.pattern.base': '"TWINBOX_RUNNER_ID" must be 1 to 40 of A-Z a-z 0-9 _ -' }),
  TWINBOX_RUNNER_URL: Joi.string().uri({ scheme: ['http', 'https'] }),
  TWINBOX_RUNNER_STALE_SECONDS: Joi.number().integer().min(3).max(3600).default(30),
})
  // The App is all or nothing: a half-configured one would accept webhooks it cannot act on.
  .and('GITHUB_APP_ID', 'GITHUB_APP_PRIVATE_KEY', 'GITHUB_WEBHOOK_SECRET')
  // Only our own variables are validated; the rest of the environment is not ours to judge.
  .unknown(true);

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

/** Reads the configuration from `environment`; throws ConfigError naming every bad variable. */
export function loadConfig(environment: NodeJS.ProcessEnv = process.env): Config {
  const { value, error } = schema.validate(environment, { abortEarly: false, convert: true });
  if (error) {
    const problems = error.details.map((detail) => `  - ${detail.message}`).join('\n');
    throw new ConfigError(`Invalid configuration:\n${problems}`);
  }
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- shaped and defaulted by `schema`
  const v = value as Record<string, any>;
  // Several processes share state only through PostgreSQL, and call each other with the admin token.
  if (v.TWINBOX_ROLE !== 'all') {
    const missing = ['TWINBOX_DATABASE_URL', 'TWINBOX_ADMIN_TOKEN'].filter((name) => !v[name]);
    if (missing.length)
      throw new ConfigError(
        `Invalid configuration:\n${missing.map((name) => `  - "${name}" is required when TWINBOX_ROLE is ${v.TWINBOX_ROLE}`).join('\n')}`,
      );
  }
  return {
    env: v.NODE_ENV,
    port: v.PORT,
    bindHost: v.TWINBOX_BIND_HOST,
    publicHost: v.TWINBOX_PUBLIC_HOST,
    dataDir: resolve(v.TWINBOX_DATA_DIR),
    podBundleDir: v.TWINBOX_POD_BUNDLE_DIR ? resolve(v.TWINBOX_POD_BUNDLE_DIR) : undefined,
    databaseUrl: v.TWINBOX_DATABASE_URL,
    jwtSecret: v.TWINBOX_JWT_SECRET,
    encryptionKey: v.TWINBOX_ENCRYPTION_KEY ? Buffer.from(v.TWINBOX_ENCRYPTION_KEY, 'base64') : undefined,
    sessionTtlMinutes: v.TWINBOX_SESSION_TTL_MINUTES,
    adminToken: v.TWINBOX_ADMIN_TOKEN,
    freeTtlCapMinutes: v.TWINBOX_FREE_TTL_CAP_MINUTES,
    deployConcurrency: v.TWINBOX_DEPLOY_CONCURRENCY,
    jobLeaseSeconds: v.TWINBOX_JOB_LEASE_SECONDS,
    jobWorkers: v.TWINBOX_JOB_WORKERS === 'on',
    jobKeyRetentionDays: v.TWINBOX_JOB_KEY_RETENTION_DAYS,
    reaperIntervalMs: v.TWINBOX_REAPER_INTERVAL_MS,
    ownerEmail: v.TWINBOX_OWNER_EMAIL,
    logLevel: v.LOG_LEVEL,
    logFormat: v.LOG_FORMAT,
    githubWebUrl: v.GITHUB_OAUTH_URL,
    githubApiUrl: v.GITHUB_API_URL,
    githubToken: v.GITHUB_TOKEN,
    deployHealthTimeoutMs: v.TWINBOX_HEALTH_TIMEOUT_MS,
    podStartTimeoutMs: v.TWINBOX_POD_START_TIMEOUT_MS,
    deployBuildTimeoutMs: v.TWINBOX_BUILD_TIMEOUT_MS,
    appMemoryMb: v.TWINBOX_APP_MEMORY_MB,
    appLogBytes: v.TWINBOX_APP_LOG_BYTES,
    sandboxIsolation: v.TWINBOX_SANDBOX_ISOLATION,
    deployEngine: v.TWINBOX_DEPLOY_ENGINE,
    endedPageMinutes: v.TWINBOX_ENDED_PAGE_MINUTES,
    smtpUrl: v.SMTP_URL,
    mailFrom: v.TWINBOX_MAIL_FROM,
    authIpLimitPerMinute: v.TWINBOX_AUTH_IP_LIMIT,
    githubClientId: v.GITHUB_CLIENT_ID,
    githubClientSecret: v.GITHUB_CLIENT_SECRET,
    publicUrl: v.TWINBOX_PUBLIC_URL?.replace(/\/+$/, ''),
    webUrl: v.TWINBOX_WEB_URL?.replace(/\/+$/, ''),
    githubApp: v.GITHUB_APP_ID
      ? {
          appId: v.GITHUB_APP_ID,
          // Environments often carry a PEM on one line with literal "\n".
          privateKey: String(v.GITHUB_APP_PRIVATE_KEY).replace(/\\n/g, '\n'),
          webhookSecret: v.GITHUB_WEBHOOK_SECRET,
        }
      : undefined,
    sandboxDomain: String(v.TWINBOX_SANDBOX_DOMAIN).toLowerCase(),
    sourceMaxBytes: v.TWINBOX_SOURCE_MAX_BYTES,
    sourceMaxFiles: v.TWINBOX_SOURCE_MAX_FILES,
    twinBodyBytes: v.TWINBOX_TWIN_BODY_BYTES,
    sandboxPids: v.TWINBOX_SANDBOX_PIDS,
    sandboxCpus: v.TWINBOX_SANDBOX_CPUS,
    sandboxTmpMb: v.TWINBOX_SANDBOX_TMP_MB,
    sandboxDiskMb: v.TWINBOX_SANDBOX_DISK_MB,
    appLogFileBytes: v.TWINBOX_APP_LOG_FILE_BYTES,
    sandboxQuota: { free: v.TWINBOX_SANDBOX_QUOTA_FREE, pro: v.TWINBOX_SANDBOX_QUOTA_PRO },
    installEgress: parseHostPorts(v.TWINBOX_INSTALL_EGRESS),
    role: v.TWINBOX_ROLE,
    runnerId: v.TWINBOX_RUNNER_ID,
    runnerUrl: v.TWINBOX_RUNNER_URL?.replace(/\/+$/, ''),
    runnerStaleSeconds: v.TWINBOX_RUNNER_STALE_SECONDS,
  };
}

/** `a.example:443, b.example:80` -> [{host, port}]; the schema has checked the shape. */
function parseHostPorts(text: string): Array<{ host: string; port: number }> {
  return text
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean)
    .map((part) => {
      const at = part.lastIndexOf(':');
      return { host: part.slice(0, at).toLowerCase(), port: Number(part.slice(at + 1)) };
    });
}
