import { createHmac } from 'node:crypto';
import Joi from 'joi';
import {
  changesStateByMethod,
  TwinInputError,
  type Authorization,
  type Granted,
  type RequestHead,
} from '../../contract.ts';
import type { Engine } from '../../engine/emulate.ts';
import { EngineTwin, type EngineTwinSaved } from '../../engine/engine-twin.ts';
import { credentialFieldsSaved, engineTwinFactory } from '../../engine/factory.ts';
import { json } from '../../runtime/http.ts';
import { isKnownSecret, presentedToken, randomToken } from '../../runtime/secrets.ts';
import type { WebhookSigner } from '../../runtime/webhooks.ts';
import { handlePullFiles, refreshPullStats, registerExtensions, synchronizePulls } from './extensions.ts';
import { handleCompat, type CompatContext } from './compat.ts';
import { unsupportedApiVersion } from './versions.ts';
import { followRenames } from './renames.ts';
import { GitHubShape } from './shape.ts';
import { expireUserTokens, handleOAuth, tokenExpired } from './oauth.ts';
import { applyIssuesAndPulls } from './issues-seed.ts';
import { pushFiles, type EngineCall } from './repo-files.ts';
import { engineSeed, repoSchema, validateGitHubSeed, type FileContent, type GitHubSeed } from './seed.ts';
import { hiddenFrom } from './visibility.ts';
import {
  APP_KEY_CREDENTIAL,
  appEnvVars,
  appSecrets,
  checkSeedApps,
  ensureSandboxApp,
  generateAppKey,
  prepareAppKey,
  handleInstallationLookup,
  verifyAppJwt,
} from './app.ts';
import { enterprisePath, enterpriseResponse, rootRequest } from './enterprise.ts';
import { githubDescriptor } from './descriptor.ts';

const TOKEN_SCOPES = ['repo', 'user', 'user:email', 'admin:org', 'admin:repo_hook', 'workflow'];
const DOCS = 'https://docs.github.com/rest';

const githubError = (status: number, message: string) =>
  json(status, { message, documentation_url: DOCS, status: String(status) });

/**
 * The web side of OAuth: the authorize page, its account-picker form post, the code exchange (client
 * credentials in the body) and the engine's grant pages (its own cookie session). No API token there.
 */
const MARKDOWN = /^\/markdown(\/raw)?$/;
const WEB_FLOW = /^\/(login\/|settings\/connections\/applications\/)/;

/** What the GitHub twin keeps beside the engine's state (EngineTwinSaved's `extra`). */
interface GitHubExtra {
  auto_approve?: string;
  /** Client ids of OAuth apps whose user tokens expire (seed `expiring_tokens`). */
  expiring_clients?: string[];
}

/** The login GITHUB_TOKEN acts as. */
const tokenLoginOf = (seed: GitHubSeed) => seed.token_login ?? seed.users?.[0]?.login ?? 'admin';

export const githubSigner: WebhookSigner = ({ event, body, secret, guid }) => ({
  'user-agent': 'GitHub-Hookshot/twinbox',
  'x-github-event': event,
  'x-github-delivery': guid,
  'x-github-hook-id': '1',
  'x-hub-signature': `sha1=${createHmac('sha1', secret).update(body).digest('hex')}`,
  'x-hub-signature-256': `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`,
});

const pushSchema = Joi.object({
  owner: Joi.string().required(),
  repo: Joi.string().required(),
  branch: Joi.string(),
  message: Joi.string(),
  replace: Joi.boolean(),
  files: Joi.object()
    .pattern(
      Joi.string(),
      Joi.alternatives(
        Joi.string().allow(''),
        Joi.object({ base64: Joi.string().base64().allow('').required() }),
        null,
      ),
    )
    .min(1)
    .required(),
});

class GitHubTwin extends EngineTwin {
  private readonly internalToken = randomToken('twinbox_internal_');
  private readonly shape: GitHubShape;
  private readonly tokenLogin: string;
  private autoApprove: string | undefined;
  /** OAuth clients issuing expiring user tokens with refresh tokens (GitHub Apps' default). */
  private readonly expiringClients = new Set<string>();
  /** While > 0 the twin is applying a seed: like Stripe's, seeding sends no webhooks. */
  private seeding = 0;

