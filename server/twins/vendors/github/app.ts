/**
 * The sandbox's own GitHub App: what a Probot app (or any app written as GitHub's App tutorials are)
 * needs to run unmodified against the twin. A new twin whose seed declares no `apps` gets one, with an RSA
 * key made for it, installed on every account of the twin (all repositories); a seed that declares apps
 * makes its first one the sandbox's app instead. Its credentials are handed out under Probot's names and
 * GitHub's (docs/twins.md, "GitHub Apps"). App JWTs are checked here as GitHub checks them, and the
 * installation lookups answer for the app that asks, as GitHub's do.
 */
import { createPublicKey, verify } from 'node:crypto';
import { TwinInputError } from '../../contract.ts';
import type { Engine, EngineRecord } from '../../engine/emulate.ts';
import { json } from '../../runtime/http.ts';
import { rsaKey } from '../../runtime/rsa-keys.ts';

export const SANDBOX_APP_SLUG = 'twinbox-app';
const SANDBOX_APP_NAME = 'Twinbox App';
/** The credential holding the generated app's private key (persisted with the others, masked in logs). */
export const APP_KEY_CREDENTIAL = 'GITHUB_APP_PRIVATE_KEY';

/** Everything the twin can do is the app's to do: its installation tokens are checked against these. */
const SANDBOX_APP_PERMISSIONS: Record<string, 'read' | 'write'> = {
  actions: 'write',
  administration: 'write',
  checks: 'write',
  contents: 'write',
  deployments: 'write',
  issues: 'write',
  metadata: 'read',
  pull_requests: 'write',
  statuses: 'write',
  workflows: 'write',
};

/** Every event the twin sends, so an app's handler for any of them is called. */
const SANDBOX_APP_EVENTS = [
  'branch_protection_rule',
  'check_run',
  'check_suite',
  'create',
  'delete',
  'deployment',
  'deployment_status',
  'fork',
  'issue_comment',
  'issues',
  'label',
  'milestone',
  'pull_request',
  'pull_request_review',
  'pull_request_review_comment',
  'push',
  'release',
  'repository',
  'status',
  'workflow_dispatch',
  'workflow_run',
];

const DOCS = 'https://docs.github.com/rest';
const appError = (status: number, message: string) =>
  json(status, { message, documentation_url: DOCS, status: String(status) });

/**
 * The next app key, made ahead of need (prepareAppKey, the factory's `prepare`): an RSA key takes 100 ms to
 * several seconds of a core (prime search), which would otherwise sit on a new GitHub twin's start and so
 * on POST→ready. Not made again as soon as one is taken: in a sandbox pod that key would be for no one, and
 * its prime search would run beside the sandbox's app as it starts. A key made ahead is no weaker: each is
 * taken once. A key the host gave the process (runtime/rsa-keys.ts: Twinbox makes a first pod's) is taken
 * before any is made here.
 */
let nextKey: Promise<string> | undefined;

/** Starts making the next app key, if none is made or being made; resolves once it is. */
export async function prepareAppKey(): Promise<void> {
  nextKey ??= rsaKey();
  const made = nextKey;
  // A failure is not kept: the next take or prepare makes one again.
  await made.catch(() => {
    if (nextKey === made) nextKey = undefined;
  });
}

/** An RSA key as GitHub issues them (2048 bits, PKCS#1 PEM), made off the event loop: the one made ahead, if any. */
export function generateAppKey(): Promise<string> {
  const key = nextKey ?? rsaKey();
  nextKey = undefined;
  return key;
}

const apps = (engine: Engine) => engine.store.collection('github.apps', ['slug']);
const installations = (engine: Engine) => engine.store.collection('github.app_installations');

/** The sandbox's app: the first the twin has (the seed's first, else the generated one). */
export function sandboxApp(engine: Engine): EngineRecord | undefined {
  return apps(engine)
    .all()
    .sort((a, b) => a.id - b.id)[0];
}

/**
 * Registers the generated app (no-op when the twin has an app already: the seed's, or this one after a
 * restore) and installs it on every account. Called after each seed, reset and restore.
 */
export function ensureSandboxApp(
  engine: Engine,
  credentials: Record<string, string>,
  tokenLogin: string,
): void {
  const key = credentials[APP_KEY_CREDENTIAL];
  if (key && !apps(engine).findOneBy('slug', SANDBOX_APP_SLUG) && !sandboxApp(engine)) {
    const taken = apps(engine)
      .all()
      .map((a) => Number(a.app_id));
    engine.seedFromConfig({
      apps: [
        {
          app_id: Math.max(0, ...taken) + 1,
          slug: SANDBOX_APP_SLUG,
          name: SANDBOX_APP_NAME,
          description: 'The GitHub App of this sandbox, installed on every account of its GitHub twin.',
          private_key: key,
          permissions: SANDBOX_APP_PERMISSIONS,
          events: SANDBOX_APP_EVENTS,
          installations: [],
        },
      ],
    });
  }
  const app = apps(engine).findOneBy('slug', SANDBOX_APP_SLUG);
  if (app) installEverywhere(engine, app, tokenLogin);
}

