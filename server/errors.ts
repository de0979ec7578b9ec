import Boom from '@hapi/boom';
import type { Request, ResponseToolkit } from '@hapi/hapi';

/**
 * Every error body carries `statusCode`, `error`, `message`, `detail` (the same text as `message`) and,
 * where a client may branch on it, a machine-readable `code`.
 */
export function apiError(statusCode: number, message: string, code?: string): Boom.Boom {
  return completeBody(new Boom.Boom(message, { statusCode, data: code ? { code } : undefined }));
}

export const badRequest = (message: string, code = 'invalid_request') => apiError(400, message, code);
export const forbidden = (message: string, code: string) => apiError(403, message, code);
export const notFound = (message: string) => apiError(404, message, 'not_found');
export const conflict = (message: string, code = 'conflict') => apiError(409, message, code);

/** The bearer challenge: 401 with `WWW-Authenticate: Bearer ...` and the reason in `detail`. */
export function unauthorized(message: string): Boom.Boom {
  const error = Boom.unauthorized(message);
  error.data = { code: 'unauthorized' };
  // RFC 6750 challenge; the reason itself is in `detail`, not in a header.
  error.output.headers['WWW-Authenticate'] = 'Bearer realm="twinbox", error="invalid_token"';
  return completeBody(error);
}

/** Joi failures on params, query or payload become one 400 that lists every problem. */
export function validationFailAction(_request: Request, _h: ResponseToolkit, error?: Error): never {
  const details = (error as { details?: { message: string }[] } | undefined)?.details;
  const message = details?.length ? details.map((d) => d.message).join('; ') : (error?.message ?? 'Invalid');
  throw badRequest(message);
}

/** onPreResponse: completes the body of every Boom error (ours, hapi's and plugins') with `detail`. */
export function decorateErrorBody(request: Request, h: ResponseToolkit) {
  const response = request.response;
  if (Boom.isBoom(response)) completeBody(response);
  return h.continue;
}

function completeBody(error: Boom.Boom): Boom.Boom {
  const payload = error.output.payload as Record<string, unknown>;
  payload.detail = payload.message;
  // Boom's parsed challenge duplicates the WWW-Authenticate header; the body keeps to our shape.
  delete payload.attributes;
  const code = (error.data as { code?: unknown } | null | undefined)?.code;
  if (typeof code === 'string') payload.code = code;
  return error;
}
