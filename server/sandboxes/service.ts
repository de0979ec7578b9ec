import { randomBytes, randomUUID } from 'node:crypto';
import { TallyFullError, type Store } from '../store/store.ts';
import type { AccountRecord, Plan, SandboxKind, SandboxRecord, SandboxStatus } from '../store/records.ts';
import type { TwinCatalog } from '../twins/catalog.ts';
import type { Accounts } from '../identity/accounts.ts';
import type { ScenarioDirectory } from '../scenarios/directory.ts';
import { badRequest, conflict, forbidden, notFound } from '../errors.ts';
import { NotLiveError, type SandboxLifecycle } from './lifecycle.ts';
import { ACTIVE_STATUSES } from './states.ts';
import { TTL_DEFAULT, TTL_MAX } from './validation.ts';
import { parsePullRequestUrl } from './pull-request-url.ts';
import type { Scenario } from '../scenarios/directory.ts';
import { planFromPrompt } from '../scenarios/planner.ts';
import { keepValidParts } from '../scenarios/seeds.ts';

/** The statuses the quota counts, as the store's tally takes them. */
const ACTIVE = [...ACTIVE_STATUSES];
/** The tally collections.ts declares for the quota: an owner's sandboxes with one of those statuses. */
const ACTIVE_TALLY = { by: 'owner_id', where: 'status', in: ACTIVE } as const;

/** 403 `plan_limit_exceeded`: the account holds (or is creating) `active` of its plan's `quota`. */
function planLimit(account: AccountRecord, quota: number, active: number) {
  const sandboxes = (n: number) => `${n} active sandbox${n === 1 ? '' : 'es'}`;
  return forbidden(
    `The ${account.plan} plan allows ${sandboxes(quota)} (queued, building or ready) at a time, and ` +
      `this account has ${active}. Twin sets count too. Delete one (DELETE /sandboxes/{id} or ` +
      `DELETE /twin-sets/{id}) or wait until one expires` +
      `${account.plan === 'free' ? ', or upgrade to the pro plan' : ''}.`,
    'plan_limit_exceeded',
  );
}

/** What twins a sandbox or a twin set starts with, how they are seeded, and how long it lives. */
export interface TwinsRequest {
  twins?: string[];
  scenario_id?: string;
  scenario_prompt?: string;
  ttl_minutes?: number;
  env?: Record<string, string>;
}

/** A `POST /sandboxes` body that passed the schema in validation.ts. */
export interface CreateSandboxInput extends TwinsRequest {
  repo: string;
  branch?: string;
  pr_url?: string;
}

export interface SandboxPolicy {
  production: boolean;
  freeTtlCapMinutes: number;
  /** Hosts whose pull-request URLs are accepted (github.com, or GitHub Enterprise / the twin). */
  githubWebHosts: string[];
  /** Sandboxes not yet ended (queued, building, ready) that one account may hold, per plan. */
  sandboxQuota: Record<Plan, number>;
}

export interface ListFilter {
  repo?: string;
  status?: SandboxStatus;
  limit: number;
  cursor?: string;
}

export interface SandboxPage {
  sandboxes: SandboxRecord[];
  next_cursor: string | null;
}

/** Create, read, list and delete sandboxes, with every rule of the spec. Routes stay thin. */
export class SandboxService {
  constructor(
    private readonly store: Store,
    private readonly accounts: Accounts,
    private readonly catalog: TwinCatalog,
    private readonly scenarios: ScenarioDirectory,
    private readonly lifecycle: SandboxLifecycle,
    private readonly policy: SandboxPolicy,
  ) {}

  /**
   * `origin.installationId`: the GitHub App installation creating it (app/), whose token fetches its
   * source; never taken from a request body.
   */
  async create(
    account: AccountRecord,
    input: CreateSandboxInput,
    origin: { installationId?: number } = {},
  ): Promise<SandboxRecord> {
    if (input.pr_url) this.checkPullRequestUrl(input.pr_url, input.repo);
    return this.admit(account, input, 'app', {
      repo: input.repo,
      branch: input.branch ?? null,
      pr_url: input.pr_url ?? null,
      installation_id: origin.installationId ?? null,
    });
  }

