import pino, { type DestinationStream, type Logger } from 'pino';

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

export function createLogger(level: string, destination?: DestinationStream): Logger {
  return pino({ level, redact: { paths: REDACTED_PATHS, censor: '[redacted]' } }, destination);
}
