import type { Logger } from 'pino';
import { KeyedLock } from '../keyed-lock.ts';
import type { ForwardedRequest, ForwardObserver } from '../router/index.ts';
import { expiresAt, swept, type Swept } from '../store/expiry.ts';
import type { ForwardedRequestRecord } from '../store/records.ts';
import type { Store } from '../store/store.ts';
import { pathOnly } from './entries.ts';

/** How long stored app requests are kept: a week of a pull request's review. */
export const APP_REQUEST_RETENTION_MS = 7 * 24 * 3_600_000;

/** One request the router forwarded into a sandbox, to its app or (from outside) to one of its twins. */
export type ForwardRecord = ForwardedRequestRecord;

interface SandboxRequests {
  /** The seq of the last request numbered. */
  seq: number;
  /** False while the sandbox's last stored seq is being read: requests that end meanwhile wait. */
  numbered: boolean;
  loading?: Promise<void>;
  /** Ended before the stored seqs were known, in the order they ended. */
  waiting: ForwardRecord[];
  /** Ended requests, in `seq` order, at most `perSandbox`. */
  ended: ForwardRecord[];
  inFlight: Map<string, ForwardRecord>;
  byId: Map<string, ForwardRecord>;
  /** Numbered, not yet handed to a store write. */
  unwritten: ForwardRecord[];
  /** The sandbox's batches in the store, oldest first (their trim needs no read). */
  batches: Array<{ id: string; last_seq: number }>;
}

export interface AppRequestRecorderOptions {
  /** Ended requests kept per sandbox (default 2,000), in memory and in the store. */
  perSandbox?: number;
  /** Sandboxes kept in memory (default 1,000); the one written to least recently goes first. */
  sandboxes?: number;
  /**
   * Where requests are written, in batches, so every process's timeline shows them and they survive a
   * restart. Without one they live in this process's memory only.
   */
  store?: Store;
  logger?: Logger;
  /** How long an ended request waits to be written with others (default 500 ms). */
  flushMs?: number;
  /** Requests in one batch at most (default 200): a sandbox with this many waiting is written at once. */
  batchSize?: number;
  /** How long a stored batch is kept (default 7 days), then swept (store/expiry.ts). */
  retentionMs?: number;
}

const TRACEPARENT = /^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$/;

/** The trace id of a `traceparent` header value, if it is a well-formed one. */
export function traceIdOf(traceparent: unknown): string | undefined {
  if (typeof traceparent !== 'string') return undefined;
  return TRACEPARENT.exec(traceparent.trim().toLowerCase())?.[1];
}

/**
 * The requests the router forwarded into each sandbox: what the timeline shows as `app_request` and what
 * it ties twin calls to. The process whose router forwarded them keeps the last ones in memory and,
 * given a store, writes them there off the request path: ended requests are numbered (1, 2, 3... per
 * sandbox, continuing from the store's last after a restart) and written in batches at most `flushMs`
 * after they end, one store write per batch, so any process reads them and a restart keeps them.
 * Bounded everywhere: per sandbox in memory and in the store, in sandboxes in memory, and by time in
 * the store (`appRequestsSwept`). docs/timeline.md says what is kept where.
 */
