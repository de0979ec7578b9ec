import { existsSync } from 'node:fs';
import { DeployFailure } from '../sandboxes/deployer.ts';
import type { SandboxRecord, TwinEntry } from '../store/records.ts';
import {
  APP_PORT,
  APP_PORT_BESIDE_PUBLIC,
  INSTALL_PROXY_PORT,
  TRUST_PATHS,
  trustEnv,
} from '../pod/layout.ts';
import { TwinAdminClient } from '../twins/kit/admin-client.ts';
import type { ExecSpec, Isolation } from './confinement/isolation.ts';
import { PidFiles, runStep, spawnGroup, type Exit, type GroupProcess } from './confinement/processes.ts';
import type { Pod, PodManager } from './pods/pods.ts';
import { freePort } from './ports.ts';
import type { DependencyCache } from './steps/dependency-cache.ts';
import { NO_PORT_SETTLE_MS, waitForHttp, waitStaysUp } from './steps/health.ts';
import { repositoryRegistries } from './steps/npm-registries.ts';
import { appDirectory, type DeployContext, type DeployRunner } from './steps/pipeline.ts';
import type { SourceFetcher } from './steps/source.ts';

/** Public URLs of a sandbox's app and twins (the router serves them). */
export interface SandboxUrls {
  appUrl(sandboxId: string): string;
  twinUrl(sandboxId: string, twin: string): string;
}

/** What the runner on this machine needs (LocalDeployerOptions holds it and more). */
export interface LocalRunnerOptions {
  pods: PodManager;
  urls: SandboxUrls;
  source: SourceFetcher;
  isolation: Isolation;
  /** Is `name` in the twin catalog? (Profile twins are repository text, so they are checked.) */
  supportedTwin: (name: string) => boolean;
  healthTimeoutMs: number;
  buildTimeoutMs: number;
  memoryBytes: number;
  /**
   * The machine's npm `registry` (npm-registries.ts): an install uses it when the repository's `.npmrc`
   * names none, since the install's npm does not read Twinbox's user config.
   */
  npmRegistry?: string;
}

/**
 * What runs on this machine, by sandbox: its pod, its app and the step (install, build) in flight. The
 * runner adds to it as a deploy starts things; LocalDeployer takes from it as it stops them.
 */
export class RunningSandboxes {
  readonly pods = new Map<string, Pod>();
  readonly apps = new Map<string, GroupProcess>();
  /** Steps (install, build) in flight, so teardown can stop them too. */
  readonly steps = new Map<string, GroupProcess>();
  /** Sandboxes whose app has no HTTP port (`port: false`): the router says so at their app_url. */
  readonly noHttpPort = new Set<string>();

  constructor(readonly pids: PidFiles) {}

  track(sandboxId: string, step: GroupProcess): void {
    this.steps.set(sandboxId, step);
    void this.pids.record(sandboxId, step.pid);
    void step.exited.then(() => {
      if (this.steps.get(sandboxId) === step) this.steps.delete(sandboxId);
    });
  }
}

/**
 * The DeployRunner of this machine: how the shared steps (pipeline.ts) run here. Commands run confined in
 * the sandbox's cgroup, network namespace (when it has one) and workspace; the app is reached through the
 * sandbox's pod.
 */
export class LocalRunner implements DeployRunner {
  constructor(
    private readonly opts: LocalRunnerOptions,
    private readonly running: RunningSandboxes,
    private readonly deps: DependencyCache,
  ) {}

  get source(): SourceFetcher {
    return this.opts.source;
  }

  supportedTwin(name: string): boolean {
    return this.opts.supportedTwin(name);
  }

  startTwins(ctx: DeployContext, names: string[]): Promise<Record<string, TwinEntry>> {
    const pod = this.running.pods.get(ctx.sandbox.id)!;
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
    // In its own namespace nothing else can hold the port (a fixed `port:` too), but for the pod's front
    // door on the public URLs' port; on the host's network the OS picks one, and a fixed port is the
    // app's risk (docs/profiles.md).
    const inNamespace = Boolean(this.running.pods.get(ctx.sandbox.id)?.netnsPath);
    const publicPort = this.publicPort();
    if (ctx.profile?.port) {
      if (inNamespace && ctx.profile.port === publicPort)
        throw new DeployFailure(
          `Runtime profile: twinbox.yml: port ${publicPort} is where this Twinbox serves its public URLs, and inside the sandbox its twins answer there; choose another port for the app`,
        );
      return ctx.profile.port;
    }
    if (!inNamespace) return freePort();
    return this.namespacePort();
  }

  /** The app's port in its own namespace unless its profile names one. */
  private namespacePort(): number {
    return this.publicPort() === APP_PORT ? APP_PORT_BESIDE_PUBLIC : APP_PORT;
  }

  /**
   * Once the pod is taken, before the profile is read: the pod's pipe to the port the app gets unless its
   * profile names one (in its own namespace; on the host's network the port is picked later). See
   * PodManager.exposeAppEarly.
   */
  openAppPortEarly(ctx: DeployContext): void {
    const pod = this.running.pods.get(ctx.sandbox.id);
    if (pod?.netnsPath) this.opts.pods.exposeAppEarly(pod, this.namespacePort());
  }

  /** The port of the public URLs (the router's), which a sandbox's pod answers on inside too. */
  private publicPort(): number {
    const url = new URL(this.opts.urls.twinUrl('x', 'x'));
    return Number(url.port) || (url.protocol === 'https:' ? 443 : 80);
  }

