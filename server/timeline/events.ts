import type { Logger } from 'pino';
import { KeyedLock } from '../keyed-lock.ts';
import { vendorOf } from '../sandboxes/egress.ts';
import type { SandboxLifecycle } from '../sandboxes/lifecycle.ts';
import type { SandboxEventRecord, SandboxRecord, SandboxStatus } from '../store/records.ts';
import type { Store } from '../store/store.ts';
import { formatDuration } from './entries.ts';

/** Events kept per sandbox; the oldest go first. A deploy makes about twenty. */
export const MAX_EVENTS_PER_SANDBOX = 300;
/** Distinct blocked destinations recorded per sandbox: a loop dialling random hosts must not flood it. */
const MAX_BLOCKED_DESTINATIONS = 50;

interface SandboxState {
  nextSeq: number;
  lastStatus: SandboxStatus;
  blocked: Set<string>;
  /** Numbered but not yet durable, so a reader sees an event as soon as it happened. */
  pending: Map<number, SandboxEventRecord>;
}

type NewEvent = Omit<SandboxEventRecord, 'id' | 'sandbox_id' | 'seq' | 'at'> & { at?: string };

function statusSummary(sandbox: SandboxRecord): string {
  switch (sandbox.status) {
    case 'queued':
      return 'Queued for deploy';
    case 'building':
      return 'Deploying';
    case 'ready':
      return sandbox.app_url ? `Ready at ${sandbox.app_url}` : 'Ready';
    case 'failed':
      return `Failed: ${sandbox.error ?? 'no reason given'}`;
    case 'expired':
      return 'Expired: its time to live ran out';
    case 'deleted':
      return 'Deleted';
  }
}

/**
 * Twinbox's own events of each sandbox, kept durably in the store (`sandboxEvents`, one record an
 * event, at most MAX_EVENTS_PER_SANDBOX a sandbox): status changes, deploy steps, crashes, extensions
 * and blocked outbound calls. Writes happen off the caller's path, in order per sandbox.
 */
export class SandboxEvents {
  private readonly states = new Map<string, Promise<SandboxState>>();
  private readonly writes = new KeyedLock();

  constructor(
    private readonly store: Store,
    private readonly logger: Logger,
  ) {}

  /** Records what the lifecycle tells: status changes, extensions, crashes, blocked outbound calls. */
  attach(lifecycle: SandboxLifecycle): void {
    lifecycle.on('change', (sandbox) => this.observe(sandbox));
    lifecycle.on('extended', (sandbox, minutes) =>
      this.record(sandbox.id, {
        kind: 'extended',
        summary: `Extended by ${minutes} minute${minutes === 1 ? '' : 's'}: now expires at ${sandbox.expires_at}`,
        detail: { minutes, expires_at: sandbox.expires_at },
      }),
    );
    lifecycle.on('crashed', (id, error) =>
      this.record(id, { kind: 'crash', summary: error, detail: { error } }),
    );
  }

  /** A deploy step started or ended (LocalDeployer.onStep). */
  readonly onStep = (
    sandboxId: string,
    step: string,
    phase: 'started' | 'finished' | 'failed',
    durationMs?: number,
    error?: string,
  ): void => {
    const took = durationMs === undefined ? '' : ` in ${formatDuration(durationMs)}`;
    const summary =
      phase === 'started'
        ? `Deploy step "${step}" started`
        : phase === 'finished'
          ? `Deploy step "${step}" done${took}`
          : `Deploy step "${step}" failed${took}: ${error ?? 'no reason given'}`;
    this.record(sandboxId, {
      kind: 'deploy_step',
      summary,
      ...(durationMs === undefined ? {} : { duration_ms: durationMs }),
      detail: { step, phase, ...(error ? { error } : {}) },
    });
  };

  /** Events of a sandbox after `seq`, in order: durable ones and those still being written. */
  async after(sandboxId: string, seq: number): Promise<SandboxEventRecord[]> {
    const state = await this.stateOf(sandboxId);
    const bySeq = new Map<number, SandboxEventRecord>();
    for (const record of await this.store.sandboxEvents.findBy('sandbox_id', sandboxId))
      if (record.seq > seq) bySeq.set(record.seq, record);
    for (const record of state.pending.values()) if (record.seq > seq) bySeq.set(record.seq, record);
    return [...bySeq.values()].sort((a, b) => a.seq - b.seq);
  }

