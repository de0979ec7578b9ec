import pino, { type DestinationStream, type Logger } from 'pino';
import pretty from 'pino-pretty';

/**
 * Paths never written to the log: credentials in request headers, cookies, and fields that carry
 * secrets in our own log lines. A token in a log is a leaked token.
 */
export const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["x-hub-signature-256"]',
  'res.headers["set-cookie"]',
  'token',
  'key',
  'secret',
  'code',
];

/** `json`: one pino object a line, for machines; `pretty`: one readable line per entry, for a person. */
export type LogFormat = 'json' | 'pretty';

/**
 * The format a Twinbox logs in. `auto` is readable lines only where a person is reading: a terminal,
 * outside production. A pipe, a file or a log collector gets JSON.
 */
export function chooseLogFormat(
  setting: 'auto' | LogFormat,
  env: 'development' | 'production' | 'test',
  stdoutIsTty: boolean,
): LogFormat {
  if (env === 'production') return 'json';
  if (setting !== 'auto') return setting;
  return stdoutIsTty ? 'pretty' : 'json';
}

/**
 * A logger writing to `destination` (default stdout). Redaction happens in pino before either format
 * serializes a line, so pretty lines carry `[redacted]` exactly where JSON lines do.
 */
export function createLogger(
  level: string,
  destination?: DestinationStream,
  format: LogFormat = 'json',
): Logger {
  const options = { level, redact: { paths: REDACTED_PATHS, censor: '[redacted]' } };
  if (format === 'json') return pino(options, destination);
  return pino(
    options,
    pretty({
      destination: destination ?? 1,
      // Synchronous like pino's own stdout: a line logged just before exit is not lost.
      sync: true,
      // Colours only for a terminal; a captured stream (tests, `| less`) reads cleaner without codes.
      colorize: destination === undefined && process.stdout.isTTY === true,
      translateTime: 'SYS:HH:MM:ss.l',
      // The completion line's message already says method, path, status and time; its req/res
      // objects would add a dozen lines per request.
      ignore: 'pid,hostname,req,res',
      singleLine: true,
    }),
  );
}
