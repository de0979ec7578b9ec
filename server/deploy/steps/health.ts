import { request } from 'node:http';

/** Where an app answers: a path behind its pod's Unix socket (the app may be in its own network namespace). */
export type HttpTarget = { socketPath: string; path: string };

/** A probe got no answer within its attempt: the app (or its pod) took the request and is slow with it. */
class AttemptTimedOut extends Error {
  constructor() {
    super('no answer within the attempt');
    this.name = 'AttemptTimedOut';
  }
}

/** The first probe's time to answer; see waitForHttp for why later ones get longer. */
const FIRST_ATTEMPT_MS = 2000;

function statusOf(target: HttpTarget, timeoutMs: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const options = { ...target, headers: { host: 'localhost' } };
    const req = request({ ...options, timeout: timeoutMs }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('timeout', () => req.destroy(new AttemptTimedOut()));
    req.on('error', reject);
    req.end();
  });
}

/**
 * Why an app never became healthy, typed so that callers word it by `kind`, never by its text:
 * `exited` (the app died first: `reason` says how), `timed-out` (`reason` says within how long and the last
 * problem seen) or `cancelled` (the deploy's signal aborted).
 */
export class HealthCheckError extends Error {
  constructor(
    readonly kind: 'exited' | 'timed-out' | 'cancelled',
    readonly reason: string,
  ) {
    super(kind === 'timed-out' ? `timed out ${reason}` : reason);
    this.name = 'HealthCheckError';
  }
}

/**
 * The pause after a failed probe: short at first, since most apps answer within a few hundred
 * milliseconds and each millisecond between the app's first answer and the probe that sees it is on
 * every deploy's POST→ready; growing by a millisecond a probe to 50 ms, so that a slow start is not
 * probed hundreds of times. (It grew by a quarter a probe from 5 ms: an app answering at 60 ms was seen
 * at 75; now at 65. A refused probe costs a connection through the pod, well under a millisecond.)
 */
export function probePause(attempt: number): number {
  return Math.min(50, 2 + attempt);
}

/**
 * Waits until `target` answers HTTP with a status below 500, polling. Rejects with a HealthCheckError when
 * `exited` settles first (the app died: its reason), when `timeoutMs` passes, or when `signal` aborts.
 */
export async function waitForHttp(
  target: HttpTarget,
  opts: {
    timeoutMs: number;
    exited: Promise<string>;
    signal?: AbortSignal;
    intervalMs?: number;
    /** Settles once a probe is worth sending (the port takes connections); probes wait for it. */
    listening?: Promise<unknown>;
  },
): Promise<void> {
  const deadline = Date.now() + opts.timeoutMs;
  let died: string | undefined;
  void opts.exited.then((reason) => (died = reason));
  if (opts.listening) await firstOf(opts.listening, opts.exited, opts.signal, opts.timeoutMs);
  let lastProblem = 'no answer yet';
  let attemptMs = FIRST_ATTEMPT_MS;
  for (let attempt = 0; ; attempt++) {
    if (died !== undefined) throw new HealthCheckError('exited', died);
    if (opts.signal?.aborted) throw new HealthCheckError('cancelled', 'deploy cancelled');
    const remaining = deadline - Date.now();
    if (remaining <= 0)
      throw new HealthCheckError(
        'timed-out',
        `within ${Math.round(opts.timeoutMs / 1000)} s, (${lastProblem})`,
      );
    try {
      const status = await statusOf(target, Math.min(attemptMs, remaining));
      if (status < 500 && status > 0) return;
      lastProblem = `last answer: HTTP ${status}`;
    } catch (error) {
      lastProblem = `last attempt: ${(error as Error).message}`;
      // The app is slow, not absent (a saturated machine, a first request that reads its twins): asking
      // again every 2 s would abandon each answer before it comes and pile the same work up again, so
      // that a fleet started at once never passed. The next attempt waits twice as long.
      if (error instanceof AttemptTimedOut) attemptMs *= 2;
    }
    await new Promise((resolve) => setTimeout(resolve, opts.intervalMs ?? probePause(attempt)));
  }
}

/**
 * Waits for the first of: `listening` settling (either way), the app's exit, the abort, `ms` passing.
 * What each means is the probe loop's to find out after it.
 */
async function firstOf(
  listening: Promise<unknown>,
  exited: Promise<unknown>,
  signal: AbortSignal | undefined,
  ms: number,
): Promise<void> {
  if (signal?.aborted) return;
  let timer: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  try {
    await Promise.race([
      listening.catch(() => {}),
      exited,
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, ms);
        onAbort = resolve;
        signal?.addEventListener('abort', onAbort, { once: true });
      }),
    ]);
  } finally {
    clearTimeout(timer);
    if (onAbort) signal?.removeEventListener('abort', onAbort);
  }
}

/**
 * How long an app with no HTTP port (`port: false`) must stay up before its sandbox is ready. Nothing
 * else says it works, so this stands for the health check: long enough for the usual failures on start
 * (a missing variable, a module not found, a refused token on the first call, e.g. Bolt's
 * apps.connections.open) to end the process first, even on a loaded machine; short enough not to weigh
 * on every deploy of a worker. An app that exits later still fails its sandbox (LocalDeployer.watch).
 */
export const NO_PORT_SETTLE_MS = 5000;

/**
 * The "health check" of an app with no HTTP port: resolves once it has stayed up for `settleMs`. Rejects
 * with a HealthCheckError `exited` when `exited` settles first, or `cancelled` when `signal` aborts.
 */
export function waitStaysUp(opts: {
  settleMs: number;
  exited: Promise<string>;
  signal?: AbortSignal;
}): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const done = (outcome: () => void) => {
      clearTimeout(timer);
      opts.signal?.removeEventListener('abort', onAbort);
      outcome();
    };
    const onAbort = () => done(() => reject(new HealthCheckError('cancelled', 'deploy cancelled')));
    const timer = setTimeout(() => done(resolve), opts.settleMs);
    if (opts.signal?.aborted) return onAbort();
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    void opts.exited.then((reason) => done(() => reject(new HealthCheckError('exited', reason))));
  });
}
