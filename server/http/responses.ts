import Joi from 'joi';
import type { RouteOptionsResponse } from '@hapi/hapi';

/** The body of every error (errors.ts). */
export const errorSchema = Joi.object({
  statusCode: Joi.number().integer().required(),
  error: Joi.string().required(),
  message: Joi.string().required(),
  detail: Joi.string().required().description('What went wrong, for a person; same text as message.'),
  code: Joi.string().description('Machine-readable reason, e.g. plan_limit_exceeded.'),
}).label('Error');

/**
 * Declares a route's responses. Success bodies are checked against their schema where the server is
 * built with response validation on (tests); error bodies all share errorSchema and are only
 * documented, since hapi validates them before onPreResponse completes them.
 */
export function documentedResponses(
  success: Record<number, Joi.Schema>,
  ...errorCodes: number[]
): { response: RouteOptionsResponse; plugins: { openapi: { errors: number[] } } } {
  return { response: { status: success }, plugins: { openapi: { errors: errorCodes } } };
}

/** The error codes a route documented with documentedResponses. */
export function documentedErrors(plugins: unknown): number[] {
  return (plugins as { openapi?: { errors?: number[] } } | undefined)?.openapi?.errors ?? [];
}
