import Joi from 'joi';
import { existsSync } from 'node:fs';
import { readdir, readFile, realpath, stat } from 'node:fs/promises';
import { isAbsolute, join, relative, sep } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { GUARDED_PORTS, INSTALL_PROXY_PORT } from '../../pod/layout.ts';
import { appsBelow, SEARCH_DEPTH } from './app-search.ts';

/** How to build and run one repository's app. Commands are shell command lines run in the workspace. */
export interface RuntimeProfile {
  /** Where the profile came from, for logs and error texts. */
  source:
    | 'twinbox.yml'
    | 'node'
    | 'static'
    | 'procfile'
    | 'twinbox.yml+node'
    | 'twinbox.yml+static'
    | 'twinbox.yml+procfile';
  /** Installs dependencies; `null` when there is nothing to install. */
  install: string | null;
  /** The file whose hash keys the dependency cache (e.g. package-lock.json); null: never cached. */
  lockfile: string | null;
  build: string | null;
  start: string;
  /** Variable that tells the app which port to listen on. */
  portVariable: string;
  healthPath: string;
  twins: string[];
  env: Record<string, string>;
  /** Package names the app depends on (twin detection). */
  dependencies: string[];
  /** True when `start` runs Twinbox's built-in static file server. */
  staticSite: boolean;
  /**
   * `webhooks:` of twinbox.yml: per twin, the app path its events are POSTed to, or null for none.
   * Twins not named get their default (docs/twins.md, "Webhooks").
   */
  webhooks: Record<string, string | null>;
  /**
   * `root:` of twinbox.yml: the app's folder, relative to the repository root ('' for the root itself).
   * Detection, install, build and start run there.
   */
  root: string;
  /**
   * `port:` of twinbox.yml: the fixed port the app listens on; null: Twinbox assigns one; false: the app
   * has no HTTP port at all (a worker, a Socket Mode bot): it is ready once it has stayed up.
   */
  port: number | false | null;
  /**
   * What detection decided that the deploy log should tell (an app found below the root, say). Optional:
   * resume records written before it have none, and a resume does not log them again.
   */
  notes?: string[];
}

/**
 * Ports an app may not fix: the pod holds them inside the sandbox's namespace (the install proxy, and the
 * egress guard's sinks for well-known services), so an app there could never bind them.
 */
export const RESERVED_APP_PORTS: readonly number[] = [INSTALL_PROXY_PORT, ...GUARDED_PORTS].filter(
  (port) => port >= 1024,
);

export const PROFILE_PATH = '.github/twinbox.yml';
/** Where the built-in static server is put inside a static site's workspace. */
export const STATIC_SERVER_PATH = '.twinbox/static-server.mjs';

export class ProfileError extends Error {}

/**
 * A path on the app, with an optional query: it starts with one `/`, has no scheme or host (`//host`,
 * `http://...`), no fragment, no backslash (browsers read it as `/`), no spaces or control characters.
 */
