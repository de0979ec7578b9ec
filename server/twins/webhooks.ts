import { randomUUID } from 'node:crypto';

/** Where an instance delivers its webhooks; set by seed or admin API (the app's URL is known only later). */
export interface WebhookTarget {
  url: string;
  secret: string;
  /** Event names to deliver; `['*']` or empty means all. */
  events: string[];
}

export interface WebhookDelivery {
  id: number;
  guid: string;
  event: string;
  action?: string;
  url: string;
  delivered_at: string;
  status_code: number | null;
  duration_ms: number;
  success: boolean;
  error?: string;
  redelivery_of?: number;
  payload: unknown;
}

/** Builds the vendor's signed headers for a body (GitHub: X-Hub-Signature-256, Stripe: Stripe-Signature). */
export type WebhookSigner = (args: {
  event: string;
  body: string;
  secret: string;
  guid: string;
}) => Record<string, string>;

const MAX_DELIVERIES = 200;
const DELIVERY_TIMEOUT_MS = 10_000;

export class WebhookOutbox {
  target: WebhookTarget | undefined;
  private deliveries: WebhookDelivery[] = [];
  private nextId = 1;
  private inflight = new Set<Promise<unknown>>();

  constructor(private readonly sign: WebhookSigner) {}

  list(): WebhookDelivery[] {
    return [...this.deliveries];
  }

  get(id: number): WebhookDelivery | undefined {
    return this.deliveries.find((d) => d.id === id);
  }

  wants(event: string): boolean {
    const t = this.target;
    return !!t && (t.events.length === 0 || t.events.includes('*') || t.events.includes(event));
  }

  /** Delivers one event to the target; resolves once the receiver answered (or failed). */
  deliver(event: string, payload: unknown, opts: { redeliveryOf?: number; force?: boolean } = {}) {
    const target = this.target;
    if (!target || (!opts.force && !this.wants(event))) return Promise.resolve(undefined);
    const task = this.send(target, event, payload, opts.redeliveryOf);
    this.inflight.add(task);
    void task.finally(() => this.inflight.delete(task));
    return task;
  }

  redeliver(id: number): Promise<WebhookDelivery | undefined> {
    const original = this.get(id);
    if (!original) return Promise.resolve(undefined);
    return this.deliver(original.event, original.payload, { redeliveryOf: id, force: true });
  }

  /** Waits for deliveries in flight (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.inflight.size) await Promise.allSettled([...this.inflight]);
  }

  clear(): void {
    this.deliveries = [];
  }

  private async send(
    target: WebhookTarget,
    event: string,
    payload: unknown,
    redeliveryOf?: number,
  ): Promise<WebhookDelivery> {
    const guid = randomUUID();
    const body = JSON.stringify(payload);
    const action =
      payload && typeof payload === 'object' && typeof (payload as { action?: unknown }).action === 'string'
        ? (payload as { action: string }).action
        : undefined;
    const delivery: WebhookDelivery = {
      id: this.nextId++,
      guid,
      event,
      action,
      url: target.url,
      delivered_at: new Date().toISOString(),
      status_code: null,
      duration_ms: 0,
      success: false,
      redelivery_of: redeliveryOf,
      payload,
    };
    const started = performance.now();
    try {
      const response = await fetch(target.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          ...this.sign({ event, body, secret: target.secret, guid }),
        },
        body,
        signal: AbortSignal.timeout(DELIVERY_TIMEOUT_MS),
      });
      await response.arrayBuffer().catch(() => undefined);
      delivery.status_code = response.status;
      delivery.success = response.ok;
    } catch (error) {
      delivery.error = error instanceof Error ? error.message : String(error);
    }
    delivery.duration_ms = Math.round(performance.now() - started);
    this.deliveries.push(delivery);
    if (this.deliveries.length > MAX_DELIVERIES)
      this.deliveries.splice(0, this.deliveries.length - MAX_DELIVERIES);
    return delivery;
  }
}
