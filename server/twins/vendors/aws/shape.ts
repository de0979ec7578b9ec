/**
 * The engine's answers in the shape AWS gives them, where the two differ (checked against AWS's Smithy
 * models in test/twins/aws.test.ts).
 */

/**
 * The engine's answer to `method pathname` of `service`, as AWS answers it: HeadObject carries the object's
 * user metadata (`x-amz-meta-*`), as GetObject does; the engine leaves it out. `metadataOf` finds an
 * object's metadata in the store.
 */
export function toAwsResponse(
  method: string,
  service: string,
  pathname: string,
  response: Response,
  metadataOf: (bucket: string, key: string) => unknown,
): Response {
  if (method !== 'HEAD' || service !== 's3' || !response.ok) return response;
  const [, bucket, ...rest] = pathname.split('/');
  if (!bucket || rest.length === 0) return response;
  let metadata: unknown;
  try {
    metadata = metadataOf(decodeURIComponent(bucket), decodeURIComponent(rest.join('/')));
  } catch {
    return response;
  }
  if (!metadata || typeof metadata !== 'object') return response;
  const headers = new Headers(response.headers);
  for (const [name, value] of Object.entries(metadata)) headers.set(`x-amz-meta-${name}`, String(value));
  return new Response(null, { status: response.status, headers });
}
