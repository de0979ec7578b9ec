import type { RouteTarget, SandboxEndpoints, SandboxState } from '../router/index.ts';
import type { DeployEvents } from '../sandboxes/deploy-events.ts';
import type { SandboxRecord } from '../store/records.ts';
import type { LocalDeployer } from './local-deployer.ts';

const LIVE = new Set(['queued', 'building', 'ready']);

/**
 * What the router asks on every request, answered from memory: the sockets of a sandbox's pod, and where
 * each sandbox stands, kept current from the lifecycle's change events. An ended sandbox is remembered for
 * `keepEndedMs` (its URL answers 410 with the "expired / deleted" page), then forgotten (404). A ready
 * sandbox the deployer is resuming after a restart is `resuming` (503) from the moment its resume starts
 * until the lifecycle's next change event once it is over (`live` again, or `failed`).
 */
export class EndpointDirectory implements SandboxEndpoints {
  private readonly states = new Map<string, { state: SandboxState; timer?: NodeJS.Timeout }>();

  constructor(
    private readonly deployer: LocalDeployer,
    private readonly keepEndedMs: number,
    events: DeployEvents,
  ) {
    events.on('resuming', (sandbox) => this.resuming(sandbox));
  }

  observe(sandbox: SandboxRecord): void {
    clearTimeout(this.states.get(sandbox.id)?.timer);
    if (LIVE.has(sandbox.status) && this.deployer.isResuming(sandbox.id)) {
      // A change while it resumes (its TTL extended, say) does not make a half-started pod servable.
      this.resuming(sandbox);
    } else if (LIVE.has(sandbox.status)) {
      const twins = sandbox.status === 'ready' ? Object.keys(sandbox.twins) : undefined;
      const noHttpPort = sandbox.status === 'ready' && this.deployer.hasNoHttpPort(sandbox.id);
      this.states.set(sandbox.id, {
        state: {
          state: 'live',
          ...(twins ? { twins } : {}),
          ...(noHttpPort ? { noHttpPort } : {}),
          ...(sandbox.kind === 'twins' ? { twinSet: true } : {}),
        },
      });
    } else if (sandbox.status === 'failed') {
      this.states.set(sandbox.id, { state: { state: 'failed', error: sandbox.error } });
    } else if (this.keepEndedMs > 0) {
      const timer = setTimeout(() => this.states.delete(sandbox.id), this.keepEndedMs);
      timer.unref();
      this.states.set(sandbox.id, { state: { state: 'ended', sandbox }, timer });
    } else {
      this.states.delete(sandbox.id);
    }
  }

  /** Its resume is starting (DeployEvents' `resuming`). */
  resuming(sandbox: SandboxRecord): void {
    clearTimeout(this.states.get(sandbox.id)?.timer);
    this.states.set(sandbox.id, { state: { state: 'resuming', twins: Object.keys(sandbox.twins) } });
  }

  socketFor(sandboxId: string, target: RouteTarget): string | undefined {
    const pod = this.deployer.podOf(sandboxId);
    if (!pod) return undefined;
    if (target.kind === 'app') return pod.appPort ? pod.appSocket() : undefined;
    return pod.twinSocket(target.name);
  }

  stateOf(sandboxId: string): SandboxState {
    return this.states.get(sandboxId)?.state ?? { state: 'unknown' };
  }

  close(): void {
    for (const { timer } of this.states.values()) clearTimeout(timer);
    this.states.clear();
  }
}
