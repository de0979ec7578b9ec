import { join } from 'node:path';
import type { Logger } from 'pino';
import { DeployFailure, type Deployer, type DeployResult } from '../sandboxes/deployer.ts';
import { vendorOf, type BlockedEgress } from '../sandboxes/egress.ts';
import type { SandboxRecord, TwinEntry } from '../store/records.ts';
import { APP_PORT, INSTALL_PROXY_PORT } from '../pod/layout.ts';
import { TwinAdminClient } from '../twins/admin-client.ts';
import { DependencyCache } from './dependency-cache.ts';
import { waitForHttp } from './health.ts';
import type { ExecSpec, Isolation } from './isolation.ts';
import { SandboxLogs, type LogSink } from './logs.ts';
import {
  DEPLOY_STEPS,
  runPipeline,
  type DeployContext,
  type DeployRunner,
  type StepObserver,
  type StepTimings,
} from './pipeline.ts';
import type { Pod, PodManager } from './pods.ts';
import { freePort } from './ports.ts';
import { PidFiles, runStep, spawnGroup, type GroupProcess } from './processes.ts';
import type { SourceFetcher } from './source.ts';
import { createWorkspace, removeWorkspace, sweepWorkspaces } from './workspace.ts';

export type { StepTimings } from './pipeline.ts';

/** Public URLs of a sandbox's app and twins (the router serves them). */
export interface SandboxUrls {
  appUrl(sandboxId: string): string;
  twinUrl(sandboxId: string, twin: string): string;
}

export interface LocalDeployerOptions {
  dataDir: string;
  pods: PodManager;
  urls: SandboxUrls;
  source: SourceFetcher;
  isolation: Isolation;
  logger: Logger;
  /** Is `name` in the twin catalog? (Profile twins are repository text, so they are checked.) */
  supportedTwin: (name: string) => boolean;
  /** Seed documents per twin for a sandbox (its scenario's), if any. */
  seedsFor?: (sandbox: SandboxRecord) => Promise<Record<string, unknown> | undefined>;
  healthTimeoutMs: number;
  buildTimeoutMs: number;
  memoryBytes: number;
  /** Size cap of a sandbox's workspace. */
  diskBytes: number;
  logBytes: number;
  logFileBytes: number;
}

/**
 * The embedded deploy engine: the shared deploy steps (pipeline.ts) run with a pod per sandbox (its twins
 * and, where the host allows, its own network namespace) and the app as a confined process group in that
 * namespace. Every failure tears down what the deploy started and surfaces as an Error whose message is
 * the sandbox's `error` text.
 */
export class LocalDeployer implements Deployer {
  private readonly apps = new Map<string, GroupProcess>();
  /** Steps (install, build) in flight, so teardown can stop them too. */
  private readonly steps = new Map<string, GroupProcess>();
  /** Releases under way, by sandbox: a crashed app's exit is not a crash while its sandbox is released. */
  private readonly releasing = new Map<string, Promise<void>>();
  private readonly pods = new Map<string, Pod>();
  readonly logs: SandboxLogs;
  readonly timings = new Map<string, StepTimings>();
  private readonly pids: PidFiles;
  private readonly deps: DependencyCache;
  /** Called when a ready app exits on its own; the composition root points it at the lifecycle. */
  onCrash: (sandboxId: string, error: string) => void = () => {};
  /** Called when a sandbox's code tried to reach something it may not (docs/security.md). */
  onBlockedEgress: (sandboxId: string, blocked: BlockedEgress[]) => void = () => {};
  /** Called as each deploy step starts and ends (the composition root points it at the timeline). */
  onStep: (sandboxId: string, ...step: Parameters<StepObserver>) => void = () => {};

  constructor(private readonly opts: LocalDeployerOptions) {
    this.logs = new SandboxLogs(join(opts.dataDir, 'logs'), opts.logBytes, opts.logFileBytes);
    this.pids = new PidFiles(join(opts.dataDir, 'run'));
    this.deps = new DependencyCache(join(opts.dataDir, 'cache', 'node_modules'), {
      stagingBytes: opts.diskBytes,
    });
  }

  /** `none` when apps share the host's network and file system (development without isolation). */
  get isolationLevel(): 'full' | 'none' {
    const caps = this.opts.isolation.capabilities;
    return caps.processes && caps.filesystem && caps.cgroups !== 'none' && this.opts.pods.network === 'own'
      ? 'full'
      : 'none';
  }

