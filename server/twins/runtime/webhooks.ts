import { randomUUID } from 'node:crypto';
import type { TwinWebhooks, WebhookAttempt, WebhookDelivery, WebhookTarget } from '../contract.ts';

export type { WebhookAttempt, WebhookDelivery, WebhookTarget };

/** Why a retry is made: Slack names it in `X-Slack-Retry-Reason`, others ignore it. */
export type RetryReason = 'http_error' | 'http_timeout' | 'connection_failed';

/**
 * Builds the vendor's signed headers for one attempt at a body (GitHub: X-Hub-Signature-256, Stripe:
 * Stripe-Signature, Slack: X-Slack-Signature). Called again for every retry, so timestamped signatures are
 * fresh; `attempt` is 1-based and `retryReason` says why the previous attempt failed.
 */
export type WebhookSigner = (args: {
  event: string;
  body: string;
  secret: string;
  guid: string;
  attempt: number;
  retryReason?: RetryReason;
}) => Record<string, string>;

export interface WebhookOutboxOptions {
  /**
   * Waits before each retry; a delivery is attempted at most `1 + length` times. Retried: no answer
   * (refused, reset, timed out), a 5xx or a 429. Any other answer is final: a 4xx says the receiver
   * refused this body (a bad signature, say), and the same body would be refused again.
   */
  retryDelaysMs?: number[];
  /** How long one attempt may take, answer included. */
  timeoutMs?: number;
}

/** 1 s, 5 s, 25 s: a receiver that is restarting or briefly overloaded gets about half a minute. */
export const DEFAULT_RETRY_DELAYS_MS = [1_000, 5_000, 25_000];
const DEFAULT_TIMEOUT_MS = 10_000;
const MAX_DELIVERIES = 200;
const RESPONSE_EXCERPT_CHARS = 512;

/**
 * The webhook sender of one twin instance: signs each event the vendor's way, sends it to the target,
 * retries with backoff, and keeps the last MAX_DELIVERIES deliveries with their attempts for the admin
 * API. Vendor-neutral: what is vendor-specific is the signer.
 */
export class WebhookOutbox implements TwinWebhooks {
  target: WebhookTarget | undefined;
  private deliveries: WebhookDelivery[] = [];
  private nextId = 1;
  /** Attempts on the wire and retries waiting for their time. */
  private readonly inflight = new Set<Promise<unknown>>();
  private readonly scheduled = new Map<NodeJS.Timeout, WebhookDelivery>();
  private closed = false;
  private readonly retryDelaysMs: number[];
  private readonly timeoutMs: number;

  constructor(
    private readonly sign: WebhookSigner,
    options: WebhookOutboxOptions = {},
  ) {
    this.retryDelaysMs = options.retryDelaysMs ?? DEFAULT_RETRY_DELAYS_MS;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  }

  list(): WebhookDelivery[] {
    return this.deliveries.map(copyDelivery);
  }

  get(id: number): WebhookDelivery | undefined {
    const found = this.deliveries.find((d) => d.id === id);
    return found && copyDelivery(found);
  }

  wants(event: string): boolean {
    const t = this.target;
    return !!t && (t.events.length === 0 || t.events.includes('*') || t.events.includes(event));
  }

  /**
   * Delivers one event to the target; resolves once the first attempt is over (answered or failed),
   * with the delivery as it stands then. Retries, if any, follow in the background.
   */
  deliver(
    event: string,
    payload: unknown,
    opts: { redeliveryOf?: number; force?: boolean } = {},
  ): Promise<WebhookDelivery | undefined> {
    const target = this.target;
    if (this.closed || !target || (!opts.force && !this.wants(event))) return Promise.resolve(undefined);
    const delivery: WebhookDelivery = {
      id: this.nextId++,
      guid: randomUUID(),
      event,
      action: actionOf(payload),
      url: target.url,
      delivered_at: new Date().toISOString(),
      status_code: null,
      duration_ms: 0,
      success: false,
      redelivery_of: opts.redeliveryOf,
      state: 'pending',
      attempts: [],
      payload,
    };
    this.deliveries.push(delivery);
    if (this.deliveries.length > MAX_DELIVERIES)
      this.deliveries.splice(0, this.deliveries.length - MAX_DELIVERIES);
    return this.track(this.attempt(delivery, target, JSON.stringify(payload))).then(() =>
      copyDelivery(delivery),
    );
  }

  /** Sends a past delivery's event again, as a new delivery (new GUID) with `redelivery_of` set. */
  redeliver(id: number): Promise<WebhookDelivery | undefined> {
    const original = this.deliveries.find((d) => d.id === id);
    if (!original) return Promise.resolve(undefined);
    return this.deliver(original.event, original.payload, { redeliveryOf: id, force: true });
  }

