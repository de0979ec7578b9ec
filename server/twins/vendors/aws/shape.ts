/**
 * The engine's answers in the shape AWS gives them, where the two differ (checked against AWS's Smithy
 * models in test/twins/aws.test.ts).
 */

/**
 * The engine's answer to `method pathname` of `service`, as AWS answers it: HeadObject carries the object's
 * user metadata (`x-amz-meta-*`), as GetObject does; the engine leaves it out. An S3 error is S3's REST
 * error document. `metadataOf` finds an object's metadata in the store.
 */
export async function toAwsResponse(
  method: string,
  service: string,
  pathname: string,
  response: Response,
  metadataOf: (bucket: string, key: string) => unknown,
): Promise<Response> {
  if (service === 's3' && response.status >= 400) return toS3Error(pathname, response);
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

const QUERY_ERROR =
  /^\s*(?:<\?xml[^>]*\?>\s*)?<ErrorResponse>\s*<Error>([\s\S]*?)<\/Error>\s*<RequestId>([^<]*)<\/RequestId>/;

/**
 * The engine answers S3 errors in the query protocol's document (`<ErrorResponse><Error>...`, as STS does).
 * S3 speaks REST-XML: the root is `<Error>`, with the request id inside it and, for a missing key or bucket,
 * the `Key` or `BucketName` asked for. The SDK for JavaScript v2 reads the code from the root only (v3 looks
 * in both), so with the engine's document every v2 error was a bare status.
 */
async function toS3Error(pathname: string, response: Response): Promise<Response> {
  if (!/xml/.test(response.headers.get('content-type') ?? '')) return response;
  const text = await response.text();
  const match = QUERY_ERROR.exec(text);
  const headers = new Headers(response.headers);
  headers.delete('content-length');
  if (!match) return new Response(text, { status: response.status, headers });
  const [, inner, requestId] = match as unknown as [string, string, string];
  const code = /<Code>([^<]*)<\/Code>/.exec(inner)?.[1];
  const [, bucket, ...rest] = pathname.split('/');
  const resource =
    code === 'NoSuchKey' && rest.length
      ? `<Key>${escapeXml(safeDecode(rest.join('/')))}</Key>`
      : code === 'NoSuchBucket' && bucket
        ? `<BucketName>${escapeXml(safeDecode(bucket))}</BucketName>`
        : '';
  headers.set('x-amz-request-id', requestId);
  return new Response(
    `<?xml version="1.0" encoding="UTF-8"?>\n<Error>${inner.trim()}${resource}<RequestId>${requestId}</RequestId></Error>`,
    { status: response.status, headers },
  );
}

function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

const escapeXml = (text: string) =>
  text.replace(
    /[<>&'"]/g,
    (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', "'": '&apos;', '"': '&quot;' })[c]!,
  );
