import { EventEmitter } from 'node:events';
import type { SandboxRecord } from '../store/records.ts';
import type { BlockedEgress } from './egress.ts';

/**
 * What the deploy engine tells the rest of Twinbox, as it happens. The deployer and the lifecycle need
 * each other (the lifecycle runs deploys on the deployer; the deployer tells the lifecycle of a crash or
 * of blocked egress), so this channel is made first and handed to both: the engine emits into it, the
 * lifecycle, the timeline and the router's directory subscribe to it in their constructors. A listener
 * that returns a promise catches its own failure: nothing is ever thrown back at the deployer.
 */
export class DeployEvents extends EventEmitter<{
  /** A deploy or resume step started or ended (the timeline records it); `error` when it failed. */
  step: [
    sandboxId: string,
    step: string,
    phase: 'started' | 'finished' | 'failed',
    durationMs?: number,
    error?: string,
  ];
  /** A ready app exited on its own: its sandbox fails with `error` (the lifecycle). */
  crash: [sandboxId: string, error: string];
  /** A sandbox's code tried to reach something it may not (the lifecycle records it). */
  blockedEgress: [sandboxId: string, blocked: BlockedEgress[]];
  /** A resume after a restart is starting, before any of it runs (the router's directory answers 503). */
  resuming: [sandbox: SandboxRecord];
}> {}