  /**
   * Twins alone (POST /twin-sets): the same twin names, seeding, TTL and plan rules as a sandbox, and
   * the same quota, with no repository (so no GitHub connection is needed) and no app.
   */
  async createTwinSet(account: AccountRecord, input: TwinsRequest): Promise<SandboxRecord> {
    return this.admit(account, input, 'twins', {
      repo: '',
      branch: null,
      pr_url: null,
      installation_id: null,
    });
  }

  /** The rules both kinds share, then the record, inserted and its deploy queued. */
  private async admit(
    account: AccountRecord,
    input: TwinsRequest,
    kind: SandboxKind,
    source: Pick<SandboxRecord, 'repo' | 'branch' | 'pr_url' | 'installation_id'>,
  ): Promise<SandboxRecord> {
    this.checkTwinNames(input.twins ?? []);
    const scenario = input.scenario_id
      ? await this.scenarios.findVisible(account.id, input.scenario_id)
      : undefined;
    if (input.scenario_id && !scenario) {
      throw badRequest(
        `Unknown scenario_id "${input.scenario_id}": no preset or saved scenario of yours has it.`,
        'unknown_scenario',
      );
    }
    if (kind === 'app' && this.policy.production && !(await this.accounts.hasScmConnected(account.id))) {
      throw forbidden(
        'Connect GitHub to your Twinbox account before creating sandboxes (GET /auth/github/connect).',
        'scm_not_connected',
      );
    }
    const ttl = input.ttl_minutes ?? TTL_DEFAULT;
    if (account.plan === 'free' && ttl > this.policy.freeTtlCapMinutes) {
      throw forbidden(
        `ttl_minutes ${ttl} is above the free plan's cap of ${this.policy.freeTtlCapMinutes} minutes. ` +
          `Ask for ${this.policy.freeTtlCapMinutes} or less, or upgrade to the pro plan.`,
        'plan_limit_exceeded',
      );
    }

    const seeding = planSeed(input, scenario);
    // A sandbox may find its twins in its repository's profile later; a twin set has nothing else.
    if (kind === 'twins' && seeding.twins.length === 0) {
      throw badRequest(
        'Name the twins to start: "twins" (for example ["stripe"]), or a "scenario_id" or ' +
          '"scenario_prompt" that names some.',
        'no_twins',
      );
    }
    return this.insert(account, input, kind, source, seeding, ttl);
  }

  private async insert(
    account: AccountRecord,
    input: TwinsRequest,
    kind: SandboxKind,
    source: Pick<SandboxRecord, 'repo' | 'branch' | 'pr_url' | 'installation_id'>,
    seeding: ReturnType<typeof planSeed>,
    ttl: number,
  ): Promise<SandboxRecord> {
    const now = new Date();
    const sandbox: SandboxRecord = {
      id: randomUUID(),
      owner_id: account.id,
      status: 'queued',
      // Written only for twin sets: an `app` record reads the same as one made before kinds existed.
      ...(kind === 'twins' ? { kind } : {}),
      repo: source.repo,
      branch: source.branch,
      pr_url: source.pr_url,
      // Omitted twins: the scenario's or the prompt's; the deploy engine may add the profile's later.
      twin_names: seeding.twins,
      seed: seeding.seed,
      seed_notes: seeding.notes,
      scenario_id: input.scenario_id ?? null,
      scenario_prompt: input.scenario_id ? null : (input.scenario_prompt ?? null),
      ttl_minutes: ttl,
      twin_admin_token: `twinadm_${randomBytes(24).toString('base64url')}`,
      env: input.env ?? {},
      app_url: null,
      twins: {},
      env_vars: {},
      error: null,
      created_at: now.toISOString(),
      updated_at: now.toISOString(),
      expires_at: new Date(now.getTime() + ttl * 60_000).toISOString(),
      ended_at: null,
      installation_id: source.installation_id ?? null,
    };
    // The quota is checked by the insert itself, within the store's tally: the count and the write are one
    // step, in this process (the embedded store) and across every process sharing PostgreSQL, so the
    // inserts of one account run side by side and concurrent creates cannot all see room. The tally is
    // kept as records change (collections.ts), not a scan of the account's sandboxes.
    try {
      await this.store.sandboxes.insert(sandbox, { ...ACTIVE_TALLY, max: this.quotaOf(account) });
    } catch (error) {
      if (error instanceof TallyFullError) throw planLimit(account, error.max, error.count);
      throw error;
    }
    // Answered only once the deploy job is durable too: a 201 promises a deploy, crash or not.
    await this.lifecycle.enqueue(sandbox);
    return sandbox;
  }