function isAppPath(value: string): boolean {
  if (value.length > 2048 || !/^\/(?![/\\])/.test(value) || /[\s\\#\u0000-\u001f\u007f]/.test(value))
    return false;
  try {
    return new URL(value, 'http://app.invalid').host === 'app.invalid';
  } catch {
    return false;
  }
}

const webhookPath = Joi.any()
  .custom((value: unknown, helpers) => {
    if (value === false || value === null) return null;
    return typeof value === 'string' && isAppPath(value) ? value : helpers.error('webhooks.path');
  })
  .messages({
    'webhooks.path':
      '{{#label}} must be a path on the app starting with / (no scheme or host), e.g. /api/webhooks/stripe, or false for no deliveries',
  });

const NO_PORT = '{{#label}} cannot be used with port: false (the app has no HTTP port)';

const configSchema = Joi.object({
  // Unprivileged: the app runs without the capability to bind below 1024.
  port: Joi.number()
    .integer()
    .min(1024)
    .max(65535)
    .invalid(...RESERVED_APP_PORTS)
    .allow(false)
    .messages({
      'any.invalid': `{{#label}} must not be ${RESERVED_APP_PORTS.join(', ')}: the sandbox's pod uses those ports`,
      'number.base': '{{#label}} must be a port number (1024-65535), or false for an app with no HTTP port',
    }),
  // Checked for what it names (inside the repository, a folder) by appFolder().
  root: Joi.string()
    .max(1024)
    .custom((value: string, helpers) =>
      value.startsWith('/') ||
      value.includes('\\') ||
      /[\u0000-\u001f]/.test(value) ||
      value.split('/').some((part) => part === '..')
        ? helpers.error('root.path')
        : value,
    )
    .messages({
      'root.path':
        '{{#label}} must be a folder inside the repository, relative to its root (no leading /, no ..), e.g. server/node',
    }),
  install: Joi.string().allow(null),
  build: Joi.string().allow(null),
  start: Joi.string(),
  // An app with no HTTP port has no port to name and nothing to check over HTTP.
  port_variable: Joi.string()
    .pattern(/^[A-Za-z_][A-Za-z0-9_]*$/)
    .when('port', { is: false, then: Joi.forbidden().messages({ 'any.unknown': NO_PORT }) }),
  health_path: Joi.string()
    .pattern(/^\//)
    .when('port', { is: false, then: Joi.forbidden().messages({ 'any.unknown': NO_PORT }) }),
  twins: Joi.array().items(Joi.string()),
  env: Joi.object().pattern(
    /^[A-Za-z_][A-Za-z0-9_]*$/,
    Joi.alternatives(Joi.string(), Joi.number(), Joi.boolean()),
  ),
  // Twin names as the catalog spells them; a twin the sandbox does not get is ignored.
  webhooks: Joi.when('port', {
    is: false,
    // Nothing can be delivered to an app without a port: only "none" may be said.
    then: Joi.object().pattern(
      /^[a-z][a-z0-9-]{0,39}$/,
      Joi.any()
        .custom((value: unknown, helpers) =>
          value === false || value === null ? null : helpers.error('webhooks.noPort'),
        )
        .messages({ 'webhooks.noPort': `${NO_PORT}: set it to false` }),
    ),
    otherwise: Joi.object().pattern(/^[a-z][a-z0-9-]{0,39}$/, webhookPath),
  }),
  // Read by the GitHub App from the base branch (app/config.ts validates them); not the deploy's business.
  scenario: Joi.any(),
  ttl_minutes: Joi.any(),
  branches: Joi.any(),
  drafts: Joi.any(),
}).unknown(false);

interface ProfileConfig {
  install?: string | null;
  build?: string | null;
  start?: string;
  port_variable?: string;
  health_path?: string;
  twins?: string[];
  env?: Record<string, string | number | boolean>;
  webhooks?: Record<string, string | null>;
  root?: string;
  port?: number | false;
}

/**
 * The app's folder for `root:` (already free of `..` and absolute paths): resolved through symlinks, it
 * must still be a folder inside the workspace, since a hostile repository may link it anywhere.
 */
async function appFolder(dir: string, root: string): Promise<string> {
  const refuse = (why: string) =>
    new ProfileError(`${PROFILE_PATH}: "root" (${JSON.stringify(root)}) ${why}.`);
  const workspace = await realpath(dir);
  const target = await realpath(join(dir, root)).catch(() => {
    throw refuse('does not exist in the repository');
  });
  const inside = relative(workspace, target);
  if (inside === '..' || inside.startsWith(`..${sep}`) || isAbsolute(inside))
    throw refuse('leads outside the repository');
  if (!(await stat(target)).isDirectory()) throw refuse('is not a folder');
  return inside.split(sep).join('/');
}

async function readText(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, 'utf8');
  } catch {
    return undefined;
  }
}

async function readConfig(dir: string): Promise<ProfileConfig | undefined> {
  const text =
    (await readText(join(dir, PROFILE_PATH))) ?? (await readText(join(dir, '.github/twinbox.yaml')));
  if (text === undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = parseYaml(text) ?? {};
  } catch (error) {
    throw new ProfileError(`${PROFILE_PATH} is not valid YAML: ${(error as Error).message}`);
  }
  const { value, error } = configSchema.validate(parsed);
  if (error) throw new ProfileError(`${PROFILE_PATH}: ${error.message}`);
  return value as ProfileConfig;
}

interface Detected {
  kind: 'node' | 'static' | 'procfile';
  install: string | null;
  lockfile: string | null;
  build: string | null;
  start: string | null;
  dependencies: string[];
}

interface PackageJson {
  main?: string;
  scripts?: Record<string, string>;
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
}

/** README, README.md, readme.txt...: the names GitHub shows as a repository's front page. */
const README = /^readme(\.(md|markdown|txt|rst))?$/i;

async function hasReadme(dir: string): Promise<boolean> {
  const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
  return entries.some((entry) => entry.isFile() && README.test(entry.name));
}

/**
 * What the files say when no twinbox.yml does. Order: Procfile's `web:` wins for start, package.json for
 * the rest. A repository of documents only (a README, nothing to run) is served as a static site whose
 * index shows the README and the files, so the smallest repository still deploys.
 */
async function detect(dir: string): Promise<Detected | undefined> {
  let detected: Detected | undefined;
  const pkgText = await readText(join(dir, 'package.json'));
  if (pkgText !== undefined) {
    let pkg: PackageJson;
    try {
      pkg = JSON.parse(pkgText) as PackageJson;
    } catch (error) {
      throw new ProfileError(`package.json is not valid JSON: ${(error as Error).message}`);
    }
    const dependencies = [...Object.keys(pkg.dependencies ?? {}), ...Object.keys(pkg.devDependencies ?? {})];
    const lockfile =
      ['npm-shrinkwrap.json', 'package-lock.json'].find((f) => existsSync(join(dir, f))) ?? null;
    const scripts = pkg.scripts ?? {};
    const main = pkg.main ?? ['server.js', 'index.js', 'app.js'].find((f) => existsSync(join(dir, f)));
    detected = {
      kind: 'node',
      // An app without dependencies has nothing to install: skipping npm saves seconds per deploy.
      install:
        dependencies.length === 0
          ? null
          : lockfile
            ? 'npm ci --no-audit --no-fund'
            : 'npm install --no-audit --no-fund',
      lockfile: dependencies.length === 0 ? null : lockfile,
      build: scripts.build ? 'npm run build' : null,
      // The start script is run by the shell directly, not through `npm start`: npm would stay resident
      // beside the app (tens of MiB per sandbox) for nothing.
      start: scripts.start ?? (main ? `node ${shellQuote(main)}` : null),
      dependencies,
    };
  } else if (existsSync(join(dir, 'index.html')) || (await hasReadme(dir))) {
    detected = {
      kind: 'static',
      install: null,
      lockfile: null,
      build: null,
      start: `node ${STATIC_SERVER_PATH}`,
      dependencies: [],
    };
  }
  const procfile = await readText(join(dir, 'Procfile'));
  const web = procfile?.split(/\r?\n/).find((line) => /^web\s*:/.test(line));
  if (web) {
    const start = web.replace(/^web\s*:\s*/, '').trim();
    detected =
      detected?.kind === 'node'
        ? { ...detected, start }
        : { kind: 'procfile', install: null, lockfile: null, build: null, start, dependencies: [] };
  }
  return detected;
}

function shellQuote(text: string): string {
  return /^[A-Za-z0-9_./-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`;
}

/**
 * Does the folder hold an app detection can start: package.json with a way to start, index.html, or a
 * Procfile's `web:`? A README alone is not one, nor a package.json with no way to start (a monorepo's
 * root: its apps are below it).
 */
async function runsHere(dir: string): Promise<boolean> {
  const here = await detect(dir);
  if (!here?.start) return false;
  return here.kind !== 'static' || existsSync(join(dir, 'index.html'));
}

/**
 * The app's folder when twinbox.yml names none: the root when it holds an app (or twinbox.yml says how to
 * start one there), else the one app below it. Several apps below it: the user must choose with `root:`.
 * None: the root, whose README (if any) is served as a repository of documents.
 */
async function chooseRoot(dir: string, config: ProfileConfig | undefined, notes: string[]): Promise<string> {
  if (config?.root !== undefined) return appFolder(dir, config.root);
  if (config?.start !== undefined || (await runsHere(dir))) return '';
  const { apps, truncated } = await appsBelow(dir);
  const cut = truncated ? ' (the search stopped early: the repository has too many files)' : '';
  if (apps.length > 1) {
    const named =
      apps.length > 8 ? `${apps.slice(0, 8).join(', ')} and ${apps.length - 8} more` : apps.join(', ');
    throw new ProfileError(
      `The repository's root has no app, and there are several below it: ${named}${cut}. ` +
        `Say which to deploy with "root:" in ${PROFILE_PATH}, e.g. root: ${apps[0]}`,
    );
  }
  if (apps.length === 1) {
    notes.push(
      `the repository's root has no app: deploying the one found below it, ${apps[0]}, as if ${PROFILE_PATH} said root: ${apps[0]}${cut}`,
    );
    return appFolder(dir, apps[0]!);
  }
  notes.push(
    `no app in the repository (no package.json with a start script, Procfile or index.html at the root ` +
      `or up to ${SEARCH_DEPTH} folders below it${cut})`,
  );
  return '';
}