  constructor(
    engine: Engine,
    baseUrl: string,
    credentials: Record<string, string>,
    private readonly seed: GitHubSeed,
  ) {
    // Engine events (issue comments, pull requests, ...) and ours (deployments) all go to our target too.
    super(engine, baseUrl, credentials, githubSigner);
    this.tokenLogin = tokenLoginOf(seed);
    this.autoApprove = seed.oauth?.auto_approve;
    this.noteExpiringClients(seed);
    registerExtensions(engine, baseUrl, this.call);
    this.shape = new GitHubShape(engine, baseUrl);
  }

  private readonly compat: CompatContext = {
    engine: this.engine,
    call: (login, method, path, body) => this.call(login, method, path, body),
    engineFetch: (r) => this.engine.app.fetch(r),
  };

  private get token(): string {
    return this.credentials.GITHUB_TOKEN!;
  }

  private get webhookSecret(): string {
    return this.credentials.GITHUB_WEBHOOK_SECRET!;
  }

  protected override sendsEvents(): boolean {
    return this.seeding === 0;
  }

  /** Calls the engine API in-process as `login` (falls back to the token's user for orgs). */
  readonly call: EngineCall = async (login, method, path, body) => {
    const users = this.engine.store.collection('github.users', ['login']);
    const user = users.findOneBy('login', login) ?? users.findOneBy('login', this.tokenLogin);
    const token = `${this.internalToken}.${user?.login ?? login}`;
    if (!this.engine.tokenMap.has(token)) {
      this.engine.tokenMap.set(token, {
        login: (user?.login as string) ?? login,
        id: user?.id ?? 1,
        scopes: TOKEN_SCOPES,
      });
    }
    const response = await this.engine.app.fetch(
      new Request(new URL(path, this.baseUrl), {
        method,
        headers: {
          authorization: `token ${token}`,
          'content-type': 'application/json',
          accept: 'application/vnd.github+json',
        },
        body: body === undefined ? undefined : JSON.stringify(body),
      }),
    );
    const text = await response.text();
    let data: unknown = text;
    try {
      data = text ? JSON.parse(text) : null;
    } catch {
      // Non-JSON (e.g. HTML) responses are returned as text.
    }
    return { status: response.status, data };
  };

  /** An event of an account that installed a GitHub App names the installation, as GitHub's do. */
  protected override eventBody(_event: string, payload: unknown, owner: string): unknown {
    if (!payload || typeof payload !== 'object' || 'installation' in payload) return payload;
    const inst = this.engine.store
      .collection('github.app_installations')
      .all()
      .find((i) => i.account_login === owner);
    return inst ? { ...payload, installation: { id: inst.installation_id } } : payload;
  }

  /**
   * Before any body is read. The engine takes any unknown token as its first user; we do not: a token
   * must be one the twin issued (GITHUB_TOKEN, OAuth, installation tokens; compared in constant time) or
   * a GitHub App JWT signed with a seeded app's key. Without credentials, reads and the OAuth web flow
   * are public (as on github.com); writes are not.
   */
  authorize(head: RequestHead): Authorization {
    const header = head.headers.get('authorization');
    const credential = header === null ? undefined : this.credential(header);
    const path = enterprisePath(head.url.pathname) ?? head.url.pathname;
    // The OAuth web flow needs no token; one that is there is used only when valid (handle drops others).
    if (WEB_FLOW.test(path)) return credential === true ? true : 'public';
    if (credential !== undefined) return credential;
    // Rendering Markdown reads and writes nothing: GitHub serves it without a token.
    return ['GET', 'HEAD', 'OPTIONS'].includes(head.method) || (head.method === 'POST' && MARKDOWN.test(path))
      ? 'public'
      : githubError(401, 'Requires authentication');
  }

  /** The OAuth authorize page (a GET) stores a PKCE challenge and, when auto-approving, issues a code. */
  changesState(head: RequestHead): boolean {
    return changesStateByMethod(head.method) || head.url.pathname.startsWith('/login/oauth/');
  }

