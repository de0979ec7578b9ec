import type { WebhookOutbox } from './webhooks.ts';

/** Thrown by drivers and the admin API for bad input: becomes a 4xx JSON body with `detail`. */
export class TwinInputError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = 'TwinInputError';
  }
}

/** An admin route a driver adds beyond the common ones (e.g. GitHub: push files to a repository). */
export type DriverAdminHandler = (
  method: string,
  subpath: string,
  body: unknown,
) => Promise<{ status: number; body: unknown } | undefined>;

/**
 * One running twin: answers vendor-API requests and owns its state. The instance (instance.ts) wraps it
 * with the port, the admin API, the request log, fault injection and persistence, which are the same for
 * every twin.
 */
export interface TwinDriver {
  handle(request: Request): Promise<Response>;
  envVars(): Record<string, string>;
  /** Secret values to mask in the request log wherever they appear. */
  secrets(): string[];
  /** JSON-serialisable full state, persisted and shown by GET /state. */
  snapshot(): unknown;
  /** Back to the seed the instance was started with; credentials and URLs stay. */
  reset(): Promise<void>;
  /** Adds the objects of a (validated) seed document to the current state. */
  applySeed(seed: unknown): Promise<void>;
  readonly webhooks: WebhookOutbox;
  /** Builds the body of an injected error in the vendor's shape. */
  faultResponse(kind: 'status' | 'rate_limit', status: number): Response;
  adminRoutes?: DriverAdminHandler;
  close(): Promise<void>;
}

export interface TwinFactory {
  name: string;
  description: string;
  envVarNames: string[];
  /** Validates a seed document; returns the normalised seed or throws TwinInputError. */
  validateSeed(seed: unknown): unknown;
  /** Starts a driver. `saved` is a previous `snapshot()` to restore instead of seeding. */
  create(opts: { baseUrl: string; seed: unknown; saved?: unknown }): Promise<TwinDriver>;
}
