/**
 * The engine's answers in the shape Okta gives them, where the two differ (checked against Okta's own
 * description in test/twins/okta.test.ts).
 */
import { randomBytes } from 'node:crypto';
import { json } from '../../runtime/http.ts';

/** The management API's create operations (answered 200 by Okta; authorization servers 201, as the engine does). */
const CREATE_PATH = /^\/api\/v1\/(users|groups|apps)$/;
/** Lifecycle operations Okta answers with an empty 200 (the engine sends the object). */
const EMPTY_LIFECYCLE =
  /^\/api\/v1\/(users\/[^/]+\/lifecycle\/(deactivate|suspend|unsuspend)|apps\/[^/]+\/lifecycle\/(activate|deactivate))$/;

/** The engine's answer to `method pathname`, as Okta answers it. */
export async function toOktaResponse(
  method: string,
  pathname: string,
  response: Response,
): Promise<Response> {
  // Okta answers a create with 200 (its description documents no 201 for users, groups, apps or
  // authorization servers); the engine with 201.
  if (method === 'POST' && response.status === 201 && CREATE_PATH.test(pathname)) {
    return new Response(response.body, { status: 200, headers: response.headers });
  }
  if (method === 'POST' && response.status === 200 && EMPTY_LIFECYCLE.test(pathname)) {
    await response.body?.cancel();
    return new Response(null, {
      status: 200,
      headers: { 'x-okta-request-id': randomBytes(9).toString('base64url') },
    });
  }
  // Okta's authorization servers take PKCE with S256 only, and say so in their metadata.
  if (method === 'GET' && pathname.endsWith('/.well-known/openid-configuration') && response.ok) {
    const metadata = (await response.json()) as Record<string, unknown>;
    metadata.code_challenge_methods_supported = ['S256'];
    return json(200, metadata);
  }
  return response;
}
