import type { SandboxStatus } from '../store/records.ts';

/**
 * The sandbox lifecycle. The spec shows `queued` and `ready`; the rest are ours (docs/sandboxes.md).
 *
 *   queued ─► building ─► ready ─► expired | deleted
 *     │ ▲        │          │
 *     │ └────────┤          │            (building ─► queued: a deploy cut off by a restart runs again)
 *     │          └──────────┴─► failed ─► expired | deleted     (a ready app that crashes fails too)
 *     └─────────────────────────► expired | deleted
 */
const NEXT: Record<SandboxStatus, readonly SandboxStatus[]> = {
  queued: ['building', 'expired', 'deleted'],
  building: ['ready', 'queued', 'failed', 'expired', 'deleted'],
  ready: ['failed', 'expired', 'deleted'],
  failed: ['expired', 'deleted'],
  expired: [],
  deleted: [],
};

export const SANDBOX_STATUSES = Object.keys(NEXT) as SandboxStatus[];

/** States that hold (or may soon hold) running resources, and that the TTL reaper watches. */
export const LIVE_STATUSES: readonly SandboxStatus[] = ['queued', 'building', 'ready', 'failed'];

/** States of a sandbox on its way up or running: what counts against the quota and what can be extended. */
export const ACTIVE_STATUSES: ReadonlySet<SandboxStatus> = new Set(['queued', 'building', 'ready']);

export function canTransition(from: SandboxStatus, to: SandboxStatus): boolean {
  return NEXT[from].includes(to);
}

export function isFinal(status: SandboxStatus): boolean {
  return NEXT[status].length === 0;
}

export class IllegalTransitionError extends Error {
  constructor(
    readonly from: SandboxStatus,
    readonly to: SandboxStatus,
  ) {
    super(`A sandbox cannot go from ${from} to ${to}`);
    this.name = 'IllegalTransitionError';
  }
}
