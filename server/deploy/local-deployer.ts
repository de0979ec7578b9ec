import { copyFile, mkdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Deployer, DeployResult } from '../sandboxes/deployer.ts';
import type { SandboxRecord, TwinEntry } from '../store/records.ts';
import type { StartTwinsOptions } from '../twins/host.ts';
import { DependencyCache } from './dependency-cache.ts';
import type { EndedPages } from './ended-pages.ts';
import { waitForHttp } from './health.ts';
import type { ExecSpec, Isolation } from './isolation.ts';
import { SandboxLogs, type LogSink } from './logs.ts';
import { freePort } from './ports.ts';
import { PidFiles, runStep, spawnGroup, type GroupProcess } from './processes.ts';
import { ProfileError, readProfile, STATIC_SERVER_PATH, type RuntimeProfile } from './profile.ts';
import type { SourceFetcher } from './source.ts';
import { chooseTwinNames, mergeEnv, twinsImpliedByDependencies } from './twin-plan.ts';

/** The part of TwinHost the deployer uses. */
export interface Twins {
  start(sandboxId: string, names: string[], opts: StartTwinsOptions): Promise<Record<string, TwinEntry>>;
  stop(sandboxId: string, opts?: { purge?: boolean }): Promise<void>;
}

export interface LocalDeployerOptions {
  dataDir: string;
  publicHost: string;
  twins: Twins;
  source: SourceFetcher;
  isolation: Isolation;
  logger: Logger;
  /** Is `name` in the twin catalog? (Profile twins are repository text, so they are checked.) */
  supportedTwin: (name: string) => boolean;
  /** Seed documents per twin for a sandbox (its scenario's), if any. */
  seedsFor?: (sandbox: SandboxRecord) => Promise<Record<string, unknown> | undefined>;
  /** Serves the "this sandbox expired / was deleted" page at an ended sandbox's app URL. */
  endedPages?: EndedPages;
  healthTimeoutMs: number;
  buildTimeoutMs: number;
  memoryBytes: number;
  logBytes: number;
}

/** Milliseconds per deploy step, for logs and the benchmark. */
export type StepTimings = Partial<
  Record<'source' | 'twins' | 'profile' | 'install' | 'build' | 'start' | 'total', number>
>;

const PATH = '/usr/local/bin:/usr/bin:/bin';
const STATIC_SERVER_SOURCE = new URL('./static-server.mjs', import.meta.url);

/**
 * The embedded deploy engine: per sandbox, twins, then source, profile, dependencies, build, and the app as
 * its own confined process group, up when it answers HTTP. Every failure tears down what the deploy started
 * and surfaces as an Error whose message is the sandbox's `error` text.
 */
export class LocalDeployer implements Deployer {
  private readonly apps = new Map<string, GroupProcess>();
  /** Steps (install, build) in flight, so teardown can stop them too. */
  private readonly steps = new Map<string, GroupProcess>();
  private readonly tearingDown = new Set<string>();
  readonly logs: SandboxLogs;
  readonly timings = new Map<string, StepTimings>();
  private readonly pids: PidFiles;
  private readonly deps: DependencyCache;
  /** Called when a ready app exits on its own; the composition root points it at the lifecycle. */
  onCrash: (sandboxId: string, error: string) => void = () => {};

  constructor(private readonly opts: LocalDeployerOptions) {
    this.logs = new SandboxLogs(join(opts.dataDir, 'logs'), opts.logBytes);
    this.pids = new PidFiles(join(opts.dataDir, 'run'));
    this.deps = new DependencyCache(
      join(opts.dataDir, 'cache', 'node_modules'),
      join(opts.dataDir, 'cache', 'npm'),
    );
  }