  /** An `Authorization` header's verdict: true, or GitHub's 401. */
  private credential(header: string): true | Response {
    const presented = presentedToken(header);
    if (!presented || !['token', 'bearer', 'basic'].includes(presented.scheme)) {
      return githubError(401, 'Bad credentials');
    }
    if (presented.scheme !== 'basic' && presented.token.startsWith('eyJ')) {
      const verdict = verifyAppJwt(this.engine, presented.token);
      return 'error' in verdict ? githubError(401, verdict.error) : true;
    }
    return isKnownSecret(presented.token, this.engine.tokenMap.keys()) &&
      !tokenExpired(this.engine, presented.token)
      ? true
      : githubError(401, 'Bad credentials');
  }

  /** Called by the instance once `authorize` let the request in (`granted`) and its input screen passed. */
  override async handle(request: Request, granted: Granted): Promise<Response> {
    // GitHub Enterprise Server's layout (/api/v3, /api/graphql): the same answers, with /api/v3 URLs.
    const root = await rootRequest(request);
    if (!root) return this.handleApi(request, granted);
    const origins = [...new Set([this.baseUrl, new URL(request.url).origin])];
    return enterpriseResponse(await this.handleApi(root, granted), origins);
  }

  private async handleApi(request: Request, granted: Granted): Promise<Response> {
    const url = new URL(request.url);
    // The engine must only ever see a verified credential, as `token ...` or `Bearer ...`: it would take
    // any other token as its first user, and reads neither Basic (`user:token`) nor an unverified header.
    const presented = presentedToken(request.headers.get('authorization'));
    let forwarded = request;
    if (request.headers.has('authorization') && (granted === 'public' || presented?.scheme === 'basic')) {
      const headers = new Headers(request.headers);
      if (granted === 'public' || !presented) headers.delete('authorization');
      else headers.set('authorization', `token ${presented.token}`);
      forwarded = new Request(request, { headers });
    }
    // A private repository its caller cannot read is GitHub's 404, before the engine says otherwise.
    const jwt = granted === true && presented?.scheme !== 'basic' && presented?.token.startsWith('eyJ');
    const apiToken = granted === true && presented && !jwt ? presented.token : undefined;
    // A renamed repository's old path redirects; `/repositories/{id}` is read as its current path.
    const followed = followRenames(this.engine, forwarded, apiToken);
    if (followed instanceof Response) return followed;
    forwarded = followed;
    if (!jwt && hiddenFrom(this.engine, new URL(forwarded.url), apiToken))
      return githubError(404, 'Not Found');
    const unsupported = unsupportedApiVersion(forwarded);
    if (unsupported) return unsupported;
    forwarded = await this.shape.prepare(forwarded);
    const response =
      (await handleOAuth(this.engine, forwarded, {
        autoApprove: () => this.autoApprove,
        expiring: (clientId) => this.expiringClients.has(clientId),
      })) ??
      (await handleInstallationLookup(this.engine, forwarded, jwt ? presented?.token : undefined)) ??
      (await handlePullFiles(this.engine, forwarded)) ??
      (await handleCompat(forwarded, this.compat)) ??
      (await this.engine.app.fetch(forwarded));
    return this.shape.finish(forwarded, response);
  }

  /** GitHub's `{message, documentation_url}`: 400 for JSON it cannot parse, 422 for keys it does not permit. */
  errorResponse(status: number, message: string, code?: string): Response {
    if (code === 'invalid_json') return githubError(400, 'Problems parsing JSON');
    if (code === 'forbidden_key') {
      return githubError(
        422,
        `Invalid request.\n\n${message.replace(/ is not an allowed key$/, ' is not a permitted key')}.`,
      );
    }
    if (code === 'too_large') return githubError(413, `Payload too large: ${message}.`);
    return githubError(status, status >= 500 ? 'Server Error' : message);
  }

  envVars(): Record<string, string> {
    return {
      GITHUB_TOKEN: this.token,
      GITHUB_API_URL: this.baseUrl,
      GITHUB_SERVER_URL: this.baseUrl,
      GITHUB_WEBHOOK_SECRET: this.webhookSecret,
      ...appEnvVars(this.engine, this.webhookSecret, this.tokenLogin),
    };
  }

  override secrets(): string[] {
    return [
      ...super.secrets(),
      ...appSecrets(this.engine),
      ...(this.webhooks.target ? [this.webhooks.target.secret] : []),
    ];
  }

