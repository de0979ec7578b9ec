/**
 * AWS's answers where the engine's differ: its two error documents (S3's REST-XML one and the query
 * protocol's, of STS, IAM and SQS), and HeadObject's user metadata.
 */
import { randomBytes, randomUUID } from 'node:crypto';

const xmlEscape = (s: string) =>
  s.replace(/[<>&'"]/g, (c) => `&${{ '<': 'lt', '>': 'gt', '&': 'amp', "'": 'apos', '"': 'quot' }[c]};`);

/** S3's error document (REST-XML): `<Error>` at the root, request ids in headers too. */
export function s3Error(
  status: number,
  code: string,
  message: string,
  extra: Record<string, string> = {},
): Response {
  const requestId = randomBytes(8).toString('hex').toUpperCase();
  const hostId = randomBytes(32).toString('base64');
  const fields = Object.entries(extra)
    .map(([k, v]) => `<${k}>${xmlEscape(v)}</${k}>`)
    .join('');
  const body = `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${xmlEscape(message)}</Message>${fields}<RequestId>${requestId}</RequestId><HostId>${hostId}</HostId></Error>`;
  return new Response(body, {
    status,
    headers: { 'content-type': 'application/xml', 'x-amz-request-id': requestId, 'x-amz-id-2': hostId },
  });
}

/** The query protocol's error document (STS, IAM, SQS): `<ErrorResponse><Error><Type>...`. */
export function queryError(status: number, code: string, message: string): Response {
  const requestId = randomUUID();
  const type = status >= 500 ? 'Receiver' : 'Sender';
  const body = `<?xml version="1.0" encoding="UTF-8"?>\n<ErrorResponse><Error><Type>${type}</Type><Code>${code}</Code><Message>${xmlEscape(message)}</Message></Error><RequestId>${requestId}</RequestId></ErrorResponse>`;
  return new Response(body, {
    status,
    headers: { 'content-type': 'text/xml', 'x-amzn-requestid': requestId },
  });
}

/** HeadObject answers with the object's user metadata (`x-amz-meta-*`), as GetObject does; the engine leaves it out. */
export function withUserMetadata(response: Response, metadata: unknown): Response {
  if (!metadata || typeof metadata !== 'object') return response;
  const headers = new Headers(response.headers);
  for (const [name, value] of Object.entries(metadata)) headers.set(`x-amz-meta-${name}`, String(value));
  return new Response(null, { status: response.status, headers });
}