  /** Kills process groups a previous run left behind (Twinbox crashed or was killed). Call before recover(). */
  async killLeftovers(): Promise<string[]> {
    const found = await this.pids.killLeftovers();
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

  async deploy(sandbox: SandboxRecord, signal: AbortSignal): Promise<DeployResult> {
    const log = await this.logs.open(sandbox.id);
    const timings: StepTimings = {};
    this.timings.set(sandbox.id, timings);
    const began = Date.now();
    const timed = async <T>(step: keyof StepTimings, work: () => Promise<T>): Promise<T> => {
      const start = Date.now();
      try {
        return await work();
      } finally {
        timings[step] = Date.now() - start;
        if (signal.aborted) throw new Error('deploy cancelled');
      }
    };
    const logsHint = `(see GET /sandboxes/${sandbox.id}/logs)`;
    const workspace = this.workspaceOf(sandbox.id);
    try {
      log.note(`deploying ${sandbox.repo} ${sandbox.pr_url ?? `branch ${sandbox.branch}`}`);
      const seeds = (await this.opts.seedsFor?.(sandbox)) ?? {};
      const startTwins = (names: string[]) =>
        timed('twins', () =>
          this.opts.twins.start(sandbox.id, names, { adminToken: sandbox.twin_admin_token, seeds }),
        );
      // Twins asked for by name do not depend on the source: start them while it downloads.
      const early = sandbox.twin_names.length ? startTwins(sandbox.twin_names) : undefined;
      early?.catch(() => {});

      await timed('source', async () => {
        const source = await this.opts.source.resolve(sandbox, signal);
        log.note(`source: ${source.describe} at ${source.sha}`);
        await rm(workspace, { recursive: true, force: true });
        await mkdir(workspace, { recursive: true, mode: 0o700 });
        const files = await this.opts.source.fetch(source, workspace, signal);
        log.note(`source: ${files} files`);
      });

      const profile = await timed('profile', async () => {
        try {
          return await readProfile(workspace);
        } catch (error) {
          if (error instanceof ProfileError) throw new Error(`Runtime profile: ${error.message}`);
          throw error;
        }
      });
      log.note(
        `profile (${profile.source}): install=${profile.install ?? '-'} build=${profile.build ?? '-'} start=${profile.start}`,
      );
      if (profile.staticSite) {
        await mkdir(join(workspace, '.twinbox'), { recursive: true });
        await copyFile(STATIC_SERVER_SOURCE, join(workspace, STATIC_SERVER_PATH));
      }

      const twins = await (early ??
        startTwins(
          chooseTwinNames(
            [],
            profile.twins,
            twinsImpliedByDependencies(profile.dependencies),
            this.opts.supportedTwin,
          ),
        ));
      const envVars = mergeEnv(profile.env, twins, sandbox.env);
      const port = await freePort();
      const appEnv = this.appEnvironment(workspace, envVars, profile, port);

      const spec = (command: string, extra: Partial<ExecSpec> = {}): ExecSpec => ({
        command,
        cwd: workspace,
        memoryBytes: this.opts.memoryBytes,
        ...extra,
      });
      const stepOpts = {
        timeoutMs: this.opts.buildTimeoutMs,
        signal,
        onStart: (p: GroupProcess) => this.track(sandbox.id, p),
      };
      const readOnly: string[] = [];
      if (profile.install) {
        await timed('install', async () => {
          const cached = await this.deps
            .provide(profile, workspace, (command, cwd, writable) =>
              runStep(
                'install',
                spec(command, { cwd, writable }),
                { ...appEnv, HOME: cwd, npm_config_cache: this.deps.npmCacheDir },
                this.opts.isolation,
                log,
                stepOpts,
              ),
            )
            .catch((error: Error) => {
              throw new Error(`Install failed: ${error.message} ${logsHint}`);
            });
          if (cached) readOnly.push(cached);
        });
      }
      if (profile.build) {
        await timed('build', () =>
          runStep(
            'build',
            spec(profile.build!, { readOnly }),
            appEnv,
            this.opts.isolation,
            log,
            stepOpts,
          ).catch((error: Error) => {
            throw new Error(`Build failed: ${error.message} ${logsHint}`);
          }),
        );
      }

      await timed('start', async () => {
        log.note(
          `start: ${profile.start} (${profile.portVariable}=${port}, isolation: ${this.opts.isolation.name})`,
        );
        const app = spawnGroup(spec(profile.start, { readOnly }), appEnv, this.opts.isolation, log);
        this.apps.set(sandbox.id, app);
        await this.pids.record(sandbox.id, app.pid);
        const exited = app.exited.then(
          (exit) =>
            `the app exited with ${exit.code !== null ? `code ${exit.code}` : `signal ${exit.signal}`}`,
        );
        try {
          await waitForHttp(`http://127.0.0.1:${port}${profile.healthPath}`, {
            timeoutMs: this.opts.healthTimeoutMs,
            exited,
            signal,
          });
        } catch (error) {
          const reason = (error as Error).message;
          if (reason.startsWith('the app exited')) {
            throw new Error(`App crashed on start: ${reason} before answering HTTP ${logsHint}`);
          }
          if (reason.startsWith('timed out'))
            throw new Error(
              `Health check failed: the app did not answer GET ${profile.healthPath} on ${profile.portVariable}=${port} ` +
                `within ${Math.round(this.opts.healthTimeoutMs / 1000)} s, ${reason.slice('timed out '.length)} ${logsHint}`,
            );
          throw error;
        }
        void exited.then((reason) => {
          if (this.tearingDown.has(sandbox.id) || this.apps.get(sandbox.id) !== app) return;
          log.note(reason);
          this.onCrash(sandbox.id, `App crashed: ${reason} ${logsHint}`);
        });
      });
      timings.total = Date.now() - began;
      log.note(`ready in ${timings.total} ms ${JSON.stringify(timings)}`);
      this.opts.logger.info({ sandbox_id: sandbox.id, timings }, 'app ready');
      return { app_url: `http://${this.opts.publicHost}:${port}`, twins, env_vars: envVars };
    } catch (error) {
      const message = signal.aborted ? 'deploy cancelled' : (error as Error).message;
      log.note(`failed: ${message}`);
      await this.release(sandbox.id, { closeLog: false });
      throw new Error(message);
    }
  }

  /** Only the app's own variables: nothing of Twinbox's environment leaks into it. */
  private appEnvironment(
    workspace: string,
    envVars: Record<string, string>,
    profile: RuntimeProfile,
    port: number,
  ): Record<string, string> {
    return {
      PATH: `${join(workspace, 'node_modules', '.bin')}:${PATH}`,
      HOME: workspace,
      TMPDIR: '/tmp',
      LANG: 'C.UTF-8',
      NODE_ENV: 'production',
      ...envVars,
      // Last, so the app listens where the health check and app_url point, whatever the caller sent.
      [profile.portVariable]: String(port),
      ...(profile.portVariable === 'PORT' ? {} : { PORT: String(port) }),
    };
  }

  private track(sandboxId: string, step: GroupProcess): void {
    this.steps.set(sandboxId, step);
    void this.pids.record(sandboxId, step.pid);
    void step.exited.then(() => {
      if (this.steps.get(sandboxId) === step) this.steps.delete(sandboxId);
    });
  }

  /** Stops everything of a sandbox; keeps or closes its log. */
  private async release(sandboxId: string, { closeLog }: { closeLog: boolean }): Promise<void> {
    this.tearingDown.add(sandboxId);
    try {
      const app = this.apps.get(sandboxId);
      this.apps.delete(sandboxId);
      const step = this.steps.get(sandboxId);
      this.steps.delete(sandboxId);
      await Promise.all([app?.kill(), step?.kill(500)]);
      await this.pids.killRecorded(sandboxId);
      await this.opts.twins.stop(sandboxId, { purge: true });
      await rm(this.workspaceOf(sandboxId), { recursive: true, force: true, maxRetries: 3 });
      if (closeLog) await this.logs.close(sandboxId);
    } finally {
      this.tearingDown.delete(sandboxId);
    }
  }

  async teardown(sandbox: SandboxRecord): Promise<void> {
    await this.release(sandbox.id, { closeLog: true });
    this.timings.delete(sandbox.id);
    await this.opts.endedPages?.open(sandbox);
  }

  /** Stops every app (Twinbox shutdown). Their sandboxes are failed on the next start (no resume). */
  async close(): Promise<void> {
    const ids = [...new Set([...this.apps.keys(), ...this.steps.keys()])];
    await Promise.all(ids.map((id) => this.release(id, { closeLog: true })));
    await this.opts.endedPages?.close();
  }
}

export type { LogSink };
