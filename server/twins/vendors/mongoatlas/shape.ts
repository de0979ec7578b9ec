/**
 * The Admin API's answers with Atlas's values where the engine's break Atlas's description (checked in
 * test/twins/mongoatlas.test.ts): the organization id is 24 hex digits (the engine says `default_org`),
 * and `mongoDBVersion` is a full `major.minor.patch` (the engine gives the major version, `8.0`, which is
 * `mongoDBMajorVersion` on Atlas).
 */

import { bytesAnswer } from '../../runtime/http.ts';

/**
 * A successful Admin API answer of the engine in Atlas's shape; `orgId` is the instance's organization.
 * The engine writes its answers with JSON.stringify, where a field is always `"name":value` with nothing
 * between, and a quote inside a string is always escaped: so the two values are changed in the text, as
 * JSON.parse with a reviver and JSON.stringify after it changed them, without reading the document into
 * objects and writing it again (that was most of the twin's own time on a read).
 */
export async function toAtlasResponse(
  response: Response,
  orgId: string,
  status = response.status,
): Promise<Response> {
  if (!response.headers.get('content-type')?.includes('json')) return response;
  const text = await response.text();
  if (!text) return new Response(null, { status, headers: response.headers });
  const fixed = text
    .replaceAll('"orgId":"default_org"', () => `"orgId":${JSON.stringify(orgId)}`)
    .replace(/"mongoDBVersion":"(\d+\.\d+)"/g, '"mongoDBVersion":"$1.0"');
  // As bytes (runtime/http.ts): a Response made from text wraps it in a stream to be read back.
  return bytesAnswer(Buffer.from(fixed), { status, headers: response.headers });
}

/**
 * Atlas's status for a successful Admin API answer of the engine: creating a project is 200 on Atlas
 * ("Create One Project"), where the engine answers 201; its clusters and database users are 201 on both.
 */
export function atlasStatus(method: string, pathname: string, status: number): number {
  return method === 'POST' && pathname === '/api/atlas/v2/groups' && status === 201 ? 200 : status;
}
