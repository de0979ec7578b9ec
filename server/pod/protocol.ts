// The pod's control protocol: what Twinbox (server/deploy/pods/) may ask a sandbox's pod (main.ts) over its
// control socket, and what it answers. Both sides import this one module, so a call and its handler cannot
// drift apart; the pod checks every body against it at its door (checkPodRequest), since the control socket
// is the one way into the process that holds the sandbox's twins.
import Joi from 'joi';
import type { TwinEntry } from '../twins/runtime/host.ts';
import type { EgressAttempt } from './egress-guard.ts';

/** Start the named twins of a sandbox, seeded (`seeds`, by twin name) or empty. */
export interface StartTwinsRequest {
  sandbox_id: string;
  names: string[];
  admin_token: string;
  seeds?: Record<string, unknown>;
  /** Where browsers reach each twin (pages a twin shows to people link there). */
  public_urls?: Record<string, string>;
}

/**
 * Start the named twins once in a scratch sandbox and stop them, before the pod serves any sandbox: a spare
 * pod pays the first start's module loads and compiles (and issues its certificates for the twins' host
 * names) ahead of the deploy that takes it.
 */
export interface WarmTwinsRequest {
  names: string[];
}

/** Start a sandbox's twins again from their saved state (a resume, or a revived pod). */
export interface RestoreTwinsRequest {
  sandbox_id: string;
}

/** Pipe the pod's app socket to the app's port (inside the sandbox's namespace). */
export interface ExposeAppRequest {
  port: number;
}

/**
 * Answer once the app's port (exposeApp) accepts a connection inside the namespace, or once `timeout_ms`
 * has passed: the deploy's health check sends its first HTTP probe then, rather than one every few
 * milliseconds through the pod while the app starts.
 */
export interface AppListeningRequest {
  timeout_ms: number;
}

/** Stop the sandbox's twins; `purge` drops their saved state too. */
export interface StopTwinsRequest {
  purge?: boolean;
}

/** Each call: its route, what it carries and what it answers. */
export interface PodCalls {
  ready: {
    request: undefined;
    /** `prepared`: the expected twins (layout.expectedTwins) loaded and prepared so far. */
    answer: { ok: true; network: 'own' | 'host'; sandbox_id?: string; prepared: string[] };
  };
  startTwins: { request: StartTwinsRequest; answer: { twins: Record<string, TwinEntry> } };
  warmTwins: { request: WarmTwinsRequest; answer: { warmed: string[] } };
  restoreTwins: { request: RestoreTwinsRequest; answer: { twins: Record<string, TwinEntry> } };
  exposeApp: { request: ExposeAppRequest; answer: { port: number } };
  appListening: { request: AppListeningRequest; answer: { listening: boolean } };
  stopTwins: { request: StopTwinsRequest; answer: { stopped: true } };
}

export type PodCall = keyof PodCalls;
export type PodRequest<C extends PodCall> = PodCalls[C]['request'];
export type PodAnswer<C extends PodCall> = PodCalls[C]['answer'];

const sandboxId = Joi.string().min(1).max(256).required();
/** The twins a call or the expected-twins file names: the same bounds everywhere. */
const twinNameList = Joi.array().items(Joi.string().min(1).max(64)).max(64).required();

/** The route of each call and the shape its body must have (strict: no conversion, no unknown keys). */
export const POD_ROUTES: {
  readonly [C in PodCall]: { method: 'GET' | 'POST' | 'PUT'; path: string; body?: Joi.ObjectSchema };
} = {
  ready: { method: 'GET', path: '/ready' },
  startTwins: {
    method: 'POST',
    path: '/twins',
    body: Joi.object({
      sandbox_id: sandboxId,
      names: twinNameList,
      admin_token: Joi.string().min(1).max(512).required(),
      seeds: Joi.object().unknown(true),
      public_urls: Joi.object().pattern(Joi.string(), Joi.string()),
    }),
  },
  warmTwins: {
    method: 'POST',
    path: '/warm',
    body: Joi.object({ names: twinNameList }),
  },
  restoreTwins: { method: 'POST', path: '/restore', body: Joi.object({ sandbox_id: sandboxId }) },
  exposeApp: {
    method: 'PUT',
    path: '/app',
    body: Joi.object({ port: Joi.number().integer().min(1).max(65535).required() }),
  },
  appListening: {
    method: 'POST',
    path: '/app/listening',
    body: Joi.object({ timeout_ms: Joi.number().integer().min(1).max(3_600_000).required() }),
  },
  stopTwins: { method: 'POST', path: '/stop', body: Joi.object({ purge: Joi.boolean() }) },
};

/**
 * The stream of refused outbound calls: `GET` it and read one JSON EgressAttempt a line for as long as the
 * pod lives (a first empty line says the stream is open).
 */
export const POD_EVENTS_PATH = '/events';
export type PodEvent = EgressAttempt;

/** A control request the pod refuses: its status (400, 404) and a `detail` for the caller. */
export class PodRequestError extends Error {
  constructor(
    readonly status: 400 | 404,
    message: string,
  ) {
    super(message);
    this.name = 'PodRequestError';
  }
}

/** Which call a request is, by its method and path; a PodRequestError (404) when none. */
export function podCallOf(method: string | undefined, path: string | undefined): PodCall {
  for (const [call, route] of Object.entries(POD_ROUTES))
    if (route.method === method && route.path === path) return call as PodCall;
  throw new PodRequestError(404, `no pod route ${method} ${path}`);
}

/**
 * What a pod is told to expect while it starts (layout.expectedTwins, a file Twinbox writes): the twins it
 * will run, and RSA keys made for them (server/twins/runtime/rsa-keys.ts, PKCS#1 PEM), which spare it the
 * prime search. Only a hint: a pod that reads no file, a malformed one or fewer keys does without.
 */
export interface ExpectedTwins {
  names: string[];
  rsa_keys?: string[];
}

const EXPECTED_TWINS = Joi.object({
  names: twinNameList,
  // A 2048-bit key's PEM is about 1,700 characters.
  rsa_keys: Joi.array().items(Joi.string().max(8192)).max(16),
});

/** The expected-twins file's body, checked as strictly as a call's; throws PodRequestError. */
export function checkExpectedTwins(body: unknown): ExpectedTwins {
  const { value, error } = EXPECTED_TWINS.validate(body, { convert: false });
  if (error) throw new PodRequestError(400, `bad expected twins: ${error.message}`);
  return value as ExpectedTwins;
}

/** The body of `call`, checked against its shape; a PodRequestError (400, with what is wrong) otherwise. */
export function checkPodRequest<C extends PodCall>(call: C, body: unknown): PodRequest<C> {
  const schema = POD_ROUTES[call].body;
  if (!schema) return undefined as PodRequest<C>;
  const { value, error } = schema.validate(body ?? {}, { convert: false });
  if (error) throw new PodRequestError(400, `bad ${call} request: ${error.message}`);
  return value as PodRequest<C>;
}
