import type { ForwardedRequest, ForwardObserver } from '../router/index.ts';
import { pathOnly } from './entries.ts';

/** One request the router forwarded into a sandbox, to its app or (from outside) to one of its twins. */
export interface ForwardRecord {
  /** 1, 2, 3... per sandbox in the order requests ended; 0 while in flight. */
  seq: number;
  request_id: string;
  /** `app`, or the twin's name for a request sent to a twin through the router. */
  target: string;
  method: string;
  path: string;
  /** Names of the query parameters; their values are not kept (they may carry secrets). */
  query_keys: string[];
  started_at: number;
  /** Undefined while in flight. */
  ended_at?: number;
  /** Undefined when no answer reached the client (it went away, or the backend never answered). */
  status?: number;
  /** The trace id of the W3C `traceparent` the client sent, so a traced app's twin calls can be tied. */
  trace_id?: string;
}

interface SandboxRequests {
  seq: number;
  /** Ended requests, in `seq` order, at most `perSandbox`. */
  ended: ForwardRecord[];
  inFlight: Map<string, ForwardRecord>;
  byId: Map<string, ForwardRecord>;
}

export interface AppRequestRecorderOptions {
  /** Ended requests kept per sandbox (default 2,000). */
  perSandbox?: number;
  /** Sandboxes kept (default 1,000); the one written to least recently goes first. */
  sandboxes?: number;
}

const TRACEPARENT = /^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$/;

/** The trace id of a `traceparent` header value, if it is a well-formed one. */
export function traceIdOf(traceparent: unknown): string | undefined {
  if (typeof traceparent !== 'string') return undefined;
  return TRACEPARENT.exec(traceparent.trim().toLowerCase())?.[1];
}

/**
 * Keeps, in Twinbox's memory, the last requests the router forwarded into each sandbox: what the
 * timeline shows as `app_request` and what it ties twin calls to. Bounded per sandbox and in sandboxes;
 * lost when Twinbox restarts (docs/timeline.md says so).
 */
export class AppRequestRecorder {
  private readonly sandboxes = new Map<string, SandboxRequests>();
  private readonly perSandbox: number;
  private readonly maxSandboxes: number;

  constructor(options: AppRequestRecorderOptions = {}) {
    this.perSandbox = options.perSandbox ?? 2_000;
    this.maxSandboxes = options.sandboxes ?? 1_000;
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
      trace_id: traceIdOf(request.headers.traceparent),
    };
    state.inFlight.set(record.request_id, record);
    state.byId.set(record.request_id, record);
    return ({ status, endedAt }) => {
      state.inFlight.delete(record.request_id);
      record.ended_at = endedAt;
      if (status !== undefined) record.status = status;
      record.seq = ++state.seq;
      state.ended.push(record);
      if (state.ended.length > this.perSandbox) {
        const gone = state.ended.shift()!;
        if (state.byId.get(gone.request_id) === gone) state.byId.delete(gone.request_id);
      }
    };
  };

  /** Ended requests of a sandbox after `seq`, in the order they ended. */
  endedAfter(sandboxId: string, seq: number): ForwardRecord[] {
    const ended = this.sandboxes.get(sandboxId)?.ended ?? [];
    // Seqs are consecutive within what is kept, so the start is found by arithmetic.
    const first = ended[0]?.seq ?? 0;
    return ended.slice(Math.max(0, seq - first + 1));
  }

  /** The seq of the last request that ended (0 for none): lower than a reader's position after a restart. */
  lastSeq(sandboxId: string): number {
    return this.sandboxes.get(sandboxId)?.seq ?? 0;
  }

  /** Every request kept for a sandbox, ended or in flight (in flight ones have no `ended_at`). */
  all(sandboxId: string): ForwardRecord[] {
    const state = this.sandboxes.get(sandboxId);
    return state ? [...state.ended, ...state.inFlight.values()] : [];
  }

  find(sandboxId: string, requestId: string): ForwardRecord | undefined {
    return this.sandboxes.get(sandboxId)?.byId.get(requestId);
  }

  private stateOf(sandboxId: string): SandboxRequests {
    let state = this.sandboxes.get(sandboxId);
    if (state) {
      // Most recently written last, so the first key is the one to drop when full.
      this.sandboxes.delete(sandboxId);
    } else {
      state = { seq: 0, ended: [], inFlight: new Map(), byId: new Map() };
      while (this.sandboxes.size >= this.maxSandboxes) {
        const oldest = this.sandboxes.keys().next().value!;
        this.sandboxes.delete(oldest);
      }
    }
    this.sandboxes.set(sandboxId, state);
    return state;
  }
}
