import { traceIdOf, type ForwardRecord } from './app-requests.ts';
import type { LinkKind } from './entries.ts';

/**
 * Clocks are read to the millisecond on both sides (the router in Twinbox, the twin in the pod), and a
 * twin call's start is worked out from its end minus its duration: this much either way is the same
 * moment.
 */
export const SLACK_MS = 2;

/** What a twin call is known to belong to. */
export type CallOrigin =
  | { kind: 'app'; request: ForwardRecord; link: Exclude<LinkKind, 'direct'> }
  /** Sent to the twin through the router from outside the sandbox (a person, a test, the CLI). */
  | { kind: 'outside'; request: ForwardRecord }
  | undefined;

export interface CallTimes {
  startMs: number;
  endMs: number;
  request_id?: string;
  traceparent?: string;
}

const inFlightAt = (request: ForwardRecord, at: number) =>
  request.started_at <= at + SLACK_MS && (request.ended_at ?? Infinity) >= at - SLACK_MS;

/**
 * Ties a twin call to the app request that made it: exactly, when the call carries the router's
 * request id (or the trace of a request that came with a `traceparent`); by inference, when exactly one
 * app request of the sandbox was in flight as the call started. `requests` are the sandbox's
 * forwarded requests, ended and in flight.
 */
export function originOfCall(call: CallTimes, requests: readonly ForwardRecord[]): CallOrigin {
  if (call.request_id) {
    const named = requests.find((r) => r.request_id === call.request_id);
    if (named?.target === 'app') return { kind: 'app', request: named, link: 'header' };
    if (named) return { kind: 'outside', request: named };
    // An id Twinbox no longer holds (an old request, or one from before a restart): guessing from
    // what is in flight now could name the wrong request.
    return undefined;
  }
  const traceId = traceIdOf(call.traceparent);
  if (traceId) {
    const traced = requests.filter((r) => r.target === 'app' && r.trace_id === traceId);
    if (traced.length === 1) return { kind: 'app', request: traced[0]!, link: 'header' };
  }
  const candidates = requests.filter((r) => r.target === 'app' && inFlightAt(r, call.startMs));
  if (candidates.length === 1) return { kind: 'app', request: candidates[0]!, link: 'inferred' };
  return undefined;
}

export interface DeliveryTimes {
  /** When each attempt at the delivery was on the wire. */
  attempts: Array<{ startMs: number; endMs: number }>;
  /** The path the delivery was posted to. */
  path: string;
}

/**
 * The app request a webhook delivery became, when the twin delivered it through the router: the one
 * POST to the delivery's path that started while an attempt was under way. Undefined when there is none
 * (most deliveries reach the app inside its sandbox, not through the router) or more than one.
 */
export function requestOfDelivery(
  delivery: DeliveryTimes,
  requests: readonly ForwardRecord[],
): ForwardRecord | undefined {
  const matches = requests.filter(
    (r) =>
      r.target === 'app' &&
      r.method === 'POST' &&
      r.path === delivery.path &&
      delivery.attempts.some(
        (a) => r.started_at >= a.startMs - SLACK_MS && r.started_at <= a.endMs + SLACK_MS,
      ),
  );
  return matches.length === 1 ? matches[0] : undefined;
}