  /** The tokens of in-process calls are made anew by each process: they are never saved. */
  override snapshot(): EngineTwinSaved {
    const saved = super.snapshot();
    return { ...saved, tokens: saved.tokens.filter(([t]) => !t.startsWith(this.internalToken)) };
  }

  protected override saveExtra(): GitHubExtra {
    return { auto_approve: this.autoApprove, expiring_clients: [...this.expiringClients] };
  }

  protected override restoreExtra(extra: unknown): void {
    const saved = (extra ?? {}) as GitHubExtra;
    this.autoApprove = saved.auto_approve;
    for (const clientId of saved.expiring_clients ?? []) this.expiringClients.add(clientId);
  }

  /** The engine's reset re-applies its seed: that sends no webhooks either. */
  override async reset(): Promise<void> {
    this.seeding++;
    try {
      await super.reset();
    } finally {
      this.seeding--;
    }
  }

  /** Only GITHUB_TOKEN outlives a reset: tokens issued since (OAuth, installations) are gone. */
  protected override async afterReset(): Promise<void> {
    const own = this.engine.tokenMap.get(this.token);
    this.engine.tokenMap.clear();
    if (own) this.engine.tokenMap.set(this.token, own);
    this.autoApprove = this.seed.oauth?.auto_approve;
    await this.applyRepoContent(this.seed);
  }

  async applySeed(raw: unknown): Promise<void> {
    const seed = raw as GitHubSeed;
    checkSeedApps(this.engine, seed.apps);
    this.seeding++;
    try {
      this.engine.seedFromConfig(engineSeed(seed));
    } catch (error) {
      throw new TwinInputError(400, `github seed: ${error instanceof Error ? error.message : String(error)}`);
    } finally {
      this.seeding--;
    }
    if (seed.oauth?.auto_approve !== undefined) this.autoApprove = seed.oauth.auto_approve;
    this.noteExpiringClients(seed);
    if (seed.webhook) this.configureTarget(seed.webhook);
    await this.applyRepoContent(seed);
  }

  /** The generated app's key, kept (and persisted) with the credentials; applyRepoContent registers it. */
  keepAppKey(key: string): void {
    this.credentials[APP_KEY_CREDENTIAL] = key;
  }

  private noteExpiringClients(seed: GitHubSeed): void {
    for (const app of seed.oauth_apps ?? []) if (app.expiring_tokens) this.expiringClients.add(app.client_id);
  }

  configureTarget(w: NonNullable<GitHubSeed['webhook']>): void {
    this.webhooks.target = { url: w.url, secret: w.secret ?? this.webhookSecret, events: w.events ?? ['*'] };
  }

  /** Files, branches, issues and pulls of the seed's repositories, written through the engine's own API. */
  async applyRepoContent(seed: GitHubSeed): Promise<void> {
    this.seeding++;
    try {
      await this.applyFiles(seed);
      for (const [i, repo] of (seed.repos ?? []).entries()) {
        await applyIssuesAndPulls(this.call, repo, `repos[${i}]`, {
          ensureUser: (login) => this.ensureUser(login),
          pullCreated: (number) => refreshPullStats(this.engine, this.call, repo.owner, repo.name, number),
        });
      }
      ensureSandboxApp(this.engine, this.credentials, this.tokenLogin);
    } finally {
      this.seeding--;
    }
  }

  /** Comment authors need not be listed in `users`: an unknown login becomes a user, as on github.com. */
  private ensureUser(login: string): void {
    const users = this.engine.store.collection('github.users', ['login']);
    if (!users.findOneBy('login', login)) this.engine.seedFromConfig({ users: [{ login }] });
  }

  private async applyFiles(seed: GitHubSeed): Promise<void> {
    for (const repo of seed.repos ?? []) {
      if (repo.files && Object.keys(repo.files).length) {
        await pushFiles(this.call, repo.owner, {
          owner: repo.owner,
          repo: repo.name,
          files: repo.files,
          message: 'Seed files',
        });
      }
      for (const [branch, files] of Object.entries(repo.branches ?? {})) {
        await pushFiles(this.call, repo.owner, {
          owner: repo.owner,
          repo: repo.name,
          branch,
          files,
          message: `Seed ${branch}`,
        });
      }
    }
  }

