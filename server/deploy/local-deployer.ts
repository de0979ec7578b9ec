import { existsSync } from 'node:fs';
import { cp, lstat, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from 'pino';
import { DeployFailure, type Deployer, type DeployResult } from '../sandboxes/deployer.ts';
import { blockedCallHint, type BlockedEgress } from '../sandboxes/egress.ts';
import type { SandboxRecord, TwinEntry } from '../store/records.ts';
import { PodStartError } from '../pod/start-failure.ts';
import { SandboxLogs, type LogSink } from './confinement/logs.ts';
import { PidFiles, type GroupProcess } from './confinement/processes.ts';
import { appExit, LocalRunner, RunningSandboxes, type LocalRunnerOptions } from './local-runner.ts';
import type { Pod } from './pods/pods.ts';
import { ResumeRecords } from './pods/resume-record.ts';
import { DependencyCache } from './steps/dependency-cache.ts';
import {
  DEPLOY_STEPS,
  RESUME_STEPS,
  runPipeline,
  TWIN_SET_STEPS,
  settleAppEnvironment,
  type DeployContext,
  type StepObserver,
  type StepTimings,
} from './steps/pipeline.ts';
import {
  createWorkspace,
  isMountPoint,
  removeWorkspace,
  removeWorkspaceFolder,
  SpareImages,
  sweepWorkspaces,
  workspaceIn,
} from './steps/workspace.ts';

export type { StepTimings } from './steps/pipeline.ts';
export type { SandboxUrls } from './local-runner.ts';

export interface LocalDeployerOptions extends LocalRunnerOptions {
  dataDir: string;
  logger: Logger;
  /** Seed documents per twin for a sandbox (its scenario's), if any. */
  seedsFor?: (sandbox: SandboxRecord) => Promise<Record<string, unknown> | undefined>;
  /** Size cap of a sandbox's workspace. */
  diskBytes: number;
  logBytes: number;
  logFileBytes: number;
  /** Told when a ready app exits on its own (the lifecycle fails its sandbox). */
  onCrash?: (sandboxId: string, error: string) => void;
  /** Told when a sandbox's code tried to reach something it may not (docs/security.md). */
  onBlockedEgress?: (sandboxId: string, blocked: BlockedEgress[]) => void;
  /** Told as each deploy step starts and ends (the timeline records it). */
  onStep?: (sandboxId: string, ...step: Parameters<StepObserver>) => void;
  /**
   * Told as a resume starts, before any of it runs: the router's directory then answers the sandbox's
   * URLs with 503 until the lifecycle reports it back (or failed), never "No such sandbox".
   */
  onResuming?: (sandbox: SandboxRecord) => void;
}

/**
 * SIGTERM to SIGKILL for an app being released. Short: nobody can reach a sandbox being ended, and an
 * app that ignores SIGTERM must not hold its DELETE (or a shutdown) for long.
 */
const APP_GRACE_MS = 1000;

/**
 * The embedded deploy engine: the shared deploy steps (pipeline.ts) run with a pod per sandbox (its twins
 * and, where the host allows, its own network namespace) and the app as a confined process group in that
 * namespace. Every failure tears down what the deploy started and surfaces as an Error whose message is
 * the sandbox's `error` text.
 */
export class LocalDeployer implements Deployer {
  /** Releases under way, by sandbox: a crashed app's exit is not a crash while its sandbox is released. */
  private readonly releasing = new Map<string, Promise<void>>();
  /** Sandboxes whose app is up (deployed or resumed): a shutdown keeps them to resume at the next start. */
  private readonly deployed = new Set<string>();
  /** Resumes under way, so a teardown or shutdown can stop them (and a shutdown wait for them). */
  private readonly resuming = new Map<string, { controller: AbortController; done: Promise<void> }>();
  private readonly resumeRecords: ResumeRecords;
  readonly logs: SandboxLogs;
  readonly timings = new Map<string, StepTimings>();
  private readonly running: RunningSandboxes;
  private readonly runner: LocalRunner;
  /** Workspace images formatted ahead of demand (workspace.ts). */
  private readonly spareImages: SpareImages;

  constructor(private readonly opts: LocalDeployerOptions) {
    this.logs = new SandboxLogs(join(opts.dataDir, 'logs'), opts.logBytes, opts.logFileBytes);
    this.resumeRecords = new ResumeRecords(join(opts.dataDir, 'resume'));
    this.running = new RunningSandboxes(new PidFiles(join(opts.dataDir, 'run')));
    const deps = new DependencyCache(join(opts.dataDir, 'cache', 'node_modules'), {
      stagingBytes: opts.diskBytes,
    });
    this.runner = new LocalRunner(opts, this.running, deps);
    this.spareImages = new SpareImages(join(opts.dataDir, 'workspaces.spare'), opts.diskBytes);
  }

  /** `none` when apps share the host's network and file system (development without isolation). */
  get isolationLevel(): 'full' | 'none' {
    const caps = this.opts.isolation.capabilities;
    return caps.processes && caps.filesystem && caps.cgroups !== 'none' && this.opts.pods.network === 'own'
      ? 'full'
      : 'none';
  }

  /**
   * Kills what a previous run left behind (Twinbox stopped, crashed or was killed): every process (apps,
   * steps, pods: a resumed app is started afresh, never adopted, so there are never two copies) and every
   * namespace. The workspaces, twin state and resume records of the sandboxes in `resume` (the `ready`
   * ones recover() will resume) stay; those of any other sandbox go. Call before recover().
   */
  async killLeftovers(resume: ReadonlySet<string> = new Set()): Promise<string[]> {
    const found = await this.running.pids.killLeftovers();
    await this.opts.isolation.killLeftovers();
    const keepSlots = new Set<string>();
    for (const record of await this.resumeRecords.all()) {
      if (resume.has(record.sandbox_id)) keepSlots.add(record.pod_slot);
      else await this.resumeRecords.remove(record.sandbox_id);
    }
    await this.opts.pods.sweep(keepSlots);
    const keepNames = new Set([...resume].map((id) => encodeURIComponent(id)));
    await sweepWorkspaces(join(this.opts.dataDir, 'workspaces'), keepNames);
    await this.spareImages.sweep();
    this.spareImages.refill();
    for (const name of await readdir(join(this.opts.dataDir, 'suspended')).catch(() => []))
      if (!keepNames.has(name))
        await rm(join(this.opts.dataDir, 'suspended', name), { recursive: true, force: true });
    if (found.length)
      this.opts.logger.warn({ sandboxes: found }, 'killed app processes left by a previous run');
    return found;
  }

  /** The sandbox's workspace: the app's files (workspaceIn: a directory in the sandbox's own folder). */
  workspaceOf(sandboxId: string): string {
    return workspaceIn(this.workspaceFolderOf(sandboxId));
  }

  private workspaceFolderOf(sandboxId: string): string {
    return join(this.opts.dataDir, 'workspaces', encodeURIComponent(sandboxId));
  }

  /** Where a shutdown copies a tmpfs workspace, which must not stay mounted while Twinbox is down. */
  private suspendedOf(sandboxId: string): string {
    return join(this.opts.dataDir, 'suspended', encodeURIComponent(sandboxId));
  }

  /** Is this sandbox being resumed after a restart (its app not back yet)? */
  isResuming(sandboxId: string): boolean {
    return this.resuming.has(sandboxId);
  }

  /** PID (= process group) of a sandbox's running app, for tests and diagnostics. */
  appPid(sandboxId: string): number | undefined {
    return this.running.apps.get(sandboxId)?.pid;
  }

  /** Does this sandbox's app run with no HTTP port (`port: false`)? Its app_url then says so. */
  hasNoHttpPort(sandboxId: string): boolean {
    return this.running.noHttpPort.has(sandboxId);
  }

  /** The pod of a live sandbox: the router reaches its app and twins through the pod's sockets. */
  podOf(sandboxId: string): Pod | undefined {
    return this.running.pods.get(sandboxId);
  }

  async deploy(sandbox: SandboxRecord, signal: AbortSignal): Promise<DeployResult> {
    if (sandbox.kind === 'twins') return this.deployTwinSet(sandbox, signal);
    const { ctx, timings } = await this.contextFor(sandbox, signal);
    const { log } = ctx;
    let recorded: Promise<void> | undefined;
    let detached: Promise<void> | undefined;
    try {
      log.note(`deploying ${sandbox.repo} ${sandbox.pr_url ?? `branch ${sandbox.branch}`}`);
      log.note(
        `isolation: ${this.isolationLevel === 'full' ? 'full (own network namespace, bubblewrap, limits)' : 'NONE: the app shares this machine (development only)'}`,
      );
      ctx.seeds = (await this.opts.seedsFor?.(sandbox)) ?? {};
      // The workspace (a disk image made and mounted; with a spare image, a rename and a mount) while
      // the pod is taken and its twins start: none needs the others. Whatever was at its path goes first.
      // Its loop device's detach runs on beside the deploy (createWorkspace's deferDetach), awaited at the end.
      const workspaceMade = createWorkspace(ctx.workspace, this.opts.diskBytes, {
        spares: this.spareImages,
        deferDetach: true,
      });
      workspaceMade.catch(() => {});
      detached = workspaceMade.then(
        (made) => made.detached,
        () => {},
      );
      // The source's commit is asked for meanwhile too (a call to GitHub), then its download begins; the
      // source step waits for them and unpacks it into the workspace.
      ctx.earlySource = this.runner.source.resolve(sandbox, signal);
      ctx.earlySource.catch(() => {});
      ctx.earlyDownload = ctx.earlySource.then((source) => this.runner.source.download(source, signal));
      ctx.earlyDownload.catch(() => {});
      const pod = await this.acquirePod(sandbox.id, ctx).catch(async (error: unknown) => {
        // Settled before the failure releases the sandbox, so no mount is made after its cleanup.
        await workspaceMade.catch(() => {});
        throw error;
      });
      if (sandbox.twin_names.length) {
        ctx.earlyTwins = this.runner.startTwins(ctx, sandbox.twin_names);
        ctx.earlyTwins.catch(() => {});
      }
      this.runner.openAppPortEarly(ctx);
      const workspace = await workspaceMade;
      if (!workspace.enforced) log.note(`workspace size is not capped here: ${workspace.reason}`);
      else if (workspace.reason) log.note(`workspace: ${workspace.reason}`);
      const writeRecord = () =>
        this.resumeRecords.write({
          format: 1,
          sandbox_id: sandbox.id,
          pod_slot: pod.slot,
          profile: ctx.profile!,
          twin_urls: Object.fromEntries(Object.entries(ctx.twins!).map(([name, e]) => [name, e.base_url])),
          read_only: ctx.readOnly,
          deployed_at: new Date().toISOString(),
        });
      // What a restart needs is known once the app starts (profile, twins, cached paths): the record is
      // written (and fsynced) while the app starts, not after its health check. Awaited before the deploy
      // ends either way, so it is durable before `ready`, and a failure's release removes it after it.
      const observe = ctx.onStep;
      ctx.onStep = (...step) => {
        observe?.(...step);
        if (step[0] !== 'start' || step[1] !== 'started') return;
        recorded = writeRecord();
        recorded.catch(() => {}); // awaited below; not unhandled meanwhile
      };
      await runPipeline(ctx, this.runner, timings, DEPLOY_STEPS);
      await Promise.all([recorded ?? writeRecord(), detached]);
      this.deployed.add(sandbox.id);
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
      // Not unpacked (the deploy failed before its source step, or in it): its connection goes.
      ctx.earlyDownload?.then(
        (download) => download.discard(),
        () => {},
      );
      await Promise.all([recorded?.catch(() => {}), detached]);
      throw await this.failed(ctx, error, 'deploy');
    }
  }

  /**
   * The lifecycle has recorded a deploy's outcome: the spare pool is refilled now. Not while the deploy
   * runs, nor as soon as it returns: starting the next spare pod (a fork of this process and a few hundred
   * ms of CPU) and formatting the next spare image would compete with the app's start, then with the
   * `ready` write (its renames and fsyncs waited 30-55 ms behind them on a busy core). The spare pool is
   * a head start for the next deploy, not this one.
   */
  settled(): void {
    this.refillSpares();
  }

  /** Once a deploy or resume is done (see settled). */
  private refillSpares(): void {
    this.opts.pods.warm();
    this.spareImages.refill();
  }

  /**
   * A twin set (twins alone): a pod and its twins, nothing else, kept for a restart as a sandbox's twins
   * are. Its variables are for a caller outside the pod, so they name the twins' public URLs.
   */
  private async deployTwinSet(sandbox: SandboxRecord, signal: AbortSignal): Promise<DeployResult> {
    const { ctx, timings } = await this.contextFor(sandbox, signal);
    const { log } = ctx;
    try {
      log.note(`starting twins alone (a twin set): ${sandbox.twin_names.join(', ')}`);
      ctx.seeds = (await this.opts.seedsFor?.(sandbox)) ?? {};
      const pod = await this.acquirePod(sandbox.id, ctx);
      await runPipeline(ctx, this.runner, timings, TWIN_SET_STEPS);
      await this.resumeRecords.write({
        format: 1,
        sandbox_id: sandbox.id,
        pod_slot: pod.slot,
        twin_urls: Object.fromEntries(Object.entries(ctx.twins!).map(([name, e]) => [name, e.base_url])),
        read_only: [],
        deployed_at: new Date().toISOString(),
      });
      this.deployed.add(sandbox.id);
      log.note(`ready in ${timings.total} ms ${JSON.stringify(timings)}`);
      this.opts.logger.info({ sandbox_id: sandbox.id, timings }, 'twin set ready');
      return {
        app_url: null,
        twins: this.publicEntries(sandbox.id, ctx.twins!),
        env_vars: ctx.envVars!,
        isolation: this.isolationLevel,
      };
    } catch (error) {
      throw await this.failed(ctx, error, 'deploy');
    }
  }

  /**
   * Brings a `ready` sandbox back after a Twinbox restart (graceful or kill -9): a pod again, its twins
   * from their saved state (not reseeded), the app started from its kept workspace with the same
   * variables, webhooks pointed at it, health waited (RESUME_STEPS). Its URLs are by sandbox id, so they
   * do not change. Rejects with the reason (workspace gone, app does not come up...), releasing all.
   */
  resume(sandbox: SandboxRecord): Promise<void> {
    this.opts.onResuming?.(sandbox);
    const controller = new AbortController();
    const done = this.resumeNow(sandbox, controller);
    this.resuming.set(sandbox.id, { controller, done: done.catch(() => {}) });
    return done.finally(() => this.resuming.delete(sandbox.id));
  }

  private async resumeNow(sandbox: SandboxRecord, controller: AbortController): Promise<void> {
    const { ctx, timings } = await this.contextFor(sandbox, controller.signal);
    const { log } = ctx;
    const began = Date.now();
    try {
      log.note('Twinbox restarted: resuming this sandbox from its kept workspace and twin state');
      const record = await this.resumeRecords.read(sandbox.id);
      if (!record)
        throw new DeployFailure(
          'what its deploy kept for a restart is gone (deployed by an older Twinbox, or the data dir was cleaned)',
        );
      const twinSet = sandbox.kind === 'twins';
      if (!twinSet) await this.reopenWorkspace(sandbox.id);
      for (const dir of record.read_only)
        if (!existsSync(dir)) throw new DeployFailure(`its cached dependencies are gone (${dir})`);
      const pod = await this.acquirePod(sandbox.id, ctx);
      const stateFound = await this.opts.pods.adoptState(pod, record.pod_slot, sandbox.id);
      // From here the state is in the new pod: a shutdown during the resume keeps it there.
      await this.resumeRecords.write({ ...record, pod_slot: pod.slot });
      const expected = Object.entries(record.twin_urls);
      if (expected.length && !stateFound) throw new DeployFailure("its twins' saved state is gone");
      const twins = expected.length ? await this.opts.pods.restoreTwins(pod, sandbox.id) : {};
      for (const [name, url] of expected) {
        const entry = twins[name];
        if (!entry) throw new DeployFailure(`its ${name} twin could not be started from its saved state`);
        if (entry.base_url !== url)
          throw new DeployFailure(
            `its ${name} twin came back at ${entry.base_url}, not at ${url} where the app's variables point`,
          );
      }
      if (twinSet) {
        this.deployed.add(sandbox.id);
        log.note(`twins resumed after a Twinbox restart in ${Date.now() - began} ms: same URLs, same state`);
        this.opts.logger.info({ sandbox_id: sandbox.id }, 'twin set resumed after a restart');
        return;
      }
      if (!record.profile) throw new DeployFailure('what its deploy kept for a restart names no app');
      ctx.twins = twins;
      ctx.profile = record.profile;
      // The variables its deploy gave the app, as they were: the twins came back at the same URLs.
      ctx.envVars = sandbox.env_vars;
      ctx.readOnly = [...record.read_only];
      await settleAppEnvironment(ctx, this.runner);
      log.note(`twins restored from their saved state: ${Object.keys(twins).join(', ') || 'none'}`);
      await runPipeline(ctx, this.runner, timings, RESUME_STEPS);
      this.deployed.add(sandbox.id);
      this.watch(sandbox.id, ctx.app!, ctx.logsHint);
      log.note(`resumed after a Twinbox restart in ${Date.now() - began} ms: same URLs, same variables`);
      this.opts.logger.info({ sandbox_id: sandbox.id, timings }, 'sandbox resumed after a restart');
    } catch (error) {
      throw await this.failed(ctx, error, 'resume');
    } finally {
      this.refillSpares();
    }
  }

  /** A deploy's or a resume's context before its first step, its log open and its timings kept. */
  private async contextFor(
    sandbox: SandboxRecord,
    signal: AbortSignal,
  ): Promise<{ ctx: DeployContext; timings: StepTimings }> {
    const log = await this.logs.open(sandbox.id);
    const timings: StepTimings = {};
    this.timings.set(sandbox.id, timings);
    const ctx: DeployContext = {
      sandbox,
      signal,
      log,
      workspace: this.workspaceOf(sandbox.id),
      logsHint: `(see GET /${sandbox.kind === 'twins' ? 'twin-sets' : 'sandboxes'}/${sandbox.id}/logs)`,
      seeds: {},
      readOnly: [],
      onStep: (...step) => this.opts.onStep?.(sandbox.id, ...step),
    };
    return { ctx, timings };
  }

  /**
   * The one error path of a deploy and a resume: the failure as the sandbox's `error` (cut off, the
   * sandbox's own fault, or Twinbox's), told in its log, and what it started released. A resume cut off
   * (a shutdown) keeps what it has for the next start; any other failure releases it all, and a teardown
   * that cut it off releases it all itself.
   */
  private async failed(ctx: DeployContext, error: unknown, what: 'deploy' | 'resume'): Promise<Error> {
    const cancelled = ctx.signal.aborted;
    const failure = cancelled
      ? new DeployFailure(`${what} cancelled`)
      : error instanceof DeployFailure
        ? error
        : twinboxFault(error);
    ctx.log.note(`${what === 'resume' ? 'resume failed' : 'failed'}: ${failure.message}`);
    const keep = what === 'resume' && cancelled;
    await this.release(ctx.sandbox.id, { closeLog: keep, suspend: keep });
    return failure;
  }

  /**
   * The sandbox's kept workspace, ready to run in: still there after a kill -9 (a tmpfs stays mounted),
   * or copied back from where a shutdown put it. Empty or missing (the machine rebooted): gone.
   */
  private async reopenWorkspace(sandboxId: string): Promise<void> {
    const workspace = this.workspaceOf(sandboxId);
    const suspended = this.suspendedOf(sandboxId);
    if ((await readdir(workspace).catch(() => [])).length) return;
    if (!(await readdir(suspended).catch(() => [])).length)
      throw new DeployFailure(
        'its workspace is gone (the machine restarted, or the data dir was cleaned): deploy it again',
      );
    const made = await createWorkspace(workspace, this.opts.diskBytes, { spares: this.spareImages });
    await copyTree(suspended, made.dir);
    await rm(suspended, { recursive: true, force: true, maxRetries: 3 });
  }

  /** A started pod for the sandbox, its refused outbound calls told in the sandbox's log. */
  private async acquirePod(sandboxId: string, { log, logsHint, sandbox }: DeployContext): Promise<Pod> {
    const twins = sandbox.twin_names;
    const pod = await this.opts.pods.acquire(sandboxId, twins).catch((error: unknown) => {
      if (!(error instanceof PodStartError)) throw error;
      // The sentence is the sandbox's error; the pod's own last lines are for the deploy log only.
      log.note(`the sandbox pod's last output:\n${error.output}`);
      throw new DeployFailure(`${error.message} ${logsHint}`);
    });
    this.running.pods.set(sandboxId, pod);
    pod.onBlocked = (attempt) => {
      log.note(`blocked outbound call to ${attempt.host}:${attempt.port}${blockedCallHint(attempt.host)}`);
      this.opts.onBlockedEgress?.(sandboxId, [...pod.blocked.values()]);
    };
    return pod;
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

  // ---- lifecycle of what a deploy started ----

  /** A ready app that exits on its own fails its sandbox. */
  private watch(sandboxId: string, app: GroupProcess, logsHint: string): void {
    void app.exited.then((exit) => {
      if (this.releasing.has(sandboxId) || this.running.apps.get(sandboxId) !== app) return;
      const reason = appExit(exit);
      this.logs.get(sandboxId)?.note(reason);
      this.opts.onCrash?.(sandboxId, `App crashed: ${reason} ${logsHint}`);
    });
  }

  /**
   * Stops everything of a sandbox; keeps or closes its log. With `suspend` (a shutdown with the sandbox
   * ready) its workspace, twin state and resume record stay for the next start; otherwise they go.
   */
  private release(
    sandboxId: string,
    opts: { closeLog: boolean; suspend?: boolean; onStopping?: () => void },
  ): Promise<void> {
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

  private async releaseNow(
    sandboxId: string,
    {
      closeLog,
      suspend = false,
      onStopping,
    }: { closeLog: boolean; suspend?: boolean; onStopping?: () => void },
  ): Promise<void> {
    this.deployed.delete(sandboxId);
    const { apps, steps, pods, pids } = this.running;
    this.running.noHttpPort.delete(sandboxId);
    const app = apps.get(sandboxId);
    apps.delete(sandboxId);
    const step = steps.get(sandboxId);
    steps.delete(sandboxId);
    const pod = pods.get(sandboxId);
    pods.delete(sandboxId);
    // The app and its pod stop side by side: they are separate groups and cgroups, and the pod's twins
    // flushing their state need not wait for the app's grace, nor the app for theirs.
    const podStopped = pod ? this.opts.pods.destroy(pod, { keepState: suspend }) : Promise.resolve();
    const appStopped = (async () => {
      await Promise.all([app?.kill(APP_GRACE_MS), step?.kill(500)]);
      await pids.killRecorded(sandboxId);
      await this.opts.isolation.release(sandboxId);
    })();
    // kill() sends SIGTERM before its first await: the app is being stopped by now.
    onStopping?.();
    // Both settle before a failure of either ends the release, so neither is left unwatched.
    for (const result of await Promise.allSettled([appStopped, podStopped]))
      if (result.status === 'rejected') throw result.reason;
    if (suspend) await this.suspendWorkspace(sandboxId);
    else {
      // A sandbox failed or ended before its resume: the pod directory it had before the restart goes too.
      const kept = await this.resumeRecords.read(sandboxId);
      if (kept) await this.opts.pods.discard(kept.pod_slot);
      await this.resumeRecords.remove(sandboxId);
      await removeWorkspaceFolder(this.workspaceFolderOf(sandboxId));
      await rm(this.suspendedOf(sandboxId), { recursive: true, force: true, maxRetries: 3 });
    }
    if (closeLog) await this.logs.close(sandboxId);
  }

  /**
   * A tmpfs workspace must not stay mounted while Twinbox is down (nothing would unmount it if the
   * data dir were removed, and a reboot empties it anyway): its files are copied to disk and it goes.
   * A plain directory stays where it is.
   */
  private async suspendWorkspace(sandboxId: string): Promise<void> {
    const workspace = this.workspaceOf(sandboxId);
    if (!isMountPoint(workspace)) return;
    const suspended = this.suspendedOf(sandboxId);
    await rm(suspended, { recursive: true, force: true, maxRetries: 3 });
    try {
      await copyTree(workspace, suspended);
    } catch (error) {
      this.opts.logger.error({ sandbox_id: sandboxId, err: error }, 'could not keep a workspace on disk');
      await rm(suspended, { recursive: true, force: true, maxRetries: 3 });
    }
    await removeWorkspace(workspace);
  }

  /**
   * Resolves once the app has been told to stop (SIGTERM; SIGKILL follows after APP_GRACE_MS): the
   * sandbox can no longer be reached, since its record is already ended and the router answers 410. Its
   * pod, cgroups, namespace, workspace and files go after that, tracked in `releasing`, so a shutdown
   * still waits for them; a failure there is logged.
   */
  async teardown(sandbox: SandboxRecord): Promise<void> {
    this.resuming.get(sandbox.id)?.controller.abort();
    this.timings.delete(sandbox.id);
    let answered = false;
    let stopping!: () => void;
    const signalled = new Promise<void>((resolve) => (stopping = resolve));
    const run = this.release(sandbox.id, {
      closeLog: true,
      onStopping: () => {
        answered = true;
        stopping();
      },
    });
    // Before the answer a failure goes to the caller; after it, nobody waits for it but the log.
    run.catch((error: unknown) => {
      if (answered)
        this.opts.logger.error({ sandbox_id: sandbox.id, err: error }, 'cleanup after a teardown failed');
    });
    // A release that fails before reaching the app (an earlier one of the same sandbox) rejects here.
    await Promise.race([signalled, run]);
  }

  /**
   * Twinbox shutdown: stops every app and pod. Sandboxes that are up keep their workspace and twin state,
   * to be resumed at the next start; deploys cut off here run again then (docs/sandboxes.md, "Restarts").
   */
  async close(): Promise<void> {
    // A resume cut off here keeps what it has for the next start (resume()); wait until it has.
    for (const { controller } of this.resuming.values()) controller.abort();
    await Promise.all([...this.resuming.values()].map(({ done }) => done));
    const keep = new Set(this.deployed);
    const { apps, steps, pods } = this.running;
    const ids = [...new Set([...apps.keys(), ...steps.keys(), ...pods.keys()])];
    await Promise.all(ids.map((id) => this.release(id, { closeLog: true, suspend: keep.has(id) })));
    await Promise.allSettled([...this.releasing.values()]);
    await this.opts.pods.close();
    await this.spareImages.close();
    // One line that says what a stop leaves on purpose: files in the data directory only, nothing mounted
    // or running (docs/deploy.md, "Teardown, shutdown and restart").
    const kept = (await this.resumeRecords.all()).map((record) => record.sandbox_id);
    this.opts.logger.info(
      { kept_for_resume: kept },
      kept.length
        ? `kept ${kept.length} ready sandbox${kept.length === 1 ? '' : 'es'} for resume: ${kept.join(', ')} ` +
            `(workspace, twin state and resume record in ${this.opts.dataDir}; nothing mounted or running)`
        : 'kept nothing for resume (no ready sandbox)',
    );
  }
}

/** Copies a workspace's files, symlinks as they are (never followed); sockets and FIFOs are skipped. */
async function copyTree(from: string, to: string): Promise<void> {
  await cp(from, to, {
    recursive: true,
    verbatimSymlinks: true,
    preserveTimestamps: true,
    filter: async (source) => {
      const stat = await lstat(source);
      return stat.isFile() || stat.isDirectory() || stat.isSymbolicLink();
    },
  });
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
