import { copyFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { DeployFailure } from '../../sandboxes/deployer.ts';
import type { SandboxRecord, TwinEntry } from '../../store/records.ts';
import type { LogSink } from '../confinement/logs.ts';
import type { GroupProcess } from '../confinement/processes.ts';
import { HealthCheckError, NO_PORT_SETTLE_MS } from './health.ts';
import { ProfileError, readProfile, STATIC_SERVER_PATH, type RuntimeProfile } from './profile.ts';
import type { ResolvedSource, SourceDownload, SourceFetcher } from './source.ts';
import { chooseTwinNames, mergeEnv, twinsImpliedByDependencies } from './twin-plan.ts';
import { planWebhooks } from './webhook-targets.ts';

/** Milliseconds per deploy step, for logs and the benchmark. */
export type StepTimings = Partial<
  Record<
    'source' | 'twins' | 'profile' | 'install' | 'build' | 'start' | 'health' | 'webhooks' | 'total',
    number
  >
>;

/** Told when each deploy step starts and ends (the sandbox timeline records it); `error` on failure. */
export type StepObserver = (
  step: DeployStep['name'],
  phase: 'started' | 'finished' | 'failed',
  durationMs?: number,
  error?: string,
) => void;

/** Everything one deploy has learnt so far; each step reads what earlier ones wrote. */
export interface DeployContext {
  sandbox: SandboxRecord;
  signal: AbortSignal;
  log: LogSink;
  onStep?: StepObserver;
  /** The deploy's step timings (runPipeline's), where a step records a part of itself (`health`). */
  timings?: StepTimings;
  workspace: string;
  /** Appended to error texts that have more in the log. */
  logsHint: string;
  seeds: Record<string, unknown>;
  /** Twins asked for by name start while the source downloads. */
  earlyTwins?: Promise<Record<string, TwinEntry>>;
  /** The branch or pull request resolved to a commit while the workspace is made. */
  earlySource?: Promise<ResolvedSource>;
  /** That commit's download, begun as soon as it is resolved: unpacked once the workspace exists. */
  earlyDownload?: Promise<SourceDownload>;
  profile?: RuntimeProfile;
  twins?: Record<string, TwinEntry>;
  /** The variables the app gets from the twins, the profile and the caller (the spec's `env_vars`). */
  envVars?: Record<string, string>;
  /** The port the app listens on, where the runner reaches it; none for an app with `port: false`. */
  port?: number;
  /** The app's whole environment: envVars plus PATH, HOME, PORT... */
  appEnv?: Record<string, string>;
  /** Paths the app may read besides its workspace (the dependency cache). */
  readOnly: string[];
  app?: GroupProcess;
  /** The twins' webhooks being pointed at the app, begun by `start` (pointWebhooks). */
  webhooksPointed?: Promise<void>;
  /** The way to the app's port being opened, begun once the port is known (settleAppEnvironment). */
  appPortOpened?: Promise<void>;
}

/**
 * What a runner provides to the shared steps: where commands run and how the app is reached. The local
 * runner implements it with a pod, a network namespace and bubblewrap; another runner (a Pod per sandbox
 * on Kubernetes, docs/scaling.md) would implement the same calls and reuse the steps unchanged.
 */
export interface DeployRunner {
  readonly source: SourceFetcher;
  supportedTwin(name: string): boolean;
  startTwins(ctx: DeployContext, names: string[]): Promise<Record<string, TwinEntry>>;
  /** The port the app must listen on (inside its namespace when it has one). */
  appPort(ctx: DeployContext): Promise<number>;
  /**
   * Opens the way from outside to the app's port, ahead of the app's start (nothing uses it before the
   * health check); startApp waits for `ctx.appPortOpened`.
   */
  openAppPort(ctx: DeployContext, port: number): Promise<void>;
  /** Runs install (dependencies) for the profile; may add cached paths to ctx.readOnly. */
  install(ctx: DeployContext): Promise<void>;
  /** Runs one command confined, to its end. */
  run(ctx: DeployContext, label: 'build', command: string): Promise<void>;
  /** Starts the app, confined; resolves once it is running (not yet answering). No port: not reachable. */
  startApp(ctx: DeployContext, port: number | undefined): Promise<GroupProcess>;
  /**
   * Resolves once the app answers HTTP on its health path, or, with no port (`port: false`), once it has
   * stayed up for NO_PORT_SETTLE_MS; rejects with the reason (a HealthCheckError).
   */
  waitHealthy(ctx: DeployContext, port: number | undefined): Promise<void>;
  /** The app's public URL: what the sandbox's `app_url` is (the app's `APP_URL`). */
  appUrl(ctx: DeployContext): string;
  /** The app's origin as its twins reach it (they deliver webhooks from beside it, in its namespace). */
  appOriginForTwins(ctx: DeployContext): string;
  /** Points one twin's webhooks at `url`, signed with `secret` (the twin's PUT /webhooks/target). */
  setWebhookTarget(ctx: DeployContext, twin: string, target: { url: string; secret: string }): Promise<void>;
}

export interface DeployStep {
  name: keyof StepTimings;
  run(ctx: DeployContext, runner: DeployRunner): Promise<void>;
}

const STATIC_SERVER_SOURCE = new URL('./static-server.mjs', import.meta.url);

/**
 * The steps of a deploy, in order: source → profile → twins → install → build → start (and health) →
 * webhooks (begun while the app starts).
 */
export const DEPLOY_STEPS: DeployStep[] = [
  {
    name: 'source',
    async run(ctx, runner) {
      // The fetcher words every failure for the sandbox's `error` (not found, too large, host down).
      const failure = (error: Error) => {
        throw ctx.signal.aborted ? error : new DeployFailure(error.message);
      };
      const source = await (ctx.earlySource ?? runner.source.resolve(ctx.sandbox, ctx.signal)).catch(failure);
      ctx.log.note(`source: ${source.describe} at ${source.sha}`);
      const download = await (ctx.earlyDownload ?? runner.source.download(source, ctx.signal)).catch(failure);
      const files = await runner.source.unpack(download, ctx.workspace).catch(failure);
      ctx.log.note(`source: ${files} files`);
    },
  },
  {
    name: 'profile',
    async run(ctx) {
      try {
        ctx.profile = await readProfile(ctx.workspace);
      } catch (error) {
        if (error instanceof ProfileError) throw new DeployFailure(`Runtime profile: ${error.message}`);
        throw error;
      }
      const p = ctx.profile;
      for (const note of p.notes ?? []) ctx.log.note(`profile: ${note}`);
      ctx.log.note(
        `profile (${p.source}): ${p.root ? `root=${p.root} ` : ''}${p.port !== null ? `port=${p.port} ` : ''}install=${p.install ?? '-'} build=${p.build ?? '-'} start=${p.start}`,
      );
      if (p.staticSite) {
        await mkdir(join(appDirectory(ctx), '.twinbox'), { recursive: true });
        await copyFile(STATIC_SERVER_SOURCE, join(appDirectory(ctx), STATIC_SERVER_PATH));
      }
    },
  },
  {
    name: 'twins',
    async run(ctx, runner) {
      const profile = ctx.profile!;
      ctx.twins = await (ctx.earlyTwins ??
        runner.startTwins(
          ctx,
          chooseTwinNames([], profile.twins, twinsImpliedByDependencies(profile.dependencies), (name) =>
            runner.supportedTwin(name),
          ),
        ));
      await settleAppEnvironment(ctx, runner);
    },
  },
  {
    name: 'install',
    async run(ctx, runner) {
      if (!ctx.profile!.install) return;
      await runner.install(ctx).catch((error: Error) => {
        throw new DeployFailure(`Install failed: ${error.message} ${ctx.logsHint}`);
      });
    },
  },
  {
    name: 'build',
    async run(ctx, runner) {
      const build = ctx.profile!.build;
      if (!build) return;
      await runner.run(ctx, 'build', build).catch((error: Error) => {
        throw new DeployFailure(`Build failed: ${error.message} ${ctx.logsHint}`);
      });
    },
  },
  {
    name: 'start',
    async run(ctx, runner) {
      const profile = ctx.profile!;
      const port = ctx.port;
      ctx.log.note(
        port === undefined
          ? `start: ${profile.start} (no HTTP port: ready once it has stayed up ${NO_PORT_SETTLE_MS / 1000} s)`
          : `start: ${profile.start} (${profile.portVariable}=${port})`,
      );
      ctx.app = await runner.startApp(ctx, port);
      // The twins are pointed at the app while it starts (the `webhooks` step waits for it): each
      // pointing is a durable write of the twin's state, which would otherwise follow the health check.
      ctx.webhooksPointed = pointWebhooks(ctx, runner);
      ctx.webhooksPointed.catch(() => {}); // awaited by the webhooks step; not unhandled meanwhile
      const healthBegan = Date.now();
      await runner.waitHealthy(ctx, port).catch((error: unknown) => {
        if (!(error instanceof HealthCheckError)) throw error;
        if (error.kind === 'exited')
          throw new DeployFailure(
            `App crashed on start: ${error.reason} ${port === undefined ? `within its first ${NO_PORT_SETTLE_MS / 1000} s (port: false: it has no HTTP port, so it must stay up)` : 'before answering HTTP'} ${ctx.logsHint}`,
          );
        if (error.kind === 'timed-out')
          throw new DeployFailure(
            `Health check failed: the app did not answer GET ${profile.healthPath} on ${profile.portVariable}=${port} ` +
              `${error.reason} ${ctx.logsHint}`,
          );
        throw error;
      });
      // Part of `start`: from the app's start (spawned, its port piped) to its first answer.
      if (ctx.timings) ctx.timings.health = Date.now() - healthBegan;
    },
  },
  {
    // Begun by `start` once the app was spawned: this waits for it (or does it, if `start` did not run).
    name: 'webhooks',
    async run(ctx, runner) {
      await (ctx.webhooksPointed ?? pointWebhooks(ctx, runner));
    },
  },
];

/**
 * Points each twin's webhooks at the app. Begun as soon as the app is spawned, not once it answers: the
 * app's URL for its twins is known before it starts, and an event a twin sends before the app answers
 * (one its own start-up calls caused) is retried, as the vendors retry a failed delivery.
 */
async function pointWebhooks(ctx: DeployContext, runner: DeployRunner): Promise<void> {
  const twins = Object.keys(ctx.twins ?? {});
  if (!twins.length) return;
  if (ctx.port === undefined) {
    ctx.log.note(`webhooks: none: the app has no HTTP port (port: false), so its twins deliver nowhere`);
    return;
  }
  const { plans, notes } = planWebhooks(twins, ctx.profile!.webhooks, ctx.envVars ?? {});
  for (const note of notes) ctx.log.note(`webhooks: ${note}`);
  const origin = runner.appOriginForTwins(ctx);
  await Promise.all(
    plans.map(async (plan) => {
      const url = `${origin}${plan.path}`;
      await runner.setWebhookTarget(ctx, plan.twin, { url, secret: plan.secret }).catch((error: Error) => {
        throw new Error(`Webhooks: the ${plan.twin} twin could not be pointed at the app: ${error.message}`);
      });
      ctx.log.note(
        `webhooks: ${plan.twin} events go to ${url} (${plan.from}), signed with ${plan.secretVar}`,
      );
    }),
  );
}

/**
 * The second half of the `twins` step, once `ctx.twins` is known: the app's variables (unless the context
 * has them already: a resumed sandbox keeps those of its deploy), its port and its whole environment, and
 * the way to its port opened. A
 * resume, whose twins come back from their saved state instead of being started, runs it too.
 */
export async function settleAppEnvironment(ctx: DeployContext, runner: DeployRunner): Promise<void> {
  const profile = ctx.profile!;
  // A pull request's own .github/twinbox.yml is the head's, i.e. the author's (a fork's, maybe): its
  // `env` never reaches the app. The GitHub App reads the base branch's config and passes its `env`
  // for same-repository pull requests only (docs/github-app.md).
  ctx.envVars ??= withAppUrl(
    mergeEnv(ctx.sandbox.pr_url ? {} : profile.env, ctx.twins!, ctx.sandbox.env),
    runner.appUrl(ctx),
  );
  // Install and build see the app's environment too (build tools read API URLs, PORT...).
  ctx.port = profile.port === false ? undefined : await runner.appPort(ctx);
  ctx.appEnv = appEnvironment(appDirectory(ctx), ctx.envVars, profile, ctx.port, runner.appUrl(ctx));
  // Now, not when the app starts: then it would be one more round trip before the health check.
  if (ctx.port !== undefined) {
    ctx.appPortOpened = runner.openAppPort(ctx, ctx.port);
    ctx.appPortOpened.catch(() => {}); // awaited by startApp; not unhandled meanwhile
  }
}

/** The folder the app's commands run in: the workspace, or its `root:` folder. */
export function appDirectory(ctx: DeployContext): string {
  return ctx.profile?.root ? join(ctx.workspace, ctx.profile.root) : ctx.workspace;
}

/**
 * `${APP_URL}` in a variable's value (twinbox.yml's `env`, the caller's) becomes the app's URL, which is
 * known only once the sandbox exists. Only that one name: nothing else is expanded, no `$NAME` form.
 */
export function withAppUrl(vars: Record<string, string>, appUrl: string): Record<string, string> {
  return Object.fromEntries(
    Object.entries(vars).map(([name, value]) => [name, value.split('${APP_URL}').join(appUrl)]),
  );
}

/**
 * The steps that bring a deployed sandbox back after a Twinbox restart, over its kept workspace: start
 * (and health), then webhooks. The same step objects as a deploy's, so a resume starts the app exactly as
 * its deploy did; the runner fills the context the earlier steps would have (profile, twins, env, port).
 */
export const RESUME_STEPS: DeployStep[] = DEPLOY_STEPS.filter(
  (step) => step.name === 'start' || step.name === 'webhooks',
);

/**
 * The steps of a twin set (POST /twin-sets: twins alone, for an app that runs elsewhere): its twins start
 * and their variables, under the caller's `env`, are its `env_vars`. No source, profile, app or webhooks.
 */
export const TWIN_SET_STEPS: DeployStep[] = [
  {
    name: 'twins',
    async run(ctx, runner) {
      ctx.twins = await (ctx.earlyTwins ?? runner.startTwins(ctx, ctx.sandbox.twin_names));
      ctx.envVars = mergeEnv({}, ctx.twins, ctx.sandbox.env);
    },
  },
];

/** Runs the steps in order, timing each; stops at the first failure or when the signal aborts. */
export async function runPipeline(
  ctx: DeployContext,
  runner: DeployRunner,
  timings: StepTimings,
  steps: DeployStep[] = DEPLOY_STEPS,
): Promise<void> {
  const began = Date.now();
  ctx.timings = timings;
  for (const step of steps) {
    const start = Date.now();
    ctx.onStep?.(step.name, 'started');
    try {
      await step.run(ctx, runner);
      ctx.onStep?.(step.name, 'finished', Date.now() - start);
    } catch (error) {
      const reason = ctx.signal.aborted ? 'deploy cancelled' : (error as Error).message;
      ctx.onStep?.(step.name, 'failed', Date.now() - start, reason);
      throw error;
    } finally {
      timings[step.name] = (timings[step.name] ?? 0) + (Date.now() - start);
      if (ctx.signal.aborted) throw new Error('deploy cancelled');
    }
  }
  timings.total = Date.now() - began;
}

const PATH = '/usr/local/bin:/usr/bin:/bin';

/** Only the app's own variables: nothing of Twinbox's environment leaks into it. */
export function appEnvironment(
  workspace: string,
  envVars: Record<string, string>,
  profile: RuntimeProfile,
  port: number | undefined,
  appUrl: string,
): Record<string, string> {
  return {
    PATH: `${join(workspace, 'node_modules', '.bin')}:${PATH}`,
    HOME: workspace,
    TMPDIR: '/tmp',
    LANG: 'C.UTF-8',
    NODE_ENV: 'production',
    // Create React App and others read it (a default: the app's env may say otherwise).
    PUBLIC_URL: appUrl,
    ...envVars,
    // After envVars, like the port: the URL is the router's fact, not the caller's to change.
    APP_URL: appUrl,
    // Last, so the app listens where the health check and app_url point, whatever the caller sent. An
    // app with no HTTP port gets none: a PORT would invite it to listen where nothing reaches it.
    ...(port === undefined
      ? {}
      : {
          [profile.portVariable]: String(port),
          ...(profile.portVariable === 'PORT' ? {} : { PORT: String(port) }),
        }),
  };
}