  /**
   * The caller's sandbox (or, with `kind` twins, twin set); another account's, or one of the other kind,
   * is reported exactly like a missing one.
   */
  async get(account: AccountRecord, id: string, kind: SandboxKind = 'app'): Promise<SandboxRecord> {
    const sandbox = await this.store.sandboxes.get(id);
    if (!sandbox || sandbox.owner_id !== account.id || kindOf(sandbox) !== kind)
      throw notFound(`No ${kind === 'twins' ? 'twin set' : 'sandbox'} ${id} in your account.`);
    return sandbox;
  }

  async list(account: AccountRecord, filter: ListFilter, kind: SandboxKind = 'app'): Promise<SandboxPage> {
    const after = filter.cursor ? decodeCursor(filter.cursor) : undefined;
    const matching = (await this.store.sandboxes.findBy('owner_id', account.id))
      .filter(
        (s) =>
          kindOf(s) === kind &&
          (!filter.repo || s.repo.toLowerCase() === filter.repo.toLowerCase()) &&
          (!filter.status || s.status === filter.status),
      )
      .sort(newestFirst)
      .filter((s) => !after || newestFirst(s, after) > 0);
    const page = matching.slice(0, filter.limit);
    const last = page.at(-1);
    return {
      sandboxes: page,
      next_cursor: matching.length > filter.limit && last ? encodeCursor(last) : null,
    };
  }

  /** Deletes the caller's sandbox now; deleting an ended sandbox again is a no-op that returns it. */
  async delete(account: AccountRecord, id: string, kind: SandboxKind = 'app'): Promise<SandboxRecord> {
    const sandbox = await this.get(account, id, kind);
    if (sandbox.status === 'deleted' || sandbox.status === 'expired') return sandbox;
    return (await this.lifecycle.end(id, 'deleted')) ?? sandbox;
  }

  /**
   * Adds `minutes` to the expiry of the caller's queued, building or ready sandbox, as long as its whole
   * lifetime stays within the owner's plan cap: 403 `plan_limit_exceeded` above it, 409 `sandbox_not_active`
   * once it has failed or ended.
   */
  async extend(account: AccountRecord, id: string, minutes: number): Promise<SandboxRecord> {
    return this.extendRecord(account, await this.get(account, id), minutes);
  }

  /** `extend` for a sandbox already in hand (the GitHub App acts for the pull request's owner account). */
  async extendRecord(owner: AccountRecord, sandbox: SandboxRecord, minutes: number): Promise<SandboxRecord> {
    if (!ACTIVE_STATUSES.has(sandbox.status)) throw notActive(sandbox.id, sandbox.status);
    const cap = this.ttlCap(owner);
    const from = Math.max(Date.now(), Date.parse(sandbox.expires_at));
    const expires = new Date(from + minutes * 60_000);
    const lifetime = Math.ceil((expires.getTime() - Date.parse(sandbox.created_at)) / 60_000);
    if (lifetime > cap) {
      throw forbidden(
        `Extending by ${minutes} minutes would make the sandbox live ${lifetime} minutes, above the ` +
          `${owner.plan} plan's cap of ${cap} minutes; nothing was done.`,
        'plan_limit_exceeded',
      );
    }
    try {
      const updated = await this.lifecycle.extend(sandbox.id, expires, minutes);
      if (!updated) throw notFound(`No sandbox ${sandbox.id} in your account.`);
      return updated;
    } catch (error) {
      if (!(error instanceof NotLiveError)) throw error;
      throw notActive(sandbox.id, error.message);
    }
  }

