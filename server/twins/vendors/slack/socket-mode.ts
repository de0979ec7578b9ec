/**
 * Slack's Socket Mode (https://api.slack.com/apis/socket-mode), as @slack/socket-mode and Bolt use it:
 * `apps.connections.open` hands out a one-time WebSocket URL, the app connects and gets `hello`, then
 * events, slash commands and interactions arrive as envelopes (`envelope_id`, `type`, `payload`,
 * `accepts_response_payload`) that the app acknowledges with `{envelope_id, payload?}`. An event not
 * acknowledged in time is sent again with `retry_attempt` and `retry_reason`. This module knows the
 * protocol only; what goes into a payload is the twin's (twin.ts, app-actions.ts).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import { json } from '../../runtime/http.ts';

export type EnvelopeType = 'events_api' | 'slash_commands' | 'interactive';

/** One envelope sent to the app, kept for the admin API (`GET /socket-mode`). */
export interface EnvelopeRecord {
  envelope_id: string;
  type: EnvelopeType;
  /** `pending` until acknowledged (`acked`), or until its time and retries ran out (`failed`). */
  state: 'pending' | 'acked' | 'failed';
  /** Sends of it: 1, then one more for each retry. */
  attempts: number;
  sent_at: string;
  acked_at?: string;
  /** What the app's ack carried (a slash command's response). */
  response?: unknown;
  error?: string;
  payload: unknown;
}

/** Slack's wait for an ack: an event is retried after it, a slash command fails (`operation_timeout`). */
export const ACK_TIMEOUT_MS = 3_000;
/** Pauses before each retry of an unacknowledged event: as the twin's HTTP webhooks (docs/twins.md). */
const RETRY_DELAYS_MS = [1_000, 5_000, 25_000];
/** How often the twin pings a connection: @slack/socket-mode reconnects without a ping in 30 s. */
const PING_INTERVAL_MS = 10_000;
/** Unused URLs kept at most (one-time each): a caller that never connects cannot grow the twin. */
const MAX_TICKETS = 50;
/** Envelopes kept for the admin API, newest last. */
const MAX_RECORDS = 200;

interface Connection {
  id: string;
  socket: WebSocket;
  /** Where the app opened the connection (`https://slack.com` when intercepted): its URLs are built there. */
  origin: string;
  opened_at: string;
}

interface Pending {
  record: EnvelopeRecord;
  message: Record<string, unknown>;
  retries: boolean;
  ackTimeoutMs: number;
  timer?: NodeJS.Timeout;
  settle: (acked: boolean) => void;
}

export class SocketModeHub {
  private readonly server = new WebSocketServer({ noServer: true, maxPayload: 1024 * 1024 });
  /** Tickets handed out by apps.connections.open, not used yet, with the origin they were asked at. */
  private readonly tickets = new Map<string, string>();
  private readonly connections: Connection[] = [];
  private readonly pending = new Map<string, Pending>();
  private readonly records: EnvelopeRecord[] = [];
  private readonly pinger: NodeJS.Timeout;
  private closed = false;

  constructor(private readonly appId: () => string) {
    this.pinger = setInterval(() => {
      for (const c of this.connections) c.socket.ping();
    }, PING_INTERVAL_MS);
    this.pinger.unref();
  }

  /** Whether an app is connected: events then go over Socket Mode instead of HTTP, as on Slack. */
  get open(): boolean {
    return this.connections.length > 0;
  }

  /** The origin of the newest connection (for the URLs put in payloads), when one is open. */
  get origin(): string | undefined {
    return this.connections.at(-1)?.origin;
  }

  /**
   * `apps.connections.open`'s answer: a one-time URL. Asked at Slack's own host (intercepted), it is
   * Slack's (`wss://wss-primary.slack.com/link/?ticket=...&app_id=...`), which the sandbox sends back to
   * the twin; else the caller's origin with the WebSocket scheme and the same path.
   */
  connectionUrl(origin: string): string {
    const ticket = randomUUID();
    this.tickets.set(ticket, origin);
    while (this.tickets.size > MAX_TICKETS) this.tickets.delete(this.tickets.keys().next().value!);
    const { protocol, host } = new URL(origin);
    const base = SLACK_HOSTS.test(host)
      ? 'wss://wss-primary.slack.com'
      : `${protocol === 'https:' ? 'wss' : 'ws'}://${host}`;
    return `${base}/link/?${new URLSearchParams({ ticket, app_id: this.appId() })}`;
  }

  /**
   * An upgrade to `/link/`: a ticket from apps.connections.open, used once, opens a connection, which
   * is greeted with `hello`. Anything else is refused (the runtime writes the refusal).
   */
  upgrade(request: IncomingMessage, socket: Duplex, head: Buffer, url: URL): Response | undefined {
    if (url.pathname !== '/link/' && url.pathname !== '/link') {
      return json(404, { ok: false, error: 'not_found' });
    }
    const ticket = url.searchParams.get('ticket') ?? '';
    const origin = this.tickets.get(ticket);
    if (this.closed || origin === undefined) {
      return json(401, { ok: false, error: 'invalid_ticket' });
    }
    if (!this.server.shouldHandle(request)) return json(400, { ok: false, error: 'not_a_websocket' });
    this.tickets.delete(ticket);
    this.server.handleUpgrade(request, socket, head, (ws) => this.accept(ws, origin));
    return undefined;
  }

