import type { SandboxEventRecord, SandboxRecord } from '../store/records.ts';
import type { TwinDescriptor } from '../twins/contract.ts';
import type { RequestLogEntry } from '../twins/runtime/request-log.ts';
import type { WebhookDelivery } from '../twins/runtime/webhooks.ts';
import type { ForwardRecord } from './app-requests.ts';
import {
  iso,
  pathOnly,
  SOURCE_APP,
  SOURCE_TWINBOX,
  twinSource,
  type Feed,
  type Positioned,
  type TimelineEntry,
} from './entries.ts';
import { originOfCall, requestOfDelivery, type DeliveryTimes } from './linking.ts';

/**
 * Builders of the timeline's feeds from what each source holds. Pure: the service reads the sources
 * and passes what they gave, so merging and linking are tested without any I/O.
 */

export const appEntryId = (requestId: string) => `app:${requestId}`;
export const callEntryId = (twin: string, id: number) => `twin:${twin}:call:${id}`;
export const changeEntryId = (twin: string, id: number) => `twin:${twin}:change:${id}`;
export const deliveryEntryId = (twin: string, id: number) => `twin:${twin}:webhook:${id}`;

/** How long a first attempt still on the wire is waited for: an attempt may take at most 10 s. */
export const DELIVERY_WAIT_MS = 15_000;

/** Twinbox's events, after `after`; the sandbox's creation is position 0. */
export function eventFeed(sandbox: SandboxRecord, records: SandboxEventRecord[], after: number): Feed {
  const entries: Positioned[] = [];
  if (after < 0) {
    const what = sandbox.pr_url ?? `${sandbox.repo} branch ${sandbox.branch ?? '?'}`;
    entries.push({
      position: 0,
      atMs: Date.parse(sandbox.created_at),
      entry: {
        id: 'event:0',
        at: sandbox.created_at,
        kind: 'status',
        source: SOURCE_TWINBOX,
        summary: `Created for ${what}`,
        detail: { to: 'queued' },
      },
    });
  }
  for (const record of records) {
    if (record.seq <= after) continue;
    const entry: TimelineEntry = {
      id: `event:${record.seq}`,
      at: record.at,
      kind: record.kind,
      source: SOURCE_TWINBOX,
      summary: record.summary,
    };
    if (record.duration_ms !== undefined) entry.duration_ms = record.duration_ms;
    if (record.detail) entry.detail = record.detail;
    entries.push({ position: record.seq, atMs: Date.parse(record.at), entry });
  }
  return { key: 'events', entries };
}

export interface TwinTraffic {
  twin: string;
  descriptor: TwinDescriptor | undefined;
  /** Request log entries after the reader's position, oldest first. */
  calls: RequestLogEntry[];
  /** All the deliveries the twin keeps. */
  deliveries: WebhookDelivery[];
}

/**
 * The app's requests that ended after `after`. A request a twin's webhook delivery became (through the
 * router) is marked as caused by that delivery.
 */
export function appFeed(
  ended: ForwardRecord[],
  after: number,
  traffic: TwinTraffic[],
  all: readonly ForwardRecord[],
): Feed {
  const webhookOf = new Map<string, string>();
  for (const { twin, deliveries } of traffic)
    for (const delivery of deliveries) {
      const request = requestOfDelivery(deliveryTimes(delivery), all);
      if (request) webhookOf.set(request.request_id, deliveryEntryId(twin, delivery.id));
    }
  const entries: Positioned[] = [];
  for (const request of ended) {
    if (request.seq <= after || request.target !== 'app') continue;
    const answered = request.status === undefined ? 'no answer' : String(request.status);
    const entry: TimelineEntry = {
      id: appEntryId(request.request_id),
      at: iso(request.started_at),
      kind: 'app_request',
      source: SOURCE_APP,
      summary: `${request.method} ${request.path} → ${answered}`,
      method: request.method,
      path: request.path,
      request_id: request.request_id,
    };
    if (request.status !== undefined) entry.status = request.status;
    if (request.ended_at !== undefined) entry.duration_ms = request.ended_at - request.started_at;
    if (request.query_keys.length) entry.detail = { query_keys: request.query_keys };
    const webhook = webhookOf.get(request.request_id);
    if (webhook) {
      entry.caused_by = webhook;
      entry.link = 'inferred';
    }
    entries.push({ position: request.seq, atMs: request.started_at, entry });
  }
  return { key: 'app', entries };
}

function deliveryTimes(delivery: WebhookDelivery): DeliveryTimes {
  const attempts = (delivery.attempts ?? []).map((attempt) => {
    const startMs = Date.parse(attempt.at);
    return { startMs, endMs: startMs + attempt.duration_ms };
  });
  let path = '/';
  try {
    path = new URL(delivery.url).pathname;
  } catch {
    // a target that is not a URL leads nowhere the router saw
  }
  return { attempts, path };
}