  /** Waits until nothing is on the wire or waiting to be retried (tests). */
  async idle(): Promise<void> {
    while (this.inflight.size || this.scheduled.size) {
      if (this.inflight.size) await Promise.allSettled([...this.inflight]);
      else await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  /**
   * Stops for good (the instance stops): retries not yet made are cancelled and their deliveries marked
   * failed; attempts on the wire are waited for. Deliveries are kept in memory only, so a restarted twin
   * does not resume them.
   */
  async close(): Promise<void> {
    this.closed = true;
    this.cancelRetries('the twin stopped before the retry was due');
    while (this.inflight.size) await Promise.allSettled([...this.inflight]);
  }

  /** Forgets the delivery history (reset); retries not yet made are cancelled. */
  clear(): void {
    this.cancelRetries('the twin was reset before the retry was due');
    this.deliveries = [];
  }

  private cancelRetries(reason: string): void {
    for (const [timer, delivery] of this.scheduled) {
      clearTimeout(timer);
      delivery.state = 'failed';
      delivery.error = reason;
      delete delivery.next_attempt_at;
    }
    this.scheduled.clear();
  }

  private track<T>(task: Promise<T>): Promise<T> {
    this.inflight.add(task);
    void task.finally(() => this.inflight.delete(task)).catch(() => {});
    return task;
  }

  private async attempt(delivery: WebhookDelivery, target: WebhookTarget, body: string): Promise<void> {
    const number = delivery.attempts.length + 1;
    const previous = delivery.attempts.at(-1);
    const record: WebhookAttempt = {
      attempt: number,
      at: new Date().toISOString(),
      status_code: null,
      duration_ms: 0,
    };
    const started = performance.now();
    try {
      const response = await fetch(target.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          ...this.sign({
            event: delivery.event,
            body,
            secret: target.secret,
            guid: delivery.guid,
            attempt: number,
            retryReason: previous && retryReason(previous),
          }),
        },
        body,
        // A receiver's redirect is its answer (vendors do not follow them either).
        redirect: 'manual',
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      record.status_code = response.status;
      record.response = await excerpt(response);
    } catch (error) {
      record.error = describeFailure(error, this.timeoutMs);
    }
    record.duration_ms = Math.round(performance.now() - started);
    delivery.attempts.push(record);
    delivery.status_code = record.status_code;
    delivery.duration_ms = record.duration_ms;
    delivery.success = record.status_code !== null && record.status_code >= 200 && record.status_code < 300;
    if (record.error) delivery.error = record.error;
    else delete delivery.error;
    if (delivery.success) {
      delivery.state = 'delivered';
      return;
    }
    const wait = this.retryDelaysMs[number - 1];
    if (wait === undefined || !retryable(record) || this.closed) {
      delivery.state = 'failed';
      return;
    }
    this.scheduleRetry(delivery, target, body, wait);
  }

  private scheduleRetry(delivery: WebhookDelivery, target: WebhookTarget, body: string, wait: number): void {
    delivery.next_attempt_at = new Date(Date.now() + wait).toISOString();
    const run = () => {
      this.scheduled.delete(timer);
      delete delivery.next_attempt_at;
      // A retry goes where the first attempt went, and only while that is still the target: a target
      // removed or pointed elsewhere meanwhile (DELETE, a PUT with another URL or secret) ends it.
      const now = this.target;
      if (!now || now.url !== target.url || now.secret !== target.secret) {
        delivery.state = 'failed';
        delivery.error = 'the webhook target changed before the retry was due';
        return;
      }
      void this.track(this.attempt(delivery, target, body));
    };
    const timer = setTimeout(run, wait);
    // A pending retry never keeps a process alive on its own.
    timer.unref();
    this.scheduled.set(timer, delivery);
  }
}

function actionOf(payload: unknown): string | undefined {
  return payload &&
    typeof payload === 'object' &&
    typeof (payload as { action?: unknown }).action === 'string'
    ? (payload as { action: string }).action
    : undefined;
}

function retryable(attempt: WebhookAttempt): boolean {
  return attempt.status_code === null || attempt.status_code >= 500 || attempt.status_code === 429;
}

function retryReason(attempt: WebhookAttempt): RetryReason {
  if (attempt.status_code !== null) return 'http_error';
  return attempt.error?.startsWith('no answer within') ? 'http_timeout' : 'connection_failed';
}

function describeFailure(error: unknown, timeoutMs: number): string {
  if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError'))
    return `no answer within ${timeoutMs} ms`;
  // fetch says only "fetch failed"; the reason (ECONNREFUSED, a reset...) is its cause.
  const cause =
    error instanceof Error ? (error.cause as { code?: string; message?: string } | undefined) : undefined;
  const message = error instanceof Error ? error.message : String(error);
  return cause?.code
    ? `${message}: ${cause.code}`
    : cause?.message
      ? `${message}: ${cause.message}`
      : message;
}

/** Reads at most the first RESPONSE_EXCERPT_CHARS characters of a body and drops the rest unread. */
async function excerpt(response: Response): Promise<string | undefined> {
  const reader = response.body?.getReader();
  if (!reader) return undefined;
  const decoder = new TextDecoder();
  let text = '';
  try {
    while (text.length < RESPONSE_EXCERPT_CHARS) {
      const { done, value } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
  } catch {
    // A body cut short is still an answer: its status stands.
  } finally {
    void reader.cancel().catch(() => {});
  }
  return text ? text.slice(0, RESPONSE_EXCERPT_CHARS) : undefined;
}

function copyDelivery(d: WebhookDelivery): WebhookDelivery {
  return { ...d, attempts: d.attempts.map((a) => ({ ...a })) };
}