  /** The longest lifetime, in minutes, a sandbox of this account may have. */
  private ttlCap(account: AccountRecord): number {
    return account.plan === 'pro' ? TTL_MAX : Math.min(this.policy.freeTtlCapMinutes, TTL_MAX);
  }

  private quotaOf(account: AccountRecord): number {
    return this.policy.sandboxQuota[account.plan] ?? this.policy.sandboxQuota.free;
  }

  private checkTwinNames(names: string[]): void {
    const unknown = names.filter((name) => !this.catalog.has(name));
    if (unknown.length === 0) return;
    const supported = this.catalog.list().map((twin) => twin.name);
    throw badRequest(
      `Unknown twin name${unknown.length > 1 ? 's' : ''}: ${unknown.join(', ')}. ` +
        `Supported twins: ${supported.length ? supported.join(', ') : 'none yet'}.`,
      'unknown_twin',
    );
  }

  private checkPullRequestUrl(prUrl: string, repo: string): void {
    const parsed = parsePullRequestUrl(prUrl, this.policy.githubWebHosts);
    if (!parsed) {
      throw badRequest(
        `"pr_url" must be a pull-request URL such as https://github.com/${repo}/pull/1.`,
        'invalid_pr_url',
      );
    }
    if (parsed.repo.toLowerCase() !== repo.toLowerCase()) {
      throw badRequest(`"pr_url" points at ${parsed.repo}, not at "repo" ${repo}.`, 'invalid_pr_url');
    }
  }
}

/**
 * What a new sandbox seeds its twins with: the scenario's seed, or the seed the planner makes of the
 * prompt. A prompt that makes no sense seeds nothing and says so in `notes`; it never fails the sandbox.
 */
function planSeed(
  input: TwinsRequest,
  scenario: Scenario | undefined,
): { twins: string[]; seed: Record<string, unknown> | null; notes: string[] } {
  if (scenario) return { twins: input.twins ?? scenario.twins, seed: scenario.seed, notes: [] };
  if (!input.scenario_prompt) return { twins: input.twins ?? [], seed: null, notes: [] };
  const plan = planFromPrompt(input.scenario_prompt);
  const twins = input.twins ?? plan.twins;
  const notes = [...plan.notes];
  const seed = keepValidParts(plan.seed, twins, notes);
  return { twins, seed: Object.keys(seed).length ? seed : null, notes };
}

export function kindOf(sandbox: Pick<SandboxRecord, 'kind'>): SandboxKind {
  return sandbox.kind ?? 'app';
}

/** Newest first; ties (same millisecond) broken by id so the order is total and pages never overlap. */
function newestFirst(
  a: Pick<SandboxRecord, 'created_at' | 'id'>,
  b: Pick<SandboxRecord, 'created_at' | 'id'>,
): number {
  return b.created_at.localeCompare(a.created_at) || b.id.localeCompare(a.id);
}

function encodeCursor(sandbox: SandboxRecord): string {
  return Buffer.from(JSON.stringify([sandbox.created_at, sandbox.id])).toString('base64url');
}

function decodeCursor(cursor: string): Pick<SandboxRecord, 'created_at' | 'id'> {
  try {
    const [created_at, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown[];
    if (typeof created_at === 'string' && typeof id === 'string') return { created_at, id };
  } catch {
    // fall through to the 400 below
  }
  throw badRequest('"cursor" is not a cursor returned by this API.');
}

function notActive(id: string, status: string) {
  return conflict(
    `Sandbox ${id} is ${status}: only a queued, building or ready sandbox can be extended.`,
    'sandbox_not_active',
  );
}
