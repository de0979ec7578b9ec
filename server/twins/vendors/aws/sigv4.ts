/**
 * AWS Signature Version 4, checked the way AWS checks it: the twin rebuilds the canonical request from
 * what it received and signs it with the secret of the presented access key, so a request signed with
 * another secret, or altered after signing, fails as it fails on AWS. Both forms the SDKs use are read:
 * the `Authorization: AWS4-HMAC-SHA256 ...` header and presigned URLs (`X-Amz-*` query parameters).
 */
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

export interface SigV4Credential {
  accessKeyId: string;
  date: string;
  region: string;
  service: string;
  signedHeaders: string[];
  signature: string;
  /** `X-Amz-Date` (header or query), `YYYYMMDDTHHMMSSZ`. */
  amzDate: string;
  /** Presigned: seconds the URL is valid from `amzDate`. */
  expires?: number;
  presigned: boolean;
}

const HEADER =
  /^AWS4-HMAC-SHA256\s+Credential=([^/,\s]+)\/(\d{8})\/([^/,\s]+)\/([^/,\s]+)\/aws4_request,\s*SignedHeaders=([a-z0-9;_.-]+),\s*Signature=([0-9a-f]{64})\s*$/;
const SCOPE = /^([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request$/;

/** The credential a request presents, or undefined when it has none; 'malformed' when it is not SigV4. */
export function presentedCredential(
  headers: Headers,
  query: URLSearchParams,
): SigV4Credential | 'malformed' | undefined {
  const header = headers.get('authorization');
  if (header !== null) {
    const m = HEADER.exec(header);
    if (!m) return 'malformed';
    const amzDate = headers.get('x-amz-date') ?? '';
    return {
      accessKeyId: m[1]!,
      date: m[2]!,
      region: m[3]!,
      service: m[4]!,
      signedHeaders: m[5]!.split(';'),
      signature: m[6]!,
      amzDate,
      presigned: false,
    };
  }
  if (!query.has('X-Amz-Algorithm')) return undefined;
  const scope = SCOPE.exec(query.get('X-Amz-Credential') ?? '');
  const signature = query.get('X-Amz-Signature') ?? '';
  const expires = Number(query.get('X-Amz-Expires'));
  if (
    query.get('X-Amz-Algorithm') !== 'AWS4-HMAC-SHA256' ||
    !scope ||
    !/^[0-9a-f]{64}$/.test(signature) ||
    !Number.isInteger(expires)
  )
    return 'malformed';
  return {
    accessKeyId: scope[1]!,
    date: scope[2]!,
    region: scope[3]!,
    service: scope[4]!,
    signedHeaders: (query.get('X-Amz-SignedHeaders') ?? 'host').split(';'),
    signature,
    amzDate: query.get('X-Amz-Date') ?? '',
    expires,
    presigned: true,
  };
}

/** RFC 3986 encoding as SigV4 wants it (encodeURIComponent leaves !'()* alone). */
function escapeUri(value: string): string {
  return encodeURIComponent(value).replace(
    /[!'()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}

function decode(value: string): string {
  try {
    return decodeURIComponent(value.replace(/\+/g, '%20'));
  } catch {
    return value;
  }
}

function canonicalQuery(rawQuery: string): string {
  const pairs: Array<[string, string]> = [];
  for (const part of rawQuery.split('&')) {
    if (!part) continue;
    const eq = part.indexOf('=');
    const key = decode(eq === -1 ? part : part.slice(0, eq));
    if (key.toLowerCase() === 'x-amz-signature') continue;
    pairs.push([escapeUri(key), escapeUri(eq === -1 ? '' : decode(part.slice(eq + 1)))]);
  }
  pairs.sort(([a, av], [b, bv]) => (a < b ? -1 : a > b ? 1 : av < bv ? -1 : av > bv ? 1 : 0));
  return pairs.map(([k, v]) => `${k}=${v}`).join('&');
}

/**
 * The path as signed: S3 signs the path as sent (each segment encoded once); the other services
 * normalise it and encode it once more, as the SDKs' signer does for them.
 */
function canonicalPath(rawPath: string, service: string): string {
  if (service === 's3') return rawPath || '/';
  const segments: string[] = [];
  for (const segment of rawPath.split('/')) {
    if (segment === '' || segment === '.') continue;
    if (segment === '..') segments.pop();
    else segments.push(segment);
  }
  const path = `/${segments.join('/')}${segments.length && rawPath.endsWith('/') ? '/' : ''}`;
  return path.split('/').map(escapeUri).join('/');
}

const sha256 = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');
const hmac = (key: Buffer | string, data: string) => createHmac('sha256', key).update(data).digest();

/**
 * Derived keys by secret, day, region and service: the same for every request of a day, and four HMACs to
 * derive (AWS's own SDKs cache them too). Bounded: cleared when it holds more than SIGNING_KEYS_KEPT.
 */
const signingKeys = new Map<string, Buffer>();
const SIGNING_KEYS_KEPT = 256;

export function signingKey(secret: string, date: string, region: string, service: string): Buffer {
  const id = `${secret}\n${date}\n${region}\n${service}`;
  let key = signingKeys.get(id);
  if (!key) {
    key = hmac(hmac(hmac(hmac(`AWS4${secret}`, date), region), service), 'aws4_request');
    if (signingKeys.size >= SIGNING_KEYS_KEPT) signingKeys.clear();
    signingKeys.set(id, key);
  }
  return key;
}

/**
 * Whether the signature is the one `secret` gives for this request. `rawPath` and `rawQuery` are the
 * request target as received; `payloadHash` is what the request says it signed (`x-amz-content-sha256`,
 * `UNSIGNED-PAYLOAD` for presigned URLs) or the body's own SHA-256.
 */
export function signatureMatches(
  cred: SigV4Credential,
  secret: string,
  req: { method: string; rawPath: string; rawQuery: string; headers: Headers; payloadHash: string },
): boolean {
  const canonicalHeaders = cred.signedHeaders
    .map((name) => `${name}:${(req.headers.get(name) ?? '').trim().replace(/\s+/g, ' ')}\n`)
    .join('');
  const canonical = [
    req.method,
    canonicalPath(req.rawPath, cred.service),
    canonicalQuery(req.rawQuery),
    canonicalHeaders,
    cred.signedHeaders.join(';'),
    req.payloadHash,
  ].join('\n');
  const scope = `${cred.date}/${cred.region}/${cred.service}/aws4_request`;
  const toSign = ['AWS4-HMAC-SHA256', cred.amzDate, scope, sha256(canonical)].join('\n');
  const expected = createHmac('sha256', signingKey(secret, cred.date, cred.region, cred.service))
    .update(toSign)
    .digest();
  const presented = Buffer.from(cred.signature, 'hex');
  return presented.length === expected.length && timingSafeEqual(presented, expected);
}

/** `YYYYMMDDTHHMMSSZ` as epoch milliseconds, NaN when it is not one. */
export function amzDateMs(amzDate: string): number {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(amzDate);
  if (!m) return Number.NaN;
  return Date.UTC(+m[1]!, +m[2]! - 1, +m[3]!, +m[4]!, +m[5]!, +m[6]!);
}

export const bodySha256 = (body: Buffer) => sha256(body);

/**
 * The payload of an `aws-chunked` body (`<hex size>[;chunk-signature=...]\r\n<data>\r\n ... 0\r\n<trailers>`),
 * which the SDKs send for streamed uploads; undefined when the body is not well formed.
 */
export function decodeAwsChunked(body: Buffer): Buffer | undefined {
  const parts: Buffer[] = [];
  let offset = 0;
  for (;;) {
    const eol = body.indexOf('\r\n', offset);
    if (eol === -1) return undefined;
    const size = Number.parseInt(body.subarray(offset, eol).toString('latin1').split(';')[0]!, 16);
    if (!Number.isInteger(size) || size < 0) return undefined;
    if (size === 0) return Buffer.concat(parts);
    const start = eol + 2;
    if (start + size + 2 > body.length) return undefined;
    parts.push(body.subarray(start, start + size));
    offset = start + size + 2;
  }
}
