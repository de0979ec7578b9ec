import { request as httpRequest } from 'node:http';
import { ADMIN_PREFIX } from '../runtime/admin.ts';
import type { FaultRule } from '../runtime/faults.ts';
import type { RequestLogPage, RequestLogEntry, RequestLogQuery } from '../runtime/request-log.ts';
import type { WebhookDelivery } from '../runtime/webhooks.ts';

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

export interface TwinAdminClientOptions {
  /**
   * Reach the instance over this Unix socket instead of the network: how Twinbox talks to a sandbox's
   * twins, which listen in the sandbox's pod (server/deploy/pods/pods.ts, `Pod.twinSocket`).
   */
  socketPath?: string;
  /** Give up on an answer after this long (default 10 s): a wedged pod must not hold a page forever. */
  timeoutMs?: number;
}

/** The parts of a sandbox record a reach needs (server/store/records.ts, `SandboxRecord`). */
export interface TwinHolder {
  id: string;
  twin_admin_token: string;
  /** The runner holding it, as the caller read it; left out, the reach reads the record itself. */
  runner_id?: string | null;
}

/**
 * A client of a sandbox's twin wherever the sandbox runs (over its pod's socket here, or through the
 * runner holding it: server/runners/twins.ts); undefined when it runs nowhere this process can reach.
 * What the twin inspector and the timeline read twins through, so they need not know where pods are.
 */
export type TwinAdminReach = (
  sandbox: TwinHolder,
  twin: string,
  options?: { timeoutMs?: number },
) => Promise<TwinAdminClient | undefined>;

/** The admin API's answer to GET /webhooks. */
export interface WebhookListing {
  target: { url: string; events: string[] } | null;
  deliveries: WebhookDelivery[];
}

/**
 * Typed client of one instance's admin API (docs/twins.md, "Admin API"), over the network (`adminUrl`)
 * or, for Twinbox itself, over the twin's Unix socket in its sandbox's pod (`TwinAdminClient.overSocket`),
 * or, for a sandbox on another runner, through that runner's internal route (server/runners/twins.ts).
 * The timeline (server/timeline/) and the web pages' twin inspector read twins through it.
 */
export class TwinAdminClient {
  constructor(
    readonly adminUrl: string,
    private readonly adminToken: string,
    private readonly options: TwinAdminClientOptions = {},
  ) {}

  /**
   * A client of the twin listening on `socketPath` (for a live sandbox: `Pod.twinSocket(name)`, or the
   * router's `SandboxEndpoints.socketFor(id, { kind: 'twin', name })`), with the sandbox's
   * `twin_admin_token`.
   */
  static overSocket(socketPath: string, adminToken: string, timeoutMs?: number): TwinAdminClient {
    return new TwinAdminClient(`http://twin${ADMIN_PREFIX}`, adminToken, { socketPath, timeoutMs });
  }

  protected async request<T>(method: string, path: string, body?: unknown): Promise<T> {
    const { status, text } = await this.send(
      method,
      path,
      body === undefined ? undefined : JSON.stringify(body),
    );
    let parsed: unknown = null;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      throw new TwinAdminError(status, { detail: `not JSON: ${text.slice(0, 200)}` });
    }
    if (status < 200 || status > 299) throw new TwinAdminError(status, parsed);
    return parsed as T;
  }

  /**
   * One call to the admin API (`path` under it, with its query), the JSON body as text and the answer
   * unread: how a runner passes on a call another process makes to one of its twins
   * (server/runners/routes.ts). Everything else uses the typed methods below.
   */
  send(method: string, path: string, body?: string): Promise<{ status: number; text: string }> {
    const headers: Record<string, string> = {
      authorization: `Bearer ${this.adminToken}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    };
    return this.options.socketPath
      ? this.overSocket(method, path, headers, body)
      : this.overNetwork(method, path, headers, body);
  }

  private async overNetwork(
    method: string,
    path: string,
    headers: Record<string, string>,
    body: string | undefined,
  ): Promise<{ status: number; text: string }> {
    const response = await fetch(`${this.adminUrl}${path}`, {
      method,
      headers,
      body,
      signal: AbortSignal.timeout(this.options.timeoutMs ?? 10_000),
    });
    return { status: response.status, text: await response.text() };
  }

  private overSocket(
    method: string,
    path: string,
    headers: Record<string, string>,
    body: string | undefined,
  ): Promise<{ status: number; text: string }> {
    const url = new URL(`${this.adminUrl}${path}`);
    return new Promise((resolve, reject) => {
      const req = httpRequest(
        {
          socketPath: this.options.socketPath,
          method,
          path: `${url.pathname}${url.search}`,
          headers: {
            ...headers,
            host: 'twin',
            ...(body ? { 'content-length': Buffer.byteLength(body) } : {}),
          },
          // One connection a call: these calls are few, and a pooled socket would outlive its pod.
          agent: false,
          timeout: this.options.timeoutMs ?? 10_000,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }),
          );
          res.on('error', reject);
        },
      );
      req.on('timeout', () => req.destroy(new Error('the twin did not answer in time')));
      req.on('error', reject);
      req.end(body);
    });
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
  /** The newest `limit` entries of the request log (all it keeps, 500, by default), oldest first. */
  async requests(limit?: number): Promise<RequestLogEntry[]> {
    return (await this.requestPage(limit ? { limit } : {})).requests;
  }
  /** A page of the request log: `after` an id (following it), or `before` one (paging back). */
  requestPage(query: RequestLogQuery = {}): Promise<RequestLogPage> {
    const params = new URLSearchParams();
    for (const [name, value] of Object.entries(query))
      if (value !== undefined) params.set(name, String(value));
    const search = params.toString();
    return this.request('GET', `/requests${search ? `?${search}` : ''}`);
  }
  addFault(rule: Omit<FaultRule, 'id'>): Promise<FaultRule> {
    return this.request('POST', '/faults', rule);
  }
  faults(): Promise<{ faults: FaultRule[] }> {
    return this.request('GET', '/faults');
  }
  clearFaults(): Promise<unknown> {
    return this.request('DELETE', '/faults');
  }
  setWebhookTarget(target: { url: string; secret?: string; events?: string[] }): Promise<unknown> {
    return this.request('PUT', '/webhooks/target', target);
  }
  clearWebhookTarget(): Promise<unknown> {
    return this.request('DELETE', '/webhooks/target');
  }
  webhooks(): Promise<WebhookListing> {
    return this.request('GET', '/webhooks');
  }
  async deliveries(): Promise<WebhookDelivery[]> {
    return (await this.webhooks()).deliveries;
  }
  /** Delivers an arbitrary event, signed as the vendor would, to the configured target. */
  deliverWebhook(event: string, payload: Record<string, unknown>): Promise<WebhookDelivery> {
    return this.request('POST', '/webhooks/deliveries', { event, payload });
  }
  redeliver(id: number): Promise<WebhookDelivery> {
    return this.request('POST', `/webhooks/deliveries/${id}/redeliver`);
  }
}