  /**
   * The environment of the sandbox's commands: the app's, with the variables that make them trust the
   * sandbox's CA (server/pod/layout.ts trustEnv) when its pod guards a namespace of its own.
   */
  private env(ctx: DeployContext): Record<string, string> {
    const pod = this.running.pods.get(ctx.sandbox.id);
    return pod?.netnsPath ? trustEnv(ctx.appEnv!, { systemBundle: this.systemBundle }) : ctx.appEnv!;
  }

  /** Whether this host has the system's CA bundle, which the pod appends the sandbox's CA to. */
  private readonly systemBundle = existsSync(TRUST_PATHS.system);

  /** A command of the sandbox: in its cgroup, its network namespace (when it has one), its workspace. */
  private spec(ctx: DeployContext, command: string, extra: Partial<ExecSpec> = {}): ExecSpec {
    return {
      command,
      sandboxId: ctx.sandbox.id,
      cwd: ctx.workspace,
      chdir: appDirectory(ctx),
      netns: this.running.pods.get(ctx.sandbox.id)?.netnsPath,
      files: this.running.pods.get(ctx.sandbox.id)?.etcFiles(),
      memoryBytes: this.opts.memoryBytes,
      ...extra,
    };
  }

  private stepOptions(ctx: DeployContext) {
    return {
      timeoutMs: this.opts.buildTimeoutMs,
      signal: ctx.signal,
      onStart: (p: GroupProcess) => this.running.track(ctx.sandbox.id, p),
    };
  }

  async install(ctx: DeployContext): Promise<void> {
    const pod = this.running.pods.get(ctx.sandbox.id)!;
    // In its own namespace the install reaches the registry only through the pod's proxy, and only now.
    const proxy = pod.netnsPath ? `http://127.0.0.1:${INSTALL_PROXY_PORT}` : undefined;
    const proxyEnv: Record<string, string> = proxy
      ? { HTTPS_PROXY: proxy, HTTP_PROXY: proxy, npm_config_proxy: proxy, npm_config_https_proxy: proxy }
      : {};
    // The registries the repository's own .npmrc names may be reached too, at public addresses only.
    const named = await repositoryRegistries(appDirectory(ctx));
    if (!named.registry && this.opts.npmRegistry) proxyEnv.npm_config_registry = this.opts.npmRegistry;
    if (proxy && named.hosts.length)
      ctx.log.note(
        `install: the repository's .npmrc names ${named.hosts.map((hp) => `${hp.host}:${hp.port}`).join(', ')}; reachable during install at public addresses`,
      );
    pod.repositoryRegistries = named.hosts;
    pod.installing = true;
    try {
      const cached = await this.deps.provide(
        ctx.profile!,
        appDirectory(ctx),
        (command, cwd, writable, env) =>
          runStep(
            'install',
            // In the app's folder, the whole workspace stays bound (a `root:` app may use its siblings).
            this.spec(ctx, command, {
              cwd: cwd === appDirectory(ctx) ? ctx.workspace : cwd,
              chdir: cwd,
              writable,
            }),
            { ...this.env(ctx), ...proxyEnv, HOME: cwd, ...env },
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
      pod.repositoryRegistries = [];
    }
  }

  run(ctx: DeployContext, label: 'build', command: string): Promise<void> {
    return runStep(
      label,
      this.spec(ctx, command, { readOnly: ctx.readOnly }),
      this.env(ctx),
      this.opts.isolation,
      ctx.log,
      this.stepOptions(ctx),
    );
  }

  openAppPort(ctx: DeployContext, port: number): Promise<void> {
    // The pod's pipe from its app socket to the port: it only forwards connections, and none come before
    // the health check.
    return this.opts.pods.exposeApp(this.running.pods.get(ctx.sandbox.id)!, port);
  }

  async startApp(ctx: DeployContext, port: number | undefined): Promise<GroupProcess> {
    const id = ctx.sandbox.id;
    const exposed = port === undefined ? undefined : (ctx.appPortOpened ?? this.openAppPort(ctx, port));
    exposed?.catch(() => {});
    const app = spawnGroup(
      this.spec(ctx, ctx.profile!.start, { readOnly: ctx.readOnly }),
      this.env(ctx),
      this.opts.isolation,
      ctx.log,
    );
    this.running.apps.set(id, app);
    await this.running.pids.record(id, app.pid);
    if (port === undefined) this.running.noHttpPort.add(id);
    await exposed;
    return app;
  }

  waitHealthy(ctx: DeployContext, port: number | undefined): Promise<void> {
    const exited = ctx.app!.exited.then(appExit);
    if (port === undefined) return waitStaysUp({ settleMs: NO_PORT_SETTLE_MS, exited, signal: ctx.signal });
    const pod = this.running.pods.get(ctx.sandbox.id)!;
    // The first HTTP probe once the port takes connections (asked of the pod); should the pod not say,
    // the probes start at once as before.
    const done = new AbortController();
    const listening = this.opts.pods.appListening(pod, this.opts.healthTimeoutMs, done.signal);
    return waitForHttp(
      { socketPath: pod.appSocket(), path: ctx.profile!.healthPath },
      { timeoutMs: this.opts.healthTimeoutMs, exited, signal: ctx.signal, listening },
    ).finally(() => done.abort());
  }

  appUrl(ctx: DeployContext): string {
    return this.opts.urls.appUrl(ctx.sandbox.id);
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
    const pod = this.running.pods.get(ctx.sandbox.id)!;
    const admin = TwinAdminClient.overSocket(pod.twinSocket(twin), ctx.sandbox.twin_admin_token);
    await admin.setWebhookTarget({ ...target, events: ['*'] });
  }
}

/** How an app's process group ended, as its sandbox's log and error say it. */
export function appExit(exit: Exit): string {
  return `the app exited with ${exit.code !== null ? `code ${exit.code}` : `signal ${exit.signal}`}`;
}