  readonly adminRoutes = async (method: string, subpath: string, body: unknown) => {
    if (method === 'POST' && subpath === '/repos') {
      const { error, value } = repoSchema.validate(body ?? {});
      if (error) throw new TwinInputError(400, error.message);
      const users = this.engine.store.collection('github.users', ['login']);
      const orgs = this.engine.store.collection('github.orgs', ['login']);
      const ownerExists = users.findOneBy('login', value.owner) || orgs.findOneBy('login', value.owner);
      const seed = validateGitHubSeed({
        ...(ownerExists ? {} : { users: [{ login: value.owner }] }),
        repos: [value],
      });
      await this.applySeed(seed);
      const repo = await this.call(value.owner, 'GET', `/repos/${value.owner}/${value.name}`);
      return { status: 201, body: repo.data };
    }
    if (method === 'POST' && subpath === '/repos/files') {
      const { error, value } = pushSchema.validate(body ?? {});
      if (error) throw new TwinInputError(400, error.message);
      const result = await pushFiles(
        this.call,
        value.owner,
        value as { owner: string; repo: string; files: Record<string, FileContent> },
      );
      await synchronizePulls(
        this.engine,
        this.call,
        value.owner,
        value.repo,
        result.branch,
        result.commit_sha,
      );
      return { status: 201, body: result };
    }
    // Time passing, for tests: a login's expiring user tokens lapse now (its refresh tokens stay valid).
    if (method === 'POST' && subpath === '/oauth/expire-user-tokens') {
      const { error, value } = Joi.object({ login: Joi.string().required() }).validate(body ?? {});
      if (error) throw new TwinInputError(400, error.message);
      return { status: 200, body: { expired: expireUserTokens(this.engine, value.login) } };
    }
    if (method === 'PUT' && subpath === '/oauth') {
      const { error, value } = Joi.object({ auto_approve: Joi.string().allow(null).required() }).validate(
        body ?? {},
      );
      if (error) throw new TwinInputError(400, error.message);
      this.autoApprove = value.auto_approve ?? undefined;
      return { status: 200, body: { auto_approve: this.autoApprove ?? null } };
    }
    return undefined;
  };

  faultResponse(kind: 'status' | 'rate_limit', status: number): Response {
    if (kind === 'rate_limit') {
      const reset = String(Math.floor(Date.now() / 1000) + 60);
      return json(
        403,
        {
          message: 'API rate limit exceeded for user ID 1.',
          documentation_url: 'https://docs.github.com/rest/overview/resources-in-the-rest-api#rate-limiting',
        },
        {
          'x-ratelimit-limit': '5000',
          'x-ratelimit-remaining': '0',
          'x-ratelimit-reset': reset,
          'x-ratelimit-resource': 'core',
        },
      );
    }
    return json(status, {
      message: status >= 500 ? 'Server Error' : 'Injected fault',
      documentation_url: 'https://docs.github.com/rest',
    });
  }
}

export const githubTwin = engineTwinFactory(githubDescriptor, {
  newCredentials: () => ({ GITHUB_TOKEN: randomToken('ghp_'), GITHUB_WEBHOOK_SECRET: randomToken('whsec_') }),
  engineSeed: (seed, credentials) => ({
    tokens: { [credentials.GITHUB_TOKEN!]: { login: tokenLoginOf(seed), scopes: TOKEN_SCOPES } },
    github: engineSeed(seed),
  }),
  driver: (engine, baseUrl, credentials, seed) => new GitHubTwin(engine, baseUrl, credentials, seed),
  async fresh(twin, seed) {
    // A seed without apps of its own gets the sandbox's app, with a key made for this instance.
    if (!seed.apps?.length) twin.keepAppKey(await generateAppKey());
    if (seed.webhook) twin.configureTarget(seed.webhook);
    await twin.applyRepoContent(seed);
  },
  // Up to d4a1e50 the twin saved its credentials in fields of their own: read once, saved anew.
  readSaved: credentialFieldsSaved({ GITHUB_TOKEN: 'token', GITHUB_WEBHOOK_SECRET: 'webhook_secret' }),
  prepare: prepareAppKey,
});