/**
 * One installation (all repositories) on every user and organization that has none of `app`'s yet, the
 * account GITHUB_TOKEN acts as first. Not on `ghost`, GitHub's stand-in for deleted accounts.
 */
function installEverywhere(engine: Engine, app: EngineRecord, tokenLogin: string): void {
  const all = installations(engine).all();
  const installed = new Set(
    all
      .filter((i) => i.app_id === app.app_id)
      .map((i) => `${String(i.account_type)}:${String(i.account_id)}`),
  );
  let next = Math.max(0, ...all.map((i) => Number(i.installation_id))) + 1;
  const accounts = [
    ...engine.store
      .collection('github.users', ['login'])
      .all()
      .filter((u) => u.type !== 'Bot' && u.login !== 'ghost')
      .sort((a, b) => Number(b.login === tokenLogin) - Number(a.login === tokenLogin))
      .map((u) => ({ account: u, type: 'User' })),
    ...engine.store
      .collection('github.orgs', ['login'])
      .all()
      .map((o) => ({ account: o, type: 'Organization' })),
  ];
  for (const { account, type } of accounts) {
    if (installed.has(`${type}:${account.id}`)) continue;
    installations(engine).insert({
      installation_id: next++,
      app_id: app.app_id,
      account_type: type,
      account_id: account.id,
      account_login: account.login,
      repository_selection: 'all',
      repository_ids: [],
      permissions: app.permissions,
      events: app.events,
      suspended_at: null,
    });
  }
}

/** A seed document's apps may not take the generated app's slug. */
export function checkSeedApps(engine: Engine, seedApps: Array<Record<string, unknown>> | undefined): void {
  for (const [i, app] of (seedApps ?? []).entries()) {
    if (app.slug === SANDBOX_APP_SLUG && apps(engine).findOneBy('slug', SANDBOX_APP_SLUG)) {
      throw new TwinInputError(
        400,
        `github seed: "apps[${i}].slug" ${SANDBOX_APP_SLUG} is the sandbox's own app`,
      );
    }
    // The same app again (a seed applied twice) is a no-op for the engine; another app with its id is not.
    if (
      apps(engine)
        .all()
        .some((a) => a.app_id === app.app_id && a.slug !== app.slug)
    ) {
      throw new TwinInputError(400, `github seed: "apps[${i}].app_id" ${String(app.app_id)} is taken`);
    }
  }
}

/**
 * The app's variables: Probot's (`APP_ID`, `PRIVATE_KEY`, `WEBHOOK_SECRET`, the names GitHub's own App
 * tutorial uses for the ID and secret too) and the `GITHUB_APP_*` family many apps and GitHub's samples
 * read. Events are signed with the twin's webhook secret, so the app verifies them with it.
 */
export function appEnvVars(
  engine: Engine,
  webhookSecret: string,
  tokenLogin: string,
): Record<string, string> {
  const app = sandboxApp(engine);
  if (!app || typeof app.private_key !== 'string') return {};
  const own = installations(engine)
    .all()
    .filter((i) => i.app_id === app.app_id);
  const installation = own.find((i) => i.account_login === tokenLogin) ?? own[0];
  const id = String(app.app_id);
  return {
    APP_ID: id,
    PRIVATE_KEY: app.private_key,
    WEBHOOK_SECRET: webhookSecret,
    GITHUB_APP_ID: id,
    GITHUB_APP_PRIVATE_KEY: app.private_key,
    GITHUB_APP_WEBHOOK_SECRET: webhookSecret,
    ...(installation ? { GITHUB_APP_INSTALLATION_ID: String(installation.installation_id) } : {}),
  };
}

/**
 * Private keys of every app (a seed's are not among the credentials), to mask wherever they appear: as
 * they are, and as a JSON string writes them (a PEM's newlines escaped), the form in request bodies.
 */
export function appSecrets(engine: Engine): string[] {
  return apps(engine)
    .all()
    .map((a) => a.private_key)
    .filter((k): k is string => typeof k === 'string')
    .flatMap((k) => [k, jsonEscaped(k)]);
}

/**
 * Keys as JSON writes them, made once per key: the request log asks for the secrets on every request, and
 * escaping a PEM each time was most of that. Bounded like the runtime's digests (runtime/secrets.ts).
 */
const escapedKeys = new Map<string, string>();
const ESCAPED_KEYS_MAX = 1_000;

function jsonEscaped(key: string): string {
  let escaped = escapedKeys.get(key);
  if (escaped === undefined) {
    if (escapedKeys.size >= ESCAPED_KEYS_MAX) escapedKeys.clear();
    escaped = JSON.stringify(key).slice(1, -1);
    escapedKeys.set(key, escaped);
  }
  return escaped;
}

/** A JWT's verdict: the app it authenticates, or the 401 GitHub answers. */
export type JwtVerdict = { appId: number } | { error: string };

const MALFORMED = 'A JSON web token could not be decoded';
const BAD_IAT =
  "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued";