  /** Kills what a previous run left behind (Twinbox crashed or was killed). Call before recover(). */
  async killLeftovers(): Promise<string[]> {
    const found = await this.pids.killLeftovers();
    await this.opts.isolation.killLeftovers();
    await this.opts.pods.sweep();
    await sweepWorkspaces(join(this.opts.dataDir, 'workspaces'));
    if (found.length)
      this.opts.logger.warn({ sandboxes: found }, 'killed app processes left by a previous run');
    return found;
  }

  workspaceOf(sandboxId: string): string {
    return join(this.opts.dataDir, 'workspaces', encodeURIComponent(sandboxId));
  }

  /** PID (= process group) of a sandbox's running app, for tests and diagnostics. */
  appPid(sandboxId: string): number | undefined {
    return this.apps.get(sandboxId)?.pid;
  }

  /** The pod of a live sandbox: the router reaches its app and twins through the pod's sockets. */
  podOf(sandboxId: string): Pod | undefined {
    return this.pods.get(sandboxId);
  }

  async deploy(sandbox: SandboxRecord, signal: AbortSignal): Promise<DeployResult> {
    const log = await this.logs.open(sandbox.id);
    const timings: StepTimings = {};
    this.timings.set(sandbox.id, timings);
    const ctx: DeployContext = {
      sandbox,
      signal,
      log,
      workspace: this.workspaceOf(sandbox.id),
      logsHint: `(see GET /sandboxes/${sandbox.id}/logs)`,
      seeds: {},
      readOnly: [],
      onStep: (...step) => this.onStep(sandbox.id, ...step),
    };
    try {
      log.note(`deploying ${sandbox.repo} ${sandbox.pr_url ?? `branch ${sandbox.branch}`}`);
      log.note(
        `isolation: ${this.isolationLevel === 'full' ? 'full (own network namespace, bubblewrap, limits)' : 'NONE: the app shares this machine (development only)'}`,
      );
      ctx.seeds = (await this.opts.seedsFor?.(sandbox)) ?? {};
      const pod = await this.opts.pods.acquire(sandbox.id);
      this.pods.set(sandbox.id, pod);
      pod.onBlocked = (attempt) => {
        const vendor = vendorOf(attempt.host);
        log.note(
          `blocked outbound call to ${attempt.host}:${attempt.port}` +
            (vendor ? ` (this code tried to call the real ${vendor}; use the twin's variables instead)` : ''),
        );
        this.onBlockedEgress(sandbox.id, [...pod.blocked.values()]);
      };
      await removeWorkspace(ctx.workspace);
      const workspace = await createWorkspace(ctx.workspace, this.opts.diskBytes);
      if (!workspace.enforced) log.note(`workspace size is not capped here: ${workspace.reason}`);
      if (sandbox.twin_names.length) {
        ctx.earlyTwins = this.startTwins(ctx, sandbox.twin_names);
        ctx.earlyTwins.catch(() => {});
      }
      await runPipeline(ctx, this, timings, DEPLOY_STEPS);
      this.watch(sandbox.id, ctx.app!, ctx.logsHint);
      log.note(`ready in ${timings.total} ms ${JSON.stringify(timings)}`);
      this.opts.logger.info({ sandbox_id: sandbox.id, timings }, 'app ready');
      return {
        app_url: this.opts.urls.appUrl(sandbox.id),
        twins: this.publicEntries(sandbox.id, ctx.twins!),
        env_vars: ctx.envVars!,
        isolation: this.isolationLevel,
      };
    } catch (error) {
      const failure = signal.aborted
        ? new DeployFailure('deploy cancelled')
        : error instanceof DeployFailure
          ? error
          : twinboxFault(error);
      log.note(`failed: ${failure.message}`);
      await this.release(sandbox.id, { closeLog: false });
      throw failure;
    }
  }

  /** Twin entries as callers outside the sandbox see them: base and admin URLs through the router. */
  private publicEntries(sandboxId: string, inside: Record<string, TwinEntry>): Record<string, TwinEntry> {
    const out: Record<string, TwinEntry> = {};
    for (const [name, entry] of Object.entries(inside)) {
      const base = this.opts.urls.twinUrl(sandboxId, name);
      const adminPath = entry.admin_url.slice(entry.base_url.length);
      out[name] = { base_url: base, admin_url: `${base}${adminPath}`, env_vars: entry.env_vars };
    }
    return out;
  }

