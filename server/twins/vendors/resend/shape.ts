/**
 * The engine's answers in Resend's shape, checked against Resend's description in test/twins/resend.test.ts:
 * creates are 201, `last_event` is the bare event (`delivered`, not `email.delivered`), lists say whether
 * there is more, and a segment (what Resend now calls an audience) is a segment.
 */
import { json } from '../../runtime/http.ts';

/** The creates Resend answers with 201 (its OpenAPI description): domains, API keys, audiences, contacts. */
const CREATES = /^\/(domains|api-keys|audiences|contacts|audiences\/[^/]+\/contacts)$/;

/**
 * The engine's answer to `method pathname` (past the twin's own 404) in Resend's shape; `segments` says the
 * app asked for `/segments`, which the twin sent to the engine's `/audiences`.
 */
export async function toResendResponse(
  method: string,
  pathname: string,
  response: Response,
  segments: boolean,
): Promise<Response> {
  if (method === 'POST' && response.status === 200 && CREATES.test(pathname)) {
    // Resend's description answers a create with 201 Created; the engine says 200.
    return new Response(response.body, { status: 201, headers: response.headers });
  }
  if (method !== 'GET' && !segments) return response;
  if (!response.ok || !response.headers.get('content-type')?.includes('json')) return response;
  const body = (await response.json()) as Record<string, unknown>;
  const fix = (item: Record<string, unknown>) => {
    if (typeof item.last_event === 'string') item.last_event = item.last_event.replace(/^email\./, '');
    if (segments && item.object === 'audience') item.object = 'segment';
    return item;
  };
  if (body.object === 'list' && Array.isArray(body.data)) {
    body.data = (body.data as Array<Record<string, unknown>>).map(fix);
    body.has_more ??= false;
  } else fix(body);
  return json(response.status, body);
}
