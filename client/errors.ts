import type { ErrorBody, Sandbox, TwinSet } from './types.ts';

/**
 * A request Twinbox answered with an error, or could not be made at all (`status` 0, code
 * `network_error`): callers branch on `status`/`code` and show `detail`, the API's human explanation.
 */
export class TwinboxApiError extends Error {
  override readonly name = 'TwinboxApiError';
  constructor(
    readonly status: number,
    readonly code: string | undefined,
    readonly detail: string,
    /** The parsed error body when there was one, for callers that want more than `detail`. */
    readonly body?: Partial<ErrorBody>,
    options?: { cause?: unknown },
  ) {
    super(status ? `${detail} (HTTP ${status}${code ? `, ${code}` : ''})` : detail, options);
  }
}

export type WaitEnd = 'failed' | 'expired' | 'deleted' | 'timeout';

/**
 * Waiting for `ready` ended otherwise: the sandbox failed (its `error` is the message), ran out its TTL,
 * was deleted, or the wait timed out. `sandbox` is the last state seen, so callers can still report it.
 */
export class SandboxWaitError extends Error {
  override readonly name = 'SandboxWaitError';
  constructor(
    readonly reason: WaitEnd,
    readonly sandbox: Sandbox,
    message: string,
  ) {
    super(message);
  }
}

/** Waiting for a twin set to be `ready` ended otherwise; `twinSet` is the last state seen. */
export class TwinSetWaitError extends Error {
  override readonly name = 'TwinSetWaitError';
  constructor(
    readonly reason: WaitEnd,
    readonly twinSet: TwinSet,
    message: string,
  ) {
    super(message);
  }
}
