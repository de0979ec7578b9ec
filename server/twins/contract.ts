import type { TwinPresets } from './kit/presets.ts';
import type { RequestLogEntry } from './runtime/request-log.ts';
import type { WebhookOutbox } from './runtime/webhooks.ts';

/**
 * Thrown by drivers and the admin API for bad input: becomes a 4xx body (the vendor's shape on vendor
 * routes, `detail` on the admin API). `code` says what kind of bad input, so a driver can pick the
 * vendor's own error for it (e.g. `invalid_json`, `forbidden_key`, `too_large`).
 */
export class TwinInputError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly code?: string,
  ) {
    super(message);
    this.name = 'TwinInputError';
  }
}

/** Any method but GET, HEAD and OPTIONS may change state: the default of `TwinDriver.changesState`. */
export function changesStateByMethod(method: string): boolean {
  return method !== 'GET' && method !== 'HEAD' && method !== 'OPTIONS';
}

/** What a twin sees of a request before its body is read. */
export interface RequestHead {
  method: string;
  url: URL;
  headers: Headers;
}

/**
 * The verdict on a request's credentials, given before any of its body is read: `true` for valid
 * credentials, `'public'` for a route that needs none (or carries them in the body, which `handle` then
 * checks; such bodies are still capped), or the vendor's refusal to send without reading the body.
 */
export type Authorization = true | 'public' | Response;

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
  /** Checks credentials from the request line and headers only; see Authorization. */
  authorize(head: RequestHead): Authorization | Promise<Authorization>;
  /**
   * Whether a request (past `authorize`) may change the twin's state: the instance then makes the change
   * durable before answering, and reads do not pay for it. Default: `changesStateByMethod`. A twin whose
   * reads also change state says so here (GitHub: its OAuth authorize page can issue a code).
   */
  changesState?(head: RequestHead): boolean;
  handle(request: Request): Promise<Response>;
  /**
   * The vendor's error body for input refused before `handle` (400 bad keys or JSON, 413 too large) or
   * a TwinInputError thrown by it; `code` is the TwinInputError's code. 5xx only for our own bugs.
   */
  errorResponse(status: number, message: string, code?: string): Response;
  /** Whether form field values can be JSON documents the twin parses (checked for forbidden keys too). */
  readonly jsonFormFields?: boolean;
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

/**
 * A readable view of a twin's state for the dashboard's twin inspector: tables of plain text, which the
 * page renders the same way for every twin (and escapes).
 */
export interface TwinSummary {
  tables: Array<{
    title: string;
    columns: string[];
    rows: string[][];
    /** Rows left out to keep the page short (the newest are kept). */
    omitted: number;
  }>;
}

export interface TwinFactory {
  name: string;
  description: string;
  envVarNames: string[];
  /**
   * How a deployed app receives this twin's events (docs/twins.md, "Webhooks"): the app path they are
   * POSTed to unless `.github/twinbox.yml` names another (the vendor framework's own default where there
   * is one), and the variable of `envVarNames` holding the secret they are signed with, the one the
   * vendor's SDK verifies them with. Absent: the twin sends no events to apps.
   */
  webhook?: { path: string; secretVar: string };
  /** The state `GET /state` returns (the driver's snapshot), as tables; never throws on odd input. */
  summarize?(state: unknown): TwinSummary;
  /** Validates a seed document; returns the normalised seed or throws TwinInputError. */
  validateSeed(seed: unknown): unknown;
  /**
   * Starts a driver. `saved` is a previous `snapshot()` to restore instead of seeding. `baseUrl` is where
   * the app reaches the twin (inside its sandbox); `publicUrl` where a person's browser does (through the
   * router), for pages the twin serves to people, such as a hosted checkout. Outside a sandbox they are
   * the same, and `publicUrl` may be absent.
   */
  create(opts: { baseUrl: string; publicUrl?: string; seed: unknown; saved?: unknown }): Promise<TwinDriver>;
  /**
   * What a logged request changed in the twin's state, in one line ("customer cus_123 created"), for
   * the sandbox timeline; undefined when it changed nothing (a read, a refusal). Twinbox calls it on
   * entries read through the admin API, so it reads the entry only, never the twin.
   */
  describeChange?(entry: RequestLogEntry): string | undefined;
  /** The scenario presets the twin's folder ships (its `presets.ts`), listed by GET /scenarios. */
  presets?: TwinPresets;
}
