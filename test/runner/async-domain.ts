// tap's async-hook-domain, as the test processes' bundle of tap has it (./bundle.ts): the same `Domain`,
// found through an AsyncLocalStorage instead of an async hook of its own.
//
// Why: tap gives every test a Domain, so that an error thrown from a test's timer or callback, or a
// promise it left rejected, fails that test instead of the process. async-hook-domain finds the domain of
// the code that threw by following every async resource from its creation to its destruction: an `init`
// and a `destroy` hook, and a destroy hook makes Node track every promise to its garbage collection. In
// the twins' tests, which make promises by the hundred thousand, that was a fifth of a test process's CPU
// (test/twins/twilio: 14.8-15.6 -> 11.1-12.1 CPU-seconds). An AsyncLocalStorage carries the domain along
// the same paths from creation alone, which Node does without tracking destruction.
//
// What stays as async-hook-domain does it (its 4.0.1, whose code this follows): an uncaught exception
// goes to the domain of the code that threw it (Node keeps that code's async context while it emits
// `uncaughtExceptionMonitor`), an unhandled rejection to the domain of the promise (Node runs
// `unhandledRejection` in the promise's context), and an error after a test's domain was destroyed to the
// nearest live domain above it. ./fixtures/stray-errors.ts checks each through the runner.
import { AsyncLocalStorage } from 'node:async_hooks';

type OnError = (error: unknown, type: string) => void;

const domains = new AsyncLocalStorage<Domain>();
let live = 0;
let active = false;

/** `--unhandled-rejections=strict` makes Node throw a rejection as an uncaught exception: handled there. */
const unhandledRejectionMode = (() => {
  let mode = 'throw';
  const args = process.execArgv;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg.startsWith('--unhandled-rejections=')) mode = arg.slice('--unhandled-rejections='.length);
    else if (arg === '--unhandled-rejections') mode = args[i + 1] ?? mode;
  }
  return mode;
})();

/** The domain of the code running now: its own, or the nearest live one above a destroyed one. */
function currentDomain(): Domain | undefined {
  let domain = domains.getStore();
  while (domain?.destroyed) domain = domain.parent;
  return domain;
}

/** Gives an error to the current domain; false when none takes it (Node's own handling goes on). */
function domainErrorHandler(error: unknown, type: string, rejection = false): boolean {
  // Someone else handles uncaught exceptions in this process: they are theirs.
  if (process.hasUncaughtExceptionCaptureCallback() || process.listeners('uncaughtException').length > 0)
    return false;
  const domain = currentDomain();
  if (!domain) return false;
  try {
    domain.onerror(error, type);
  } catch (thrown) {
    // A handler that throws hands its error to the domain above.
    domain.destroy();
    if (domainErrorHandler(thrown, type)) return true;
    throw thrown;
  }
  if (!rejection) {
    // Handled: Node must not go on to end the process for it. A capture callback, set for this one
    // exception, stops it.
    process.setUncaughtExceptionCaptureCallback(() => process.setUncaughtExceptionCaptureCallback(null));
    if (unhandledRejectionMode === 'strict') process.once('unhandledRejection', () => {});
  }
  return true;
}

const originalEmit = process.emit;
/** Unhandled rejections that no listener of the process takes go to the current domain. */
const emitWithDomains = function (this: NodeJS.Process, event: string | symbol, ...args: unknown[]) {
  if (event !== 'unhandledRejection' || process.listeners('unhandledRejection').length)
    return (originalEmit as (...a: unknown[]) => boolean).call(process, event, ...args);
  return domainErrorHandler(args[0], 'unhandledRejection', true);
} as typeof process.emit;

function activate(): void {
  if (active) return;
  active = true;
  process.on('uncaughtExceptionMonitor', domainErrorHandler);
  if (unhandledRejectionMode !== 'strict') process.emit = emitWithDomains;
}

function deactivate(): void {
  if (!active) return;
  active = false;
  process.removeListener('uncaughtExceptionMonitor', domainErrorHandler);
  process.emit = originalEmit;
}

/**
 * Catches what the code run from here on (in this async context, and what it starts) throws or leaves
 * rejected, until destroyed; nested domains hand what they cannot take to the one they were made in.
 */
export class Domain {
  readonly parent: Domain | undefined;
  destroyed = false;

  constructor(readonly onerror: OnError) {
    if (typeof onerror !== 'function') {
      const error = new TypeError('onerror must be a function');
      Error.captureStackTrace(error, this.constructor);
      throw error;
    }
    this.parent = domains.getStore();
    // The current async context (tap makes each test's domain inside its own AsyncResource's scope) and
    // everything it starts from now on.
    domains.enterWith(this);
    live++;
    activate();
  }

  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    if (--live === 0) deactivate();
  }
}