  /** Resolves once every event recorded so far is durable (tests, shutdown). */
  async idle(): Promise<void> {
    await Promise.allSettled(this.states.values());
    await this.writes.idle();
  }

  private observe(sandbox: SandboxRecord): void {
    this.withState(sandbox.id, (state) => {
      if (sandbox.status !== state.lastStatus) {
        this.add(sandbox.id, state, {
          kind: 'status',
          summary: statusSummary(sandbox),
          detail: {
            from: state.lastStatus,
            to: sandbox.status,
            ...(sandbox.status === 'failed' && sandbox.error ? { error: sandbox.error } : {}),
          },
        });
        state.lastStatus = sandbox.status;
      }
      for (const blocked of sandbox.blocked_egress ?? []) {
        const key = `${blocked.host}:${blocked.port}`;
        if (state.blocked.has(key) || state.blocked.size >= MAX_BLOCKED_DESTINATIONS) continue;
        state.blocked.add(key);
        const vendor = vendorOf(blocked.host);
        this.add(sandbox.id, state, {
          at: blocked.first_seen,
          kind: 'blocked_egress',
          summary:
            `Blocked an outbound call to ${key}` +
            (vendor ? ` (the real ${vendor}: this sandbox has no twin answering for it)` : ''),
          detail: { host: blocked.host, port: blocked.port, ...(vendor ? { vendor } : {}) },
        });
      }
    });
  }

  private record(sandboxId: string, event: NewEvent): void {
    this.withState(sandboxId, (state) => this.add(sandboxId, state, event));
  }

  /** Runs `use` once the sandbox's state is known; callers are event handlers, so failures are logged. */
  private withState(sandboxId: string, use: (state: SandboxState) => void): void {
    this.stateOf(sandboxId)
      .then(use)
      .catch((err: unknown) =>
        this.logger.error({ err, sandbox_id: sandboxId }, 'could not record a sandbox event'),
      );
  }

  /** Numbers the event now (so order is the order things happened) and writes it in that order. */
  private add(sandboxId: string, state: SandboxState, event: NewEvent): void {
    const seq = state.nextSeq++;
    const record: SandboxEventRecord = {
      ...event,
      id: `${sandboxId}_${seq}`,
      sandbox_id: sandboxId,
      seq,
      at: event.at ?? new Date().toISOString(),
    };
    state.pending.set(seq, record);
    void this.writes
      .run(sandboxId, async () => {
        await this.store.sandboxEvents.insert(record);
        await this.trim(sandboxId);
      })
      .catch((err: unknown) =>
        this.logger.error({ err, sandbox_id: sandboxId }, 'could not record a sandbox event'),
      )
      .finally(() => state.pending.delete(seq));
  }

  private async trim(sandboxId: string): Promise<void> {
    const records = await this.store.sandboxEvents.findBy('sandbox_id', sandboxId);
    if (records.length <= MAX_EVENTS_PER_SANDBOX) return;
    records.sort((a, b) => a.seq - b.seq);
    for (const old of records.slice(0, records.length - MAX_EVENTS_PER_SANDBOX))
      await this.store.sandboxEvents.delete(old.id);
  }

  /** What is known of a sandbox's events, read from the store the first time it is needed. */
  private stateOf(sandboxId: string): Promise<SandboxState> {
    let state = this.states.get(sandboxId);
    if (!state) {
      state = this.store.sandboxEvents.findBy('sandbox_id', sandboxId).then((records) => {
        records.sort((a, b) => a.seq - b.seq);
        const statuses = records.filter((r) => r.kind === 'status');
        const blocked = records.filter((r) => r.kind === 'blocked_egress');
        return {
          nextSeq: (records.at(-1)?.seq ?? 0) + 1,
          // A sandbox starts queued: that is its "created" entry, not a recorded event.
          lastStatus: (statuses.at(-1)?.detail?.to as SandboxStatus | undefined) ?? 'queued',
          blocked: new Set(blocked.map((r) => `${String(r.detail?.host)}:${String(r.detail?.port)}`)),
          pending: new Map(),
        };
      });
      // A failed read is not remembered: the next event tries again.
      state.catch(() => this.states.delete(sandboxId));
      this.states.set(sandboxId, state);
    }
    return state;
  }
}
