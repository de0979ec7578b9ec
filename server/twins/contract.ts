import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';

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

/** A verdict that lets the request in: `handle` is told which. */
export type Granted = Exclude<Authorization, Response>;

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
   * reads also change state says so here (GitHub: its OAuth authorize page can issue a code), and one
   * whose reads are POSTs too (Linear's GraphQL) tells them apart by `body`, the request's bytes.
   */
  changesState?(head: RequestHead, body: Buffer): boolean;
  /**
   * Answers a request that passed `authorize` (its verdict is `granted`) and the runtime's input screen,
   * both run once, at the runtime's door: a driver does not repeat them.
   */
  handle(request: Request, granted: Granted): Promise<Response>;
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
  readonly webhooks: TwinWebhooks;
  /** Builds the body of an injected error in the vendor's shape. */
  faultResponse(kind: 'status' | 'rate_limit', status: number): Response;
  adminRoutes?: DriverAdminHandler;
  /**
   * An HTTP upgrade (a WebSocket: Slack's Socket Mode) that reached the twin, on any of its doors (the
   * loopback port, the router's Unix socket, the pod's front door). The driver takes the socket and
   * answers undefined, or answers the refusal the runtime writes on it (then the socket is closed).
   * Without this hook every upgrade is refused. `url`'s path and query are the request's.
   */
  upgrade?(request: IncomingMessage, socket: Duplex, head: Buffer, url: URL): Response | undefined;
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

/** Whether `hostname` (lower case, no port) is named by a `hosts` pattern, where `*` is one DNS label. */
export function hostMatches(pattern: string, hostname: string): boolean {
  if (!pattern.includes('*')) return pattern === hostname;
  const want = pattern.split('.');
  const have = hostname.split('.');
  return want.length === have.length && want.every((label, i) => label === '*' || label === have[i]);
}

/**
 * What Twinbox knows of a twin without running one: its name, variables, hosts, seed schema, inspector
 * tables, timeline lines and presets (its folder's `descriptor.ts`). Twins run in pods, never in the main
 * process, which therefore imports descriptors only (server/twins/descriptors.ts): none of the drivers, the
 * engine or their libraries, which a process pays for at every start.
 */
export interface TwinDescriptor<Seed = unknown, Name extends string = string> {
  name: Name;
  description: string;
  envVarNames: string[];
  /**
   * The vendor's own host names that its SDKs call by default (`api.stripe.com`): inside a sandbox they
   * reach this twin over HTTPS, so an unmodified app talks to it (docs/twins.md, "The vendors' host
   * names"). A `*` stands for one label of any value (`*.okta.com`, an org's own host).
   */
  hosts: readonly string[];
  /**
   * Path prefixes of pages for a person's browser (Stripe's hosted Checkout, `/c/`): a link to them is
   * written with the twin's public URL in every answer, never the origin the request came to, since the
   * browser that follows it is outside the sandbox, not the caller (an app that reached `api.stripe.com`).
   */
  pages?: readonly string[];
  /**
   * How a deployed app receives this twin's events (docs/twins.md, "Webhooks"): the app path they are
   * POSTed to unless `.github/twinbox.yml` names another (the vendor framework's own default where there
   * is one), and the variable of `envVarNames` holding the secret they are signed with, the one the
   * vendor's SDK verifies them with. Absent: the twin sends no events to apps.
   */
  webhook?: { path: string; secretVar: string };
  /**
   * How many RSA keys (runtime/rsa-keys.ts) a start of this twin makes: the GitHub twin's App key, Clerk's
   * signing key. Twinbox makes them for a pod that must start the twin before it could make them itself
   * (deploy/pods/key-stock.ts), and gives them to it. Absent: none.
   */
  rsaKeys?: number;
  /** The state `GET /state` returns (the driver's snapshot), as tables; never throws on odd input. */
  summarize?(state: unknown): TwinSummary;
  /** Validates a seed document; returns the normalised seed or throws TwinInputError. */
  validateSeed(seed: unknown): Seed;
  /**
   * What a logged request changed in the twin's state, in one line ("customer cus_123 created"), for
   * the sandbox timeline; undefined when it changed nothing (a read, a refusal). Twinbox calls it on
   * entries read through the admin API, so it reads the entry only, never the twin.
   */
  describeChange?(entry: RequestLogEntry): string | undefined;
  /** The scenario presets the twin's folder ships (its `presets.ts`), listed by GET /scenarios. */
  presets?: TwinPresets;
}

/**
 * A twin that can be started: its descriptor and `create` (its folder's `twin.ts`, listed by
 * server/twins/registry.ts for the pods, which run the twins, and for tests that run them in-process).
 */
export interface TwinFactory extends TwinDescriptor {
  /**
   * Starts a driver. `saved` is a previous `snapshot()` to restore instead of seeding. `baseUrl` is the
   * twin's own URL, which its env vars hand out and its answers' absolute URLs are written with: in a
   * sandbox of its own network, the public URL, which works inside too; else where the app reaches it.
   * `publicUrl` is where a person's browser does (through the router), for pages the twin serves to
   * people, such as a hosted checkout; it may be absent when it is `baseUrl`. Whatever a request came to
   * (the vendor's host, the public URL, the loopback port), its `request.url` has that origin, and the
   * runtime rewrites `baseUrl` in the answer's body and `Location`/`Link` headers to it.
   */
  create(opts: { baseUrl: string; publicUrl?: string; seed: unknown; saved?: unknown }): Promise<TwinDriver>;
  /**
   * Makes ahead what the next create() would otherwise make on its way (the GitHub twin's app key: an RSA
   * key, 100 ms to seconds of a core). The host decides when: TwinHost calls it after each start (a process
   * that starts twin after twin), a sandbox pod once in its spare's warm-up, since it serves one sandbox and
   * anything made after that sandbox's start would only compete with its app for the CPU.
   */
  prepare?(): Promise<void>;
}

/** One answered vendor request, as the request log keeps it (runtime/request-log.ts). */
export interface RequestLogEntry {
  /** 1, 2, 3... in the order the requests were answered; starts again at 1 when the instance restarts. */
  id: number;
  /** When the answer was sent. */
  at: string;
  method: string;
  path: string;
  status: number;
  duration_ms: number;
  request_body: unknown;
  response_body: unknown;
  /** Set when the response came from fault injection instead of the twin. */
  fault?: string;
  /**
   * The router's `x-twinbox-request-id` when the caller sent one: Twinbox's router sets it on what it
   * forwards, and an app that passes it on to the twins lets the timeline tie its calls to the request
   * that made them.
   */
  request_id?: string;
  /** The W3C `traceparent` header, when the caller sent one (apps with tracing pass it on). */
  traceparent?: string;
}

/**
 * Scenario presets as twin folders ship them (server/twins/vendors/<name>/presets.ts): named seed documents
 * with the counts they promise. The type lives in the contract, so that a twin's folder holds its presets
 * without importing from server/scenarios/, which collects and lists them (server/scenarios/presets.ts).
 * Seed shapes: docs/twins.md, "Seeds".
 */
export interface ScenarioPreset {
  id: string;
  name: string;
  description: string;
  /** Catalog twin names the preset starts. */
  twins: string[];
  /** Seed document per twin name. */
  seed: Record<string, unknown>;
  /**
   * What the twins hold right after start (and after every reset), per twin. Counts are of objects the
   * seed creates, as the vendor API lists them; each twin's `promiseKeys` (TwinPresets) says which keys
   * it counts and what each one means.
   */
  promises: Record<string, Record<string, number>>;
}

/** What one twin's folder ships: its presets and the vocabulary of their promised counts. */
export interface TwinPresets {
  /** The presets that seed this twin alone (presets that span several twins live in server/scenarios/). */
  presets: readonly ScenarioPreset[];
  /**
   * Every `promises` key a preset may give for this twin, with what it counts; test/scenarios/sdk-counts.ts
   * counts each one through the vendor's official SDK.
   */
  promiseKeys: Readonly<Record<string, string>>;
}

/** Where an instance delivers its webhooks; set by seed or admin API (the app's URL is known only later). */
export interface WebhookTarget {
  url: string;
  secret: string;
  /** Event names to deliver; `['*']` or empty means all. */
  events: string[];
}

/** One try at sending a delivery. */
export interface WebhookAttempt {
  /** 1 for the first send, 2 for the first retry, ... */
  attempt: number;
  at: string;
  /** The receiver's HTTP status; null when it did not answer (refused, reset, timed out). */
  status_code: number | null;
  duration_ms: number;
  error?: string;
  /** The start of what the receiver answered (at most RESPONSE_EXCERPT_CHARS characters). */
  response?: string;
}

/**
 * One event sent to the target, with every attempt at it. The top-level `status_code`, `duration_ms`,
 * `success` and `error` are those of the latest attempt.
 */
export interface WebhookDelivery {
  id: number;
  guid: string;
  event: string;
  action?: string;
  url: string;
  /** When the first attempt was made. */
  delivered_at: string;
  status_code: number | null;
  duration_ms: number;
  success: boolean;
  error?: string;
  redelivery_of?: number;
  /** `pending` until an attempt succeeds (`delivered`) or the retries are spent or cancelled (`failed`). */
  state: 'pending' | 'delivered' | 'failed';
  attempts: WebhookAttempt[];
  /** When the next retry is due, while one is scheduled. */
  next_attempt_at?: string;
  payload: unknown;
}

/** A twin's webhook sender, as the runtime and the admin API use it (runtime/webhooks.ts WebhookOutbox). */
export interface TwinWebhooks {
  target: WebhookTarget | undefined;
  list(): WebhookDelivery[];
  get(id: number): WebhookDelivery | undefined;
  /** Whether the target takes this event. */
  wants(event: string): boolean;
  /** Delivers one event; resolves once the first attempt is over, with the delivery as it stands then. */
  deliver(
    event: string,
    payload: unknown,
    opts?: { redeliveryOf?: number; force?: boolean },
  ): Promise<WebhookDelivery | undefined>;
  redeliver(id: number): Promise<WebhookDelivery | undefined>;
  /** Resolves once no delivery is in flight. */
  idle(): Promise<void>;
  close(): Promise<void>;
  /** Forgets every delivery (a reset). */
  clear(): void;
}