/**
 * A twin's calls after position `after`, each followed by the state change it made. A call at log id
 * N has position 2N, its change 2N+1, so a page can end between the two.
 */
export function callFeed(traffic: TwinTraffic, after: number, requests: readonly ForwardRecord[]): Feed {
  const { twin, descriptor } = traffic;
  const entries: Positioned[] = [];
  for (const call of traffic.calls) {
    const endMs = Date.parse(call.at);
    const startMs = endMs - call.duration_ms;
    const path = pathOnly(call.path);
    const origin = originOfCall(
      { startMs, endMs, request_id: call.request_id, traceparent: call.traceparent },
      requests,
    );
    const callId = callEntryId(twin, call.id);
    const entry: TimelineEntry = {
      id: callId,
      at: iso(startMs),
      kind: 'twin_call',
      source: twinSource(twin),
      summary:
        `${call.method} ${path} → ${call.status}` +
        (call.fault ? ` (injected fault ${call.fault})` : '') +
        (origin?.kind === 'outside' ? ', sent from outside the sandbox' : ''),
      status: call.status,
      duration_ms: call.duration_ms,
      method: call.method,
      path,
      detail: {
        log_id: call.id,
        ...(call.fault ? { fault: call.fault } : {}),
        ...(origin?.kind === 'outside'
          ? { from: 'outside', router_request_id: origin.request.request_id }
          : {}),
      },
    };
    if (origin?.kind === 'app') {
      entry.request_id = origin.request.request_id;
      entry.caused_by = appEntryId(origin.request.request_id);
      entry.link = origin.link;
    }
    if (2 * call.id > after) entries.push({ position: 2 * call.id, atMs: startMs, entry });
    let change: string | undefined;
    try {
      change = descriptor?.describeChange?.(call);
    } catch {
      // A describer that trips on an odd entry costs that line, never the page.
    }
    if (change && 2 * call.id + 1 > after) {
      entries.push({
        position: 2 * call.id + 1,
        atMs: endMs,
        entry: {
          id: changeEntryId(twin, call.id),
          at: call.at,
          kind: 'state_change',
          source: twinSource(twin),
          summary: change,
          ...(entry.request_id ? { request_id: entry.request_id } : {}),
          caused_by: callId,
          link: 'direct',
        },
      });
    }
  }
  return { key: `calls:${twin}`, entries };
}

/**
 * A twin's webhook deliveries after delivery id `after`, each once its first attempt is over (its
 * entry tells that attempt, or the latest when read later, and whether retries are still due). The
 * outbox lists a delivery from its first attempt on, in id order; the feed stops at one still on the
 * wire, so a later one cannot overtake it (unless it has been on the wire longer than any attempt may).
 */
export function deliveryFeed(traffic: TwinTraffic, after: number, now: number): Feed {
  const { twin } = traffic;
  const sorted = [...traffic.deliveries].sort((a, b) => a.id - b.id);
  const entries: Positioned[] = [];
  for (const delivery of sorted) {
    if (delivery.id <= after) continue;
    const startMs = Date.parse(delivery.delivered_at);
    const attempts = delivery.attempts?.length ?? 1;
    if (attempts === 0) {
      if (now - startMs < DELIVERY_WAIT_MS) break;
      continue;
    }
    const { path } = deliveryTimes(delivery);
    const name = delivery.action ? `${delivery.event}.${delivery.action}` : delivery.event;
    const answer =
      delivery.status_code !== null
        ? String(delivery.status_code)
        : `no answer (${delivery.error ?? 'unknown error'})`;
    const tries = attempts > 1 ? ` after ${attempts} attempts` : '';
    const retrying = delivery.state === 'pending' ? ', will retry' : '';
    let target = delivery.url;
    try {
      const url = new URL(delivery.url);
      target = `${url.origin}${url.pathname}`;
    } catch {
      // shown as configured
    }
    entries.push({
      position: delivery.id,
      atMs: startMs,
      entry: {
        id: deliveryEntryId(twin, delivery.id),
        at: delivery.delivered_at,
        kind: 'webhook',
        source: twinSource(twin),
        summary: `${name} webhook → app: ${answer}${tries}${retrying}`,
        ...(delivery.status_code !== null ? { status: delivery.status_code } : {}),
        duration_ms: delivery.duration_ms,
        method: 'POST',
        path,
        detail: {
          event: delivery.event,
          ...(delivery.action ? { action: delivery.action } : {}),
          target,
          state: delivery.state,
          attempts,
          ...(delivery.error ? { error: delivery.error } : {}),
          ...(delivery.redelivery_of !== undefined ? { redelivery_of: delivery.redelivery_of } : {}),
        },
      },
    });
  }
  return { key: `hooks:${twin}`, entries };
}

/** Where to ask a twin's log from, for a reader at call position `position`. */
export function callLogAfter(position: number): number {
  return Math.max(0, Math.ceil(position / 2) - 1);
}
