import { SandboxWaitError, TwinboxApiError, TwinSetWaitError } from '../errors.ts';
import { InputError } from '../parse.ts';

/** The CLI's exit codes (docs/cli.md): scripts branch on these, so they never change meaning. */
export const EXIT = {
  ok: 0,
  /** Anything unexpected, and server errors (5xx). */
  error: 1,
  /** Bad command line: unknown command or flag, missing or malformed value, an origin that is not GitHub. */
  usage: 2,
  /** Not signed in, or the API key / code was not accepted (401). */
  auth: 3,
  /**
   * Twinbox refused the request as asked (400, 403, 409, 413, 415, 429): `detail` says why; or `open`
   * of a sandbox that has no app yet.
   */
  rejected: 4,
  /** No such sandbox (404), or something this Twinbox does not have (an older version). */
  notFound: 5,
  /**
   * `--wait` (and `twins create`): the sandbox or twin set failed, expired or was deleted instead of
   * becoming ready; `open`: it has ended.
   */
  sandboxEnded: 6,
  /** `--wait`: not ready within `--timeout-minutes`. */
  timeout: 7,
  /** Twinbox could not be reached at all. */
  unreachable: 8,
} as const;

/** Raised by commands for conditions that are not API errors (not signed in, no code entered...). */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
  }
}

export function exitCodeOf(error: unknown): number {
  if (error instanceof CliError) return error.exitCode;
  if (error instanceof InputError) return EXIT.usage;
  if (error instanceof SandboxWaitError || error instanceof TwinSetWaitError)
    return error.reason === 'timeout' ? EXIT.timeout : EXIT.sandboxEnded;
  if (error instanceof TwinboxApiError) {
    if (error.code === 'unsupported') return EXIT.notFound;
    if (error.status === 0) return EXIT.unreachable;
    if (error.status === 401) return EXIT.auth;
    if (error.status === 404) return EXIT.notFound;
    if (error.status >= 400 && error.status < 500) return EXIT.rejected;
    return EXIT.error;
  }
  // util.parseArgs' errors: unknown flag, missing value, unexpected argument.
  if ((error as { code?: string })?.code?.startsWith?.('ERR_PARSE_ARGS')) return EXIT.usage;
  return EXIT.error;
}