  // ---- DeployRunner: how the shared steps run here ----

  get source(): SourceFetcher {
    return this.opts.source;
  }

  supportedTwin(name: string): boolean {
    return this.opts.supportedTwin(name);
  }

  startTwins(ctx: DeployContext, names: string[]): Promise<Record<string, TwinEntry>> {
    const pod = this.pods.get(ctx.sandbox.id)!;
    return this.opts.pods.startTwins(pod, names, {
      adminToken: ctx.sandbox.twin_admin_token,
      seeds: ctx.seeds,
      // Pages a twin shows to people (a hosted checkout) must link to where browsers reach it.
      publicUrls: Object.fromEntries(
        names.map((name) => [name, this.opts.urls.twinUrl(ctx.sandbox.id, name)]),
      ),
    });
  }

  async appPort(ctx: DeployContext): Promise<number> {
    // In its own namespace nothing else can hold the port; on the host's network the OS picks one.
    return this.pods.get(ctx.sandbox.id)?.netnsPath ? APP_PORT : freePort();
  }

  /** A command of the sandbox: in its cgroup, its network namespace (when it has one), its workspace. */
  private spec(ctx: DeployContext, command: string, extra: Partial<ExecSpec> = {}): ExecSpec {
    return {
      command,
      sandboxId: ctx.sandbox.id,
      cwd: ctx.workspace,
      netns: this.pods.get(ctx.sandbox.id)?.netnsPath,
      files: this.pods.get(ctx.sandbox.id)?.etcFiles(),
      memoryBytes: this.opts.memoryBytes,
      ...extra,
    };
  }

  private stepOptions(ctx: DeployContext) {
    return {
      timeoutMs: this.opts.buildTimeoutMs,
      signal: ctx.signal,
      onStart: (p: GroupProcess) => this.track(ctx.sandbox.id, p),
    };
  }

  async install(ctx: DeployContext): Promise<void> {
    const pod = this.pods.get(ctx.sandbox.id)!;
    // In its own namespace the install reaches the registry only through the pod's proxy, and only now.
    const proxy = pod.netnsPath ? `http://127.0.0.1:${INSTALL_PROXY_PORT}` : undefined;
    const proxyEnv: Record<string, string> = proxy
      ? { HTTPS_PROXY: proxy, HTTP_PROXY: proxy, npm_config_proxy: proxy, npm_config_https_proxy: proxy }
      : {};
    pod.installing = true;
    try {
      const cached = await this.deps.provide(
        ctx.profile!,
        ctx.workspace,
        (command, cwd, writable, env) =>
          runStep(
            'install',
            this.spec(ctx, command, { cwd, writable }),
            { ...ctx.appEnv!, ...proxyEnv, HOME: cwd, ...env },
            this.opts.isolation,
            ctx.log,
            this.stepOptions(ctx),
          ),
        // One account's installs never feed another account's app (dependency-cache.ts).
        ctx.sandbox.owner_id,
      );
      if (cached) ctx.readOnly.push(cached);
    } finally {
      pod.installing = false;
    }
  }

  run(ctx: DeployContext, label: 'build', command: string): Promise<void> {
    return runStep(
      label,
      this.spec(ctx, command, { readOnly: ctx.readOnly }),
      ctx.appEnv!,
      this.opts.isolation,
      ctx.log,
      this.stepOptions(ctx),
    );
  }

  async startApp(ctx: DeployContext, port: number): Promise<GroupProcess> {
    const id = ctx.sandbox.id;
    const app = spawnGroup(
      this.spec(ctx, ctx.profile!.start, { readOnly: ctx.readOnly }),
      ctx.appEnv!,
      this.opts.isolation,
      ctx.log,
    );
    this.apps.set(id, app);
    await this.pids.record(id, app.pid);
    await this.opts.pods.exposeApp(this.pods.get(id)!, port);
    return app;
  }