export class AppRequestRecorder {
  private readonly sandboxes = new Map<string, SandboxRequests>();
  private readonly perSandbox: number;
  private readonly maxSandboxes: number;
  private readonly flushMs: number;
  private readonly batchSize: number;
  private readonly retentionMs: number;
  /** Per sandbox: its store reads and writes, one after the other. */
  private readonly writes = new KeyedLock();
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly options: AppRequestRecorderOptions = {}) {
    this.perSandbox = options.perSandbox ?? 2_000;
    this.maxSandboxes = options.sandboxes ?? 1_000;
    this.flushMs = options.flushMs ?? 500;
    this.batchSize = options.batchSize ?? 200;
    this.retentionMs = options.retentionMs ?? APP_REQUEST_RETENTION_MS;
  }

  /** Whether requests are kept in the store: their seqs then never start again from 1. */
  get durable(): boolean {
    return this.options.store !== undefined;
  }

  /** The router's observer (RouterOptions.observe). Cheap: it runs on every forwarded request. */
  readonly observe: ForwardObserver = (request: ForwardedRequest) => {
    const state = this.stateOf(request.sandboxId);
    const query = request.url.indexOf('?');
    const record: ForwardRecord = {
      seq: 0,
      request_id: request.requestId,
      target: request.target.kind === 'app' ? 'app' : request.target.name,
      method: request.method,
      path: pathOnly(request.url),
      query_keys: query === -1 ? [] : [...new Set(new URLSearchParams(request.url.slice(query + 1)).keys())],
      started_at: request.startedAt,
    };
    const traceId = traceIdOf(request.headers.traceparent);
    if (traceId) record.trace_id = traceId;
    state.inFlight.set(record.request_id, record);
    state.byId.set(record.request_id, record);
    return ({ status, endedAt }) => {
      state.inFlight.delete(record.request_id);
      record.ended_at = endedAt;
      if (status !== undefined) record.status = status;
      if (state.numbered) this.number(request.sandboxId, state, record);
      else {
        state.waiting.push(record);
        // The store does not answer: the oldest waiting go, as they would from memory.
        if (state.waiting.length > this.perSandbox) this.forget(state, state.waiting.shift()!);
      }
    };
  };

  /**
   * Every ended request kept for a sandbox, in seq order: the store's (written by whichever process
   * forwarded them) and this process's not yet written, at most `perSandbox`, the newest.
   */
  async ended(sandboxId: string): Promise<ForwardRecord[]> {
    const bySeq = new Map<number, ForwardRecord>();
    if (this.options.store)
      for (const batch of await this.options.store.appRequests.findBy('sandbox_id', sandboxId))
        for (const request of batch.requests) bySeq.set(request.seq, request);
    for (const request of this.sandboxes.get(sandboxId)?.ended ?? []) bySeq.set(request.seq, request);
    return [...bySeq.values()].sort((a, b) => a.seq - b.seq).slice(-this.perSandbox);
  }

  /** Requests of a sandbox still in flight through this process's router (not yet in `ended`). */
  inFlight(sandboxId: string): ForwardRecord[] {
    const state = this.sandboxes.get(sandboxId);
    return state ? [...state.waiting, ...state.inFlight.values()] : [];
  }

  find(sandboxId: string, requestId: string): ForwardRecord | undefined {
    return this.sandboxes.get(sandboxId)?.byId.get(requestId);
  }

  /** Writes every ended request not yet written and waits for the writes (tests, shutdown). */
  async flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    await Promise.allSettled([...this.sandboxes.values()].map((state) => state.loading));
    for (const [sandboxId, state] of this.sandboxes) this.write(sandboxId, state);
    await this.writes.idle();
  }

  /** What the expiry sweeper deletes: stored batches past their retention. */
  swept(): Swept | undefined {
    const store = this.options.store;
    return store && swept('app_requests', store.appRequests, this.retentionMs);
  }

  private number(sandboxId: string, state: SandboxRequests, record: ForwardRecord): void {
    record.seq = ++state.seq;
    state.ended.push(record);
    if (state.ended.length > this.perSandbox) this.forget(state, state.ended.shift()!);
    if (!this.options.store) return;
    state.unwritten.push(record);
    if (state.unwritten.length >= this.batchSize) this.write(sandboxId, state);
    else this.timer ??= setTimeout(() => void this.flush(), this.flushMs).unref();
  }

  private forget(state: SandboxRequests, gone: ForwardRecord): void {
    if (state.byId.get(gone.request_id) === gone) state.byId.delete(gone.request_id);
  }

  /** Hands the sandbox's unwritten requests to its write chain, in batches; failures are logged. */
  private write(sandboxId: string, state: SandboxRequests): void {
    const store = this.options.store;
    if (!store) return;
    // Past what the store keeps anyway (a store that did not answer for a while).
    const pending = state.unwritten.splice(0).slice(-this.perSandbox);
    for (let i = 0; i < pending.length; i += this.batchSize) {
      const requests = pending.slice(i, i + this.batchSize);
      const first = requests[0]!.seq;
      const last = requests.at(-1)!.seq;
      const expires = Date.now() + this.retentionMs;
      void this.writes
        .run(sandboxId, async () => {
          const id = `${sandboxId}_${first}`;
          await store.appRequests.insert({
            id,
            sandbox_id: sandboxId,
            first_seq: first,
            last_seq: last,
            requests,
            ...expiresAt(expires),
          });
          state.batches.push({ id, last_seq: last });
          // The newest `perSandbox` are kept: a batch wholly older than them goes.
          while (state.batches.length && state.batches[0]!.last_seq <= last - this.perSandbox)
            await store.appRequests.delete(state.batches.shift()!.id);
        })
        .catch((err: unknown) =>
          this.options.logger?.error(
            { err, sandbox_id: sandboxId, seqs: `${first}-${last}` },
            'timeline: could not store app requests',
          ),
        );
    }
  }

  /**
   * The sandbox's last stored seq and batches, read once (after any write of it still under way, so a
   * sandbox forgotten and seen again continues its numbers); requests that ended meanwhile are numbered
   * then. A failed read is tried again by the next request's end or flush.
   */
  private load(sandboxId: string, state: SandboxRequests): void {
    const store = this.options.store!;
    state.loading = this.writes
      .run(sandboxId, async () => {
        const batches = await store.appRequests.findBy('sandbox_id', sandboxId);
        batches.sort((a, b) => a.last_seq - b.last_seq);
        state.batches = batches.map((batch) => ({ id: batch.id, last_seq: batch.last_seq }));
        state.seq = Math.max(state.seq, batches.at(-1)?.last_seq ?? 0);
        state.numbered = true;
        for (const record of state.waiting.splice(0)) this.number(sandboxId, state, record);
      })
      .catch((err: unknown) => {
        state.loading = undefined;
        this.options.logger?.error(
          { err, sandbox_id: sandboxId },
          'timeline: could not read stored app requests',
        );
      });
  }

  private stateOf(sandboxId: string): SandboxRequests {
    let state = this.sandboxes.get(sandboxId);
    if (state) {
      // Most recently written last, so the first key is the one to drop when full.
      this.sandboxes.delete(sandboxId);
    } else {
      state = {
        seq: 0,
        numbered: !this.options.store,
        waiting: [],
        ended: [],
        inFlight: new Map(),
        byId: new Map(),
        unwritten: [],
        batches: [],
      };
      while (this.sandboxes.size >= this.maxSandboxes) {
        const [oldest, dropped] = this.sandboxes.entries().next().value!;
        // What it has not written yet still goes to the store.
        this.write(oldest, dropped);
        this.sandboxes.delete(oldest);
      }
    }
    if (!state.numbered && !state.loading) this.load(sandboxId, state);
    this.sandboxes.set(sandboxId, state);
    return state;
  }
}
