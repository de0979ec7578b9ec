import type { Logger } from 'pino';
import type { DeployEvents } from '../sandboxes/deploy-events.ts';
import type { SandboxLifecycle } from '../sandboxes/lifecycle.ts';
import type { SandboxService } from '../sandboxes/service.ts';
import type { Store } from '../store/store.ts';
import type { SandboxRecord } from '../store/records.ts';
import type { TwinDescriptor } from '../twins/contract.ts';
import { twinDescriptors } from '../twins/descriptors.ts';
import { ExpirySweeper } from '../store/expiry.ts';
import { AppRequestRecorder } from './app-requests.ts';
import { SandboxEvents } from './events.ts';
import { TimelineService } from './service.ts';
import type { TwinAdminReach } from '../twins/kit/admin-client.ts';
import { TwinLogs } from './twin-logs.ts';

export { timelineRoutes } from './routes.ts';
export type { TimelineEntry } from './entries.ts';
export type { TimelinePage, TimelineService } from './service.ts';

/** The sandbox timeline's parts, as the composition root wires them (docs/timeline.md). */
export interface Timeline {
  service: TimelineService;
  /** Its `observe` goes to the router (RouterOptions.observe). */
  requests: AppRequestRecorder;
  events: SandboxEvents;
  /** Records a deploy step; subscribed to the deploy events' `step`. */
  onStep: SandboxEvents['onStep'];
  /** Waits for events and app requests still being written (shutdown, tests). */
  idle(): Promise<void>;
  /** Sweeps stored app requests past their retention now and every `intervalMs`. */
  start(intervalMs: number): void;
  /** Stops the sweep and writes what is still to be written. */
  stop(): Promise<void>;
}

export interface TimelineOptions {
  store: Store;
  logger: Logger;
  lifecycle: SandboxLifecycle;
  /** Its deploy steps go onto each sandbox's timeline (deploy-events.ts). */
  deployEvents: DeployEvents;
  sandboxes: SandboxService;
  /** A live sandbox's twins wherever it runs (server/runners/twins.ts); absent, none is reachable. */
  twinReach?: TwinAdminReach;
  descriptors?: ReadonlyMap<string, TwinDescriptor>;
}

export function createTimeline(options: TimelineOptions): Timeline {
  const descriptors = options.descriptors ?? twinDescriptors;
  const events = new SandboxEvents(options.store, options.logger);
  events.attach(options.lifecycle);
  const requests = new AppRequestRecorder({ store: options.store, logger: options.logger });
  const sweeper = new ExpirySweeper(
    options.store.sweepCursors,
    [requests.swept()!],
    () => Date.now(),
    (error) => options.logger.warn({ err: error }, 'timeline: could not sweep old app requests'),
  );
  const twinLogs = new TwinLogs({
    reach: options.twinReach ?? (async () => undefined),
    twinNames: [...descriptors.keys()],
    logger: options.logger,
  });
  // A sandbox's twins stop with it: their logs are copied as soon as its end is announced, before the
  // pod goes (a crash, a failed or cancelled deploy step, failure, expiry or deletion). The copy must
  // start at once, so the records (admin token, runner) of deploying and running sandboxes are at hand.
  const live = new Map<string, SandboxRecord>();
  const archive = (id: string) => {
    const sandbox = live.get(id);
    if (sandbox) return twinLogs.archive(sandbox);
    // Not seen deploying by this Twinbox (it restarted since): the record has the token.
    options.store.sandboxes
      .get(id)
      .then((sandbox) => sandbox && twinLogs.archive(sandbox))
      .catch((err: unknown) =>
        options.logger.error({ err, sandbox_id: id }, 'timeline: no copy of twin logs'),
      );
  };
  options.lifecycle.on('change', (sandbox) => {
    if (sandbox.status === 'building' || sandbox.status === 'ready') {
      live.set(sandbox.id, sandbox);
    } else if (sandbox.status !== 'queued') {
      twinLogs.archive(sandbox);
      live.delete(sandbox.id);
    }
  });
  options.lifecycle.on('crashed', archive);
  // The pod is stopped once the copy is taken (or after the lifecycle's bound), not while it is read.
  options.lifecycle.holdRelease((sandbox) => twinLogs.copied(sandbox.id));
  const onStep: SandboxEvents['onStep'] = (sandboxId, step, phase, durationMs, error) => {
    if (phase === 'failed') archive(sandboxId);
    events.onStep(sandboxId, step, phase, durationMs, error);
  };
  options.deployEvents.on('step', onStep);
  const service = new TimelineService({
    sandboxes: options.sandboxes,
    events,
    requests,
    twinLogs,
    descriptors,
  });
  const idle = async () => {
    await requests.flush();
    await events.idle();
  };
  return {
    service,
    requests,
    events,
    onStep,
    idle,
    start: (intervalMs) => sweeper.start(intervalMs),
    stop: async () => {
      await sweeper.stop();
      await idle();
    },
  };
}
