import type { RemoteLocation, RemoteSandboxes } from '../router/index.ts';
import type { Store } from '../store/store.ts';
import type { RunnerRegistry } from './registry.ts';

/**
 * Tells the router where a sandbox it has no pod of is served (docs/routing.md, "Several processes"):
 * the internal URL of the runner holding it, or, when no live runner holds it, where it stands as the
 * store says (queued, failed, ended, unknown), which the router answers itself.
 */
export class SandboxLocator implements RemoteSandboxes {
  /**
   * Which runner holds a building or ready sandbox, for a moment: a page of an app loads many assets, and
   * each would read the sandbox again. Safe to keep because a sandbox never moves between runners; what
   * ends it is answered by that runner's own router (it is forwarded there with FORWARDED_HEADER) until
   * the entry runs out.
   */
  private readonly held = new Map<string, { runnerId: string; until: number }>();

  constructor(
    private readonly deps: {
      store: Store;
      registry: RunnerRegistry;
      /** This process's runner id, if it is one: its own sandboxes are never forwarded. */
      selfId: string | undefined;
      /** How long an ended sandbox's URL answers with the "expired / deleted" page (0: never). */
      keepEndedMs: number;
      /** How long a sandbox's runner is remembered (default 2 s). */
      heldMs?: number;
    },
  ) {}

  async locate(sandboxId: string): Promise<RemoteLocation> {
    const { store, registry, selfId, keepEndedMs } = this.deps;
    const held = this.held.get(sandboxId);
    if (held && held.until > Date.now()) {
      // The registry caches runner URLs itself and answers none for a lost runner.
      const runnerUrl = await registry.urlOf(held.runnerId);
      if (runnerUrl) return { runnerUrl };
    }
    this.held.delete(sandboxId);
    const sandbox = await store.sandboxes.get(sandboxId);
    if (!sandbox) return { state: { state: 'unknown' } };
    switch (sandbox.status) {
      case 'failed':
        return { state: { state: 'failed', error: sandbox.error } };
      case 'expired':
      case 'deleted': {
        const endedAt = Date.parse(sandbox.ended_at ?? sandbox.updated_at);
        return keepEndedMs > 0 && Date.now() - endedAt < keepEndedMs
          ? { state: { state: 'ended', sandbox } }
          : { state: { state: 'unknown' } };
      }
      default: {
        if (sandbox.runner_id && sandbox.runner_id !== selfId) {
          const runnerUrl = await registry.urlOf(sandbox.runner_id);
          if (runnerUrl) {
            this.remember(sandboxId, sandbox.runner_id);
            return { runnerUrl };
          }
        }
        // Not taken by a runner yet, or its runner is lost (the watchdog fails it shortly): not running.
        return {
          state: {
            state: 'live',
            ...(sandbox.status === 'ready' ? { twins: Object.keys(sandbox.twins) } : {}),
            ...(sandbox.kind === 'twins' ? { twinSet: true } : {}),
          },
        };
      }
    }
  }

  private remember(sandboxId: string, runnerId: string): void {
    this.held.set(sandboxId, { runnerId, until: Date.now() + (this.deps.heldMs ?? 2000) });
    // Bounded: the oldest entries go first (a Map iterates in insertion order).
    while (this.held.size > 10_000) this.held.delete(this.held.keys().next().value!);
  }
}
