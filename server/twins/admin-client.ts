import type { FaultRule } from './faults.ts';
import type { RequestLogEntry } from './request-log.ts';
import type { WebhookDelivery } from './webhooks.ts';

export class TwinAdminError extends Error {
  constructor(
    readonly status: number,
    readonly body: unknown,
  ) {
    super(
      `twin admin API answered ${status}: ${(body as { detail?: string })?.detail ?? JSON.stringify(body)}`,
    );
  }
}

/** Typed client of one instance's admin API (docs/twins.md, "Admin API"). */
export class TwinAdminClient {
  constructor(
    readonly adminUrl: string,
    private readonly adminToken: string,
  ) {}

  protected async request<T>(method: string, path: string, body?: unknown): Promise<T> {
    const response = await fetch(`${this.adminUrl}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${this.adminToken}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    const parsed: unknown = text ? JSON.parse(text) : null;
    if (!response.ok) throw new TwinAdminError(response.status, parsed);
    return parsed as T;
  }

  state<S = unknown>(): Promise<{ twin: string; state: S }> {
    return this.request('GET', '/state');
  }
  reset(): Promise<{ reset: true }> {
    return this.request('POST', '/reset');
  }
  seed(doc: unknown): Promise<{ seeded: true }> {
    return this.request('POST', '/seed', doc);
  }
  async requests(limit?: number): Promise<RequestLogEntry[]> {
    return (
      await this.request<{ requests: RequestLogEntry[] }>('GET', `/requests${limit ? `?limit=${limit}` : ''}`)
    ).requests;
  }
  addFault(rule: Omit<FaultRule, 'id'>): Promise<FaultRule> {
    return this.request('POST', '/faults', rule);
  }
  clearFaults(): Promise<unknown> {
    return this.request('DELETE', '/faults');
  }
  setWebhookTarget(target: { url: string; secret?: string; events?: string[] }): Promise<unknown> {
    return this.request('PUT', '/webhooks/target', target);
  }
  async deliveries(): Promise<WebhookDelivery[]> {
    return (await this.request<{ deliveries: WebhookDelivery[] }>('GET', '/webhooks')).deliveries;
  }
  /** Delivers an arbitrary event, signed as the vendor would, to the configured target. */
  deliverWebhook(event: string, payload: Record<string, unknown>): Promise<WebhookDelivery> {
    return this.request('POST', '/webhooks/deliveries', { event, payload });
  }
  redeliver(id: number): Promise<WebhookDelivery> {
    return this.request('POST', `/webhooks/deliveries/${id}/redeliver`);
  }
}
