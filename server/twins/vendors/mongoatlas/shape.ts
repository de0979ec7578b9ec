/**
 * The Admin API's answers with Atlas's values where the engine's break Atlas's description (checked in
 * test/twins/mongoatlas.test.ts): the organization id is 24 hex digits (the engine says `default_org`),
 * and `mongoDBVersion` is a full `major.minor.patch` (the engine gives the major version, `8.0`, which is
 * `mongoDBMajorVersion` on Atlas).
 */

/** A successful Admin API answer of the engine in Atlas's shape; `orgId` is the instance's organization. */
export async function toAtlasResponse(response: Response, orgId: string): Promise<Response> {
  if (!response.headers.get('content-type')?.includes('json')) return response;
  const text = await response.text();
  if (!text) return new Response(null, { status: response.status, headers: response.headers });
  const body = JSON.parse(text, (key, value: unknown) => {
    if (key === 'orgId' && value === 'default_org') return orgId;
    if (key === 'mongoDBVersion' && typeof value === 'string' && /^\d+\.\d+$/.test(value))
      return `${value}.0`;
    return value;
  }) as unknown;
  return new Response(JSON.stringify(body), { status: response.status, headers: response.headers });
}