/**
 * Reads how to run the app in `dir`: `.github/twinbox.yml` where present (its keys win), else what the files
 * show (package.json, index.html, Procfile, a README), at the root or in the one app folder below it.
 * Throws ProfileError with a text fit for the sandbox's `error`.
 */
export async function readProfile(dir: string): Promise<RuntimeProfile> {
  const config = await readConfig(dir);
  const notes: string[] = [];
  const root = await chooseRoot(dir, config, notes);
  const detected = await detect(join(dir, root));
  const start = config?.start ?? detected?.start;
  if (!start) {
    throw new ProfileError(
      detected?.kind === 'node'
        ? 'No way to start the app: package.json has no "start" script and no "main", and there is no Procfile.'
        : `No runtime profile: add ${PROFILE_PATH} with a "start" command, or a package.json, index.html, README or Procfile.`,
    );
  }
  const kind = detected?.kind;
  const source = (
    config ? (kind ? `twinbox.yml+${kind}` : 'twinbox.yml') : kind!
  ) as RuntimeProfile['source'];
  return {
    source,
    install: config?.install !== undefined ? config.install : (detected?.install ?? null),
    lockfile: config?.install !== undefined ? null : (detected?.lockfile ?? null),
    build: config?.build !== undefined ? config.build : (detected?.build ?? null),
    start,
    portVariable: config?.port_variable ?? 'PORT',
    healthPath: config?.health_path ?? '/',
    twins: config?.twins ?? [],
    env: Object.fromEntries(Object.entries(config?.env ?? {}).map(([k, v]) => [k, String(v)])),
    dependencies: detected?.dependencies ?? [],
    staticSite: start === `node ${STATIC_SERVER_PATH}`,
    webhooks: config?.webhooks ?? {},
    root,
    port: config?.port ?? null,
    notes:
      detected?.kind === 'static' && !config?.start && !existsSync(join(dir, root, 'index.html'))
        ? [...notes, 'serving the repository as documents: its files, with the README as the index page']
        : notes,
  };
}