const EXPIRED =
  "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires";
const TOO_LONG = "'Expiration time' claim ('exp') is too far in the future";
/** GitHub takes a JWT for at most 10 minutes. */
const MAX_LIFETIME_S = 600;

/**
 * GitHub's checks of an app JWT, in its order: RS256, signed with the key of the app named by `iss`;
 * `iat` an integer not in the future; `exp` after now and at most 10 minutes ahead
 * (docs.github.com, "Generating a JSON Web Token (JWT) for a GitHub App").
 */
export function verifyAppJwt(engine: Engine, jwt: string, nowMs = Date.now()): JwtVerdict {
  const [head, body, signature, ...extra] = jwt.split('.');
  if (!head || !body || !signature || extra.length) return { error: MALFORMED };
  let header: { alg?: unknown };
  let claims: Record<string, unknown>;
  try {
    header = JSON.parse(Buffer.from(head, 'base64url').toString('utf8')) as { alg?: unknown };
    claims = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as Record<string, unknown>;
  } catch {
    return { error: MALFORMED };
  }
  if (header.alg !== 'RS256' || !claims || typeof claims !== 'object') return { error: MALFORMED };
  const appId = typeof claims.iss === 'string' && /^\d+$/.test(claims.iss) ? Number(claims.iss) : claims.iss;
  const app = apps(engine)
    .all()
    .find((a) => a.app_id === appId);
  if (!app || typeof app.private_key !== 'string') return { error: MALFORMED };
  try {
    const key = createPublicKey(app.private_key);
    if (!verify('RSA-SHA256', Buffer.from(`${head}.${body}`), key, Buffer.from(signature, 'base64url'))) {
      return { error: MALFORMED };
    }
  } catch {
    return { error: MALFORMED };
  }
  const now = Math.floor(nowMs / 1000);
  if (!Number.isInteger(claims.iat) || (claims.iat as number) > now) return { error: BAD_IAT };
  if (typeof claims.exp !== 'number' || claims.exp <= now) return { error: EXPIRED };
  if (claims.exp > now + MAX_LIFETIME_S) return { error: TOO_LONG };
  return { appId: app.app_id as number };
}

/** The app id a JWT names (already verified at the door). */
function jwtAppId(jwt: string): number | undefined {
  try {
    const claims = JSON.parse(Buffer.from(jwt.split('.')[1] ?? '', 'base64url').toString('utf8')) as {
      iss?: unknown;
    };
    const iss = typeof claims.iss === 'string' ? Number(claims.iss) : claims.iss;
    return typeof iss === 'number' && Number.isInteger(iss) ? iss : undefined;
  } catch {
    return undefined;
  }
}

const REPO_INSTALLATION = /^\/repos\/([^/]+)\/([^/]+)\/installation$/;
const ORG_INSTALLATION = /^\/orgs\/([^/]+)\/installation$/;
const USER_INSTALLATION = /^\/users\/([^/]+)\/installation$/;

/**
 * `GET /repos/{o}/{r}/installation`, `/orgs/{org}/installation` and `/users/{u}/installation`: the
 * installation of the app whose JWT asks (the engine answers the first of any app), 404 when that app
 * is not installed there, and a JWT required, as GitHub documents them. Undefined for other routes.
 */
export async function handleInstallationLookup(
  engine: Engine,
  request: Request,
  jwt: string | undefined,
): Promise<Response | undefined> {
  if (request.method !== 'GET') return undefined;
  const path = new URL(request.url).pathname;
  const repo = REPO_INSTALLATION.exec(path);
  const org = repo ? null : ORG_INSTALLATION.exec(path);
  const user = repo || org ? null : USER_INSTALLATION.exec(path);
  if (!repo && !org && !user) return undefined;
  const appId = jwt ? jwtAppId(jwt) : undefined;
  if (appId === undefined) return appError(401, MALFORMED);
  const own = installations(engine)
    .all()
    .filter((i) => i.app_id === appId);
  let found: EngineRecord | undefined;
  if (repo) {
    const record = engine.store
      .collection('github.repos')
      .all()
      .find((r) => String(r.full_name).toLowerCase() === `${repo[1]}/${repo[2]}`.toLowerCase());
    found = record
      ? own.find(
          (i) =>
            i.account_id === record.owner_id &&
            i.account_type === record.owner_type &&
            (i.repository_selection === 'all' || (i.repository_ids as number[]).includes(record.id)),
        )
      : undefined;
  } else {
    const login = decodeURIComponent((org ?? user)![1]!).toLowerCase();
    found = own.find(
      (i) =>
        i.account_type === (org ? 'Organization' : 'User') && String(i.account_login).toLowerCase() === login,
    );
  }
  if (!found) return appError(404, 'Not Found');
  // The engine's own answer for that installation, asked with the same JWT (its shape, its URLs).
  return engine.app.fetch(
    new Request(new URL(`/app/installations/${String(found.installation_id)}`, request.url), {
      headers: request.headers,
    }),
  );
}