  waitHealthy(ctx: DeployContext): Promise<void> {
    const pod = this.pods.get(ctx.sandbox.id)!;
    const exited = ctx.app!.exited.then(
      (exit) => `the app exited with ${exit.code !== null ? `code ${exit.code}` : `signal ${exit.signal}`}`,
    );
    return waitForHttp(
      { socketPath: pod.appSocket(), path: ctx.profile!.healthPath },
      { timeoutMs: this.opts.healthTimeoutMs, exited, signal: ctx.signal },
    ).catch((error: Error) => {
      if (error.message.startsWith('timed out'))
        throw new Error(
          `timed out within ${Math.round(this.opts.healthTimeoutMs / 1000)} s, ${error.message.slice('timed out '.length)}`,
        );
      throw error;
    });
  }

  appOriginForTwins(ctx: DeployContext): string {
    // The pod's twins share the app's network (its namespace, or the host's): the app is on loopback.
    return `http://127.0.0.1:${ctx.port!}`;
  }

  async setWebhookTarget(
    ctx: DeployContext,
    twin: string,
    target: { url: string; secret: string },
  ): Promise<void> {
    const pod = this.pods.get(ctx.sandbox.id)!;
    const admin = TwinAdminClient.overSocket(pod.twinSocket(twin), ctx.sandbox.twin_admin_token);
    await admin.setWebhookTarget({ ...target, events: ['*'] });
  }

  // ---- lifecycle of what a deploy started ----

  /** A ready app that exits on its own fails its sandbox. */
  private watch(sandboxId: string, app: GroupProcess, logsHint: string): void {
    void app.exited.then((exit) => {
      if (this.releasing.has(sandboxId) || this.apps.get(sandboxId) !== app) return;
      const reason = `the app exited with ${exit.code !== null ? `code ${exit.code}` : `signal ${exit.signal}`}`;
      this.logs.get(sandboxId)?.note(reason);
      this.onCrash(sandboxId, `App crashed: ${reason} ${logsHint}`);
    });
  }

  private track(sandboxId: string, step: GroupProcess): void {
    this.steps.set(sandboxId, step);
    void this.pids.record(sandboxId, step.pid);
    void step.exited.then(() => {
      if (this.steps.get(sandboxId) === step) this.steps.delete(sandboxId);
    });
  }

  /** Stops everything of a sandbox; keeps or closes its log. */
  private release(sandboxId: string, opts: { closeLog: boolean }): Promise<void> {
    // Kept until done, so shutdown waits for releases already under way (a crash's teardown, say).
    const previous = this.releasing.get(sandboxId) ?? Promise.resolve();
    const run = previous.then(() => this.releaseNow(sandboxId, opts));
    this.releasing.set(sandboxId, run);
    void run
      .catch(() => {})
      .finally(() => {
        if (this.releasing.get(sandboxId) === run) this.releasing.delete(sandboxId);
      });
    return run;
  }

  private async releaseNow(sandboxId: string, { closeLog }: { closeLog: boolean }): Promise<void> {
    const app = this.apps.get(sandboxId);
    this.apps.delete(sandboxId);
    const step = this.steps.get(sandboxId);
    this.steps.delete(sandboxId);
    await Promise.all([app?.kill(), step?.kill(500)]);
    await this.pids.killRecorded(sandboxId);
    await this.opts.isolation.release(sandboxId);
    const pod = this.pods.get(sandboxId);
    this.pods.delete(sandboxId);
    if (pod) await this.opts.pods.destroy(pod);
    await removeWorkspace(this.workspaceOf(sandboxId));
    if (closeLog) await this.logs.close(sandboxId);
  }

  async teardown(sandbox: SandboxRecord): Promise<void> {
    await this.release(sandbox.id, { closeLog: true });
    this.timings.delete(sandbox.id);
  }

  /** Stops every app (Twinbox shutdown). Their sandboxes are failed on the next start (no resume). */
  async close(): Promise<void> {
    const ids = [...new Set([...this.apps.keys(), ...this.steps.keys(), ...this.pods.keys()])];
    await Promise.all(ids.map((id) => this.release(id, { closeLog: true })));
    await Promise.allSettled([...this.releasing.values()]);
    await this.opts.pods.close();
  }
}

/**
 * A deploy error that is not the sandbox's fault, as the lifecycle logs it: the message and the stack of
 * where it happened, without the error's other fields (an HTTP client's error carries its request).
 */
function twinboxFault(error: unknown): Error {
  if (!(error instanceof Error)) return new Error(String(error));
  const fault = new Error(error.message);
  fault.stack = error.stack;
  return fault;
}

export type { LogSink };
