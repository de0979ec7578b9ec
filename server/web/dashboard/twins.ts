import Boom from '@hapi/boom';
import type { SandboxRecord } from '../../store/records.ts';
import type { TwinDescriptor } from '../../twins/contract.ts';
import { TwinAdminError, type TwinAdminClient, type TwinAdminReach } from '../../twins/kit/admin-client.ts';
import type { FaultRule } from '../../twins/runtime/faults.ts';
import { twinDescriptors } from '../../twins/descriptors.ts';
import { apiError, badRequest, notFound } from '../../errors.ts';
import type { InspectorData } from './views/inspector.ts';

/** Requests a page of the inspector shows, and the most a live follow fetches at once. */
export const REQUESTS_PER_PAGE = 50;

/** Why a twin cannot be inspected, as a person should read it. */
export class TwinUnavailable extends Error {}

/**
 * The twin inspector's access to a sandbox's twins: every read and action goes through the twin's own
 * admin API, with the sandbox's `twin_admin_token`, so the owner's session (checked by the routes)
 * stands in for that token and the token never reaches the browser.
 */
export class TwinInspector {
  constructor(
    /** A client of a sandbox's twin wherever it runs; absent (no deploy engine), none is running. */
    private readonly reach: TwinAdminReach | undefined,
    private readonly descriptors: ReadonlyMap<string, TwinDescriptor> = twinDescriptors,
  ) {}

  /** The twin's name as the sandbox knows it, or 404 as for a missing page. */
  checkTwin(sandbox: SandboxRecord, twin: string): void {
    if (!(twin in sandbox.twins) && !sandbox.twin_names.includes(twin)) {
      throw notFound(`Sandbox ${sandbox.id} has no twin ${twin}.`);
    }
  }

  private async client(sandbox: SandboxRecord, twin: string): Promise<TwinAdminClient> {
    this.checkTwin(sandbox, twin);
    if (sandbox.status !== 'ready') {
      throw new TwinUnavailable(
        sandbox.status === 'queued' || sandbox.status === 'building'
          ? `The ${twin} twin starts with the app: this sandbox is ${sandbox.status}.`
          : `The ${twin} twin is not running: this sandbox is ${sandbox.status}.`,
      );
    }
    const client = await this.reach?.(sandbox, twin);
    if (!client) throw new TwinUnavailable(`The ${twin} twin cannot be reached from this Twinbox now.`);
    return client;
  }

  /** Everything the inspector page shows, read at once. */
  async read(sandbox: SandboxRecord, twin: string, before?: number): Promise<InspectorData> {
    const client = await this.client(sandbox, twin);
    return twinCall(async () => {
      const [state, page, webhooks, faults] = await Promise.all([
        client.state(),
        client.requestPage({ limit: REQUESTS_PER_PAGE, ...(before !== undefined ? { before } : {}) }),
        client.webhooks(),
        client.faults(),
      ]);
      const descriptor = this.descriptors.get(twin);
      return {
        summary: descriptor?.summarize?.(state.state),
        requests: { entries: page.requests, hasMore: page.has_more, lastId: page.last_id },
        target: webhooks.target,
        deliveries: webhooks.deliveries,
        faults: faults.faults,
      };
    });
  }

  /** Requests logged after `after`, for the page following the log. */
  async requestsAfter(sandbox: SandboxRecord, twin: string, after: number) {
    const client = await this.client(sandbox, twin);
    const page = await twinCall(() => client.requestPage({ after, limit: REQUESTS_PER_PAGE }));
    return { entries: page.requests, lastId: page.last_id, hasMore: page.has_more };
  }

  async reset(sandbox: SandboxRecord, twin: string): Promise<unknown> {
    const client = await this.client(sandbox, twin);
    return twinCall(() => client.reset());
  }

  async addFault(sandbox: SandboxRecord, twin: string, rule: Omit<FaultRule, 'id'>): Promise<unknown> {
    const client = await this.client(sandbox, twin);
    return twinCall(() => client.addFault(rule));
  }

  async clearFaults(sandbox: SandboxRecord, twin: string): Promise<unknown> {
    const client = await this.client(sandbox, twin);
    return twinCall(() => client.clearFaults());
  }

  async redeliver(sandbox: SandboxRecord, twin: string, delivery: number): Promise<unknown> {
    const client = await this.client(sandbox, twin);
    return twinCall(() => client.redeliver(delivery));
  }
}

/**
 * A twin's refusal (4xx: a bad fault rule, an unknown delivery) reaches the visitor with the twin's own
 * `detail`; a twin that does not answer is a 503, never a 500.
 */
async function twinCall<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call();
  } catch (error) {
    if (error instanceof TwinAdminError) {
      const detail = (error.body as { detail?: unknown } | null)?.detail;
      const text = typeof detail === 'string' ? detail : `the twin answered ${error.status}`;
      if (error.status === 404) throw notFound(`The twin says: ${text}.`);
      if (error.status >= 400 && error.status < 500) throw badRequest(`The twin refused: ${text}.`);
    }
    if (Boom.isBoom(error)) throw error;
    throw apiError(
      503,
      `The twin did not answer (${(error as Error).message}). Try again in a moment.`,
      'twin_unavailable',
    );
  }
}