  private accept(socket: WebSocket, origin: string): void {
    const connection: Connection = {
      id: randomBytes(6).toString('hex'),
      socket,
      origin,
      opened_at: new Date().toISOString(),
    };
    this.connections.push(connection);
    socket.on('message', (data, isBinary) => {
      if (!isBinary) this.onAck(data);
    });
    socket.on('error', () => socket.terminate());
    socket.on('close', () => {
      const at = this.connections.indexOf(connection);
      if (at >= 0) this.connections.splice(at, 1);
    });
    // The shape Slack greets a connection with (api.slack.com/apis/connections/socket-implement).
    socket.send(
      JSON.stringify({
        type: 'hello',
        num_connections: this.connections.length,
        debug_info: {
          host: `applink-twinbox-${connection.id}`,
          build_number: 1,
          approximate_connection_time: 18060,
        },
        connection_info: { app_id: this.appId() },
      }),
    );
  }

  /** An ack: `{envelope_id, payload?}`. Anything else from the app is ignored, as Slack does. */
  private onAck(data: RawData): void {
    let message: unknown;
    try {
      message = JSON.parse(data.toString());
    } catch {
      return;
    }
    if (!message || typeof message !== 'object') return;
    const { envelope_id: id, payload } = message as { envelope_id?: unknown; payload?: unknown };
    const pending = typeof id === 'string' ? this.pending.get(id) : undefined;
    if (!pending) return;
    clearTimeout(pending.timer);
    this.pending.delete(pending.record.envelope_id);
    pending.record.state = 'acked';
    pending.record.acked_at = new Date().toISOString();
    if (payload !== undefined && !isEmptyObject(payload)) pending.record.response = payload;
    pending.settle(true);
  }

  /**
   * Sends an envelope to the newest connection. Resolves once it is acknowledged (true) or given up
   * (false): an event after its retries (`retries`), anything else after one wait for its ack.
   */
  send(
    type: EnvelopeType,
    payload: unknown,
    opts: { acceptsResponsePayload: boolean; retries: boolean; ackTimeoutMs?: number },
  ): { record: EnvelopeRecord; settled: Promise<boolean> } {
    const record: EnvelopeRecord = {
      envelope_id: randomUUID(),
      type,
      state: 'pending',
      attempts: 0,
      sent_at: new Date().toISOString(),
      payload,
    };
    this.records.push(record);
    if (this.records.length > MAX_RECORDS) this.records.shift();
    let settle!: (acked: boolean) => void;
    const settled = new Promise<boolean>((resolve) => (settle = resolve));
    const message = {
      envelope_id: record.envelope_id,
      type,
      payload,
      accepts_response_payload: opts.acceptsResponsePayload,
    };
    const pending: Pending = {
      record,
      message,
      retries: opts.retries,
      ackTimeoutMs: opts.ackTimeoutMs ?? ACK_TIMEOUT_MS,
      settle,
    };
    this.pending.set(record.envelope_id, pending);
    this.attempt(pending);
    return { record, settled };
  }

  private attempt(pending: Pending): void {
    const { record } = pending;
    const connection = this.connections.at(-1);
    if (this.closed || !connection) return this.fail(pending, 'no Socket Mode connection is open');
    const retry = record.attempts;
    record.attempts += 1;
    const message =
      record.type === 'events_api'
        ? { ...pending.message, retry_attempt: retry, retry_reason: retry ? 'timeout' : '' }
        : pending.message;
    connection.socket.send(JSON.stringify(message));
    pending.timer = setTimeout(() => {
      const delay = RETRY_DELAYS_MS[retry];
      if (!pending.retries || delay === undefined) {
        return this.fail(pending, `not acknowledged within ${pending.ackTimeoutMs} ms`);
      }
      pending.timer = setTimeout(() => this.attempt(pending), delay);
    }, pending.ackTimeoutMs);
  }

  private fail(pending: Pending, error: string): void {
    clearTimeout(pending.timer);
    this.pending.delete(pending.record.envelope_id);
    pending.record.state = 'failed';
    pending.record.error = error;
    pending.settle(false);
  }

  /** What the admin API shows: open connections and the envelopes sent, oldest first. */
  describe(): { connections: Array<{ id: string; opened_at: string }>; envelopes: EnvelopeRecord[] } {
    return {
      connections: this.connections.map(({ id, opened_at }) => ({ id, opened_at })),
      envelopes: [...this.records],
    };
  }

  /** A reset forgets the envelopes sent (as it forgets webhook deliveries); connections stay. */
  clear(): void {
    for (const pending of [...this.pending.values()]) this.fail(pending, 'the twin was reset');
    this.records.length = 0;
    this.tickets.clear();
  }

  /** Closes every connection (1001, going away: @slack/socket-mode then reconnects) and stops retrying. */
  close(): void {
    this.closed = true;
    clearInterval(this.pinger);
    for (const pending of [...this.pending.values()]) this.fail(pending, 'the twin stopped');
    for (const c of [...this.connections]) c.socket.close(1001, 'twin stopping');
    this.server.close();
  }
}

/** Slack's own hosts, as an intercepted call reaches the twin. */
const SLACK_HOSTS = /^(?:[\w-]+\.)*slack\.com(?::443)?$/i;

const isEmptyObject = (v: unknown) =>
  !!v && typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length === 0;
