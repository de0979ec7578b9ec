import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { changesStateByMethod, type Authorization, type RequestHead } from '../../contract.ts';
import type { Engine } from '../../engine/emulate.ts';
import { EngineTwin } from '../../engine/engine-twin.ts';
import { credentialFieldsSaved, engineTwinFactory } from '../../engine/factory.ts';
import type { WebhookSigner } from '../../runtime/webhooks.ts';
import {
  amzDateMs,
  bodySha256,
  decodeAwsChunked,
  presentedCredential,
  signatureMatches,
  type SigV4Credential,
} from './sigv4.ts';
import { toAwsResponse } from './shape.ts';
import { awsDescriptor, type AwsSeed } from './descriptor.ts';

/** The engine's `aws` seed: the account's region and what it creates by name. */
interface AwsEngineSeed {
  region: string;
  s3: { buckets: Array<{ name: string }> };
  sqs: { queues: Array<{ name: string }> };
  iam: { users: Array<{ user_name: string }>; roles: Array<{ role_name: string; description?: string }> };
}

/** What the engine always creates, which a fresh Twinbox account does not have (and a public example key). */
const ENGINE_DEFAULTS = {
  bucket: 'emulate-default',
  queue: 'emulate-default-queue',
  user: 'admin',
};

const QUERY_SERVICES = new Set(['sts', 'iam', 'sqs']);
/** Whether a body is `aws-chunked` (streamed, with chunk signatures), by its payload hash or encoding. */
function isAwsChunked(payloadHash: string, headers: Headers): boolean {
  return payloadHash.startsWith('STREAMING-') || /aws-chunked/i.test(headers.get('content-encoding') ?? '');
}

/**
 * The query-protocol actions of the engine (emulate 0.12.2) that write nothing to its store, by service:
 * the runtime need not make their change durable before answering (there is none), which cost a state
 * comparison and a journal turn on every call. AssumeRole makes its credentials up and keeps none.
 * An action missing here is taken for a write.
 */
const READ_ACTIONS: Record<string, ReadonlySet<string>> = {
  sts: new Set(['GetCallerIdentity', 'AssumeRole']),
  iam: new Set(['GetUser', 'ListUsers', 'ListAccessKeys', 'GetRole', 'ListRoles']),
  sqs: new Set(['ListQueues', 'GetQueueUrl', 'GetQueueAttributes']),
};
// AWS refuses a signature whose time is more than 15 minutes off, and presigned URLs over 7 days.
const MAX_SKEW_MS = 15 * 60 * 1000;
const MAX_PRESIGN_SECONDS = 7 * 24 * 3600;

const xmlEscape = (s: string) =>
  s.replace(/[<>&'"]/g, (c) => `&${{ '<': 'lt', '>': 'gt', '&': 'amp', "'": 'apos', '"': 'quot' }[c]};`);

/** S3's error document (REST-XML): `<Error>` at the root, request ids in headers too. */
function s3Error(
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
function queryError(status: number, code: string, message: string): Response {
  const requestId = randomUUID();
  const type = status >= 500 ? 'Receiver' : 'Sender';
  const body = `<?xml version="1.0" encoding="UTF-8"?>\n<ErrorResponse><Error><Type>${type}</Type><Code>${code}</Code><Message>${xmlEscape(message)}</Message></Error><RequestId>${requestId}</RequestId></ErrorResponse>`;
  return new Response(body, {
    status,
    headers: { 'content-type': 'text/xml', 'x-amzn-requestid': requestId },
  });
}

/** The service a request is for: its credential scope, else the engine's path prefix, else S3. */
function serviceOf(cred: SigV4Credential | undefined, pathname: string): string {
  if (cred) return cred.service;
  const prefix = /^\/(sts|iam|sqs)\//.exec(pathname)?.[1];
  return prefix ?? 's3';
}

const md5 = (data: Buffer) => createHash('md5').update(data).digest('hex');

/** AWS sends no webhooks the twin models (S3 event notifications go to SNS, SQS or Lambda): nothing to sign. */
const noSigner: WebhookSigner = () => ({});

class AwsTwin extends EngineTwin {
  constructor(
    engine: Engine,
    baseUrl: string,
    credentials: Record<string, string>,
    private readonly seed: AwsSeed,
  ) {
    super(engine, baseUrl, credentials, noSigner);
  }

  private get accessKeyId(): string {
    return this.credentials.AWS_ACCESS_KEY_ID!;
  }

  private get secretAccessKey(): string {
    return this.credentials.AWS_SECRET_ACCESS_KEY!;
  }

  private get region(): string {
    return this.seed.region ?? 'us-east-1';
  }

  private get userName(): string {
    return this.seed.user_name ?? 'twinbox';
  }

  private collection(name: string) {
    return this.engine.store.collection(name);
  }

  /** The secret and IAM user of an access key: the twin's own, or an active one IAM issued here. */
  private keyOwner(accessKeyId: string): { secret: string; user: string } | undefined {
    if (accessKeyId === this.accessKeyId) return { secret: this.secretAccessKey, user: this.userName };
    for (const user of this.collection('aws.iam_users').all()) {
      const keys = Array.isArray(user.access_keys)
        ? (user.access_keys as Array<Record<string, unknown>>)
        : [];
      const key = keys.find((k) => k.access_key_id === accessKeyId && k.status === 'Active');
      if (key) return { secret: String(key.secret_access_key), user: String(user.user_name) };
    }
    return undefined;
  }

  private refuse(service: string, status: number, code: string, message: string, akid?: string): Response {
    if (QUERY_SERVICES.has(service)) return queryError(status, code, message);
    return s3Error(status, code, message, akid ? { AWSAccessKeyId: akid } : {});
  }

  /**
   * The request's SigV4 credential, of a key this twin knows, with the key's secret and IAM user.
   * No credential at all is an anonymous request, which AWS refuses for everything the twin holds.
   */
  private signingKey(head: RequestHead): { cred: SigV4Credential; secret: string; user: string } | Response {
    const cred = presentedCredential(head.headers, head.url.searchParams);
    const service = serviceOf(cred === 'malformed' ? undefined : cred, head.url.pathname);
    if (cred === undefined) {
      return QUERY_SERVICES.has(service)
        ? queryError(403, 'MissingAuthenticationToken', 'Request is missing Authentication Token')
        : s3Error(403, 'AccessDenied', 'Access Denied');
    }
    if (cred === 'malformed') {
      return QUERY_SERVICES.has(service)
        ? queryError(400, 'IncompleteSignature', 'The request signature does not conform to AWS standards.')
        : s3Error(400, 'AuthorizationHeaderMalformed', 'The authorization header is malformed.');
    }
    const owner = this.keyOwner(cred.accessKeyId);
    if (!owner) {
      return QUERY_SERVICES.has(service)
        ? queryError(403, 'InvalidClientTokenId', 'The security token included in the request is invalid.')
        : s3Error(
            403,
            'InvalidAccessKeyId',
            'The AWS Access Key Id you provided does not exist in our records.',
            {
              AWSAccessKeyId: cred.accessKeyId,
            },
          );
    }
    return { cred, ...owner };
  }

  /** What can be judged before the body: a credential of a key this twin knows, and its time. */
  authorize(head: RequestHead): Authorization {
    const key = this.signingKey(head);
    if (key instanceof Response) return key;
    const { cred } = key;
    const service = cred.service;
    const signedAt = amzDateMs(cred.amzDate);
    if (Number.isNaN(signedAt) || cred.amzDate.slice(0, 8) !== cred.date) {
      return this.refuse(
        service,
        403,
        'AccessDenied',
        'X-Amz-Date is missing or does not match the credential date.',
      );
    }
    if (cred.presigned) {
      if (cred.expires! < 1 || cred.expires! > MAX_PRESIGN_SECONDS) {
        return s3Error(
          400,
          'AuthorizationQueryParametersError',
          'X-Amz-Expires must be less than a week (in seconds) that is 604800',
        );
      }
      if (Date.now() > signedAt + cred.expires! * 1000)
        return s3Error(403, 'AccessDenied', 'Request has expired');
    } else if (Math.abs(Date.now() - signedAt) > MAX_SKEW_MS) {
      return this.refuse(
        service,
        403,
        'RequestTimeTooSkewed',
        'The difference between the request time and the current time is too large.',
      );
    }
    return true;
  }

  /**
   * A query-protocol call (STS, IAM, SQS: a POST, its `Action` in the form body) changes state unless its
   * action is one of the engine's reads (READ_ACTIONS); every other request by its method, as by default.
   * The service is the one `handle` sends it to: the credential's at the endpoint root, else the path's.
   * The engine reads `Action` from the body (the last one given), from the query string only when the
   * body has none; every value either could take must be a read, and an aws-chunked body (decoded only in
   * `handle`) is taken for a write.
   */
  changesState(head: RequestHead, body: Buffer): boolean {
    if (head.method !== 'POST') return changesStateByMethod(head.method);
    const path = head.url.pathname;
    let service = /^\/(sts|iam|sqs)\/$/.exec(path)?.[1];
    if (!service && (path === '/' || path === '')) {
      const cred = presentedCredential(head.headers, head.url.searchParams);
      service = typeof cred === 'object' ? cred.service : undefined;
    }
    const reads = service === undefined ? undefined : READ_ACTIONS[service];
    if (!reads) return true;
    if (isAwsChunked(head.headers.get('x-amz-content-sha256') ?? '', head.headers)) return true;
    const inBody = new URLSearchParams(body.toString('utf8')).getAll('Action');
    const actions = inBody.length ? inBody : head.url.searchParams.getAll('Action');
    return actions.length === 0 || !actions.every((action) => reads.has(action));
  }

  /**
   * Checks the signature over the whole request, then hands it to the engine: the query-protocol
   * services at the endpoint root (as the SDKs call them with one `AWS_ENDPOINT_URL`) go to the
   * engine's `/sts/`, `/iam/` and `/sqs/`; an `aws-chunked` upload is decoded first.
   */
  override async handle(request: Request): Promise<Response> {
    const url = new URL(request.url);
    // `authorize` let the credential in; the signature needs its key's secret, looked up again (a key
    // IAM deleted while the body was coming is refused as unknown).
    const key = this.signingKey({ method: request.method, url, headers: request.headers });
    if (key instanceof Response) return key;
    const { cred, secret, user } = key;
    let body: Buffer = Buffer.from(await request.arrayBuffer());
    const declared = request.headers.get('x-amz-content-sha256');
    if (cred.service === 's3' && !cred.presigned && !declared) {
      return s3Error(400, 'InvalidRequest', 'Missing required header for this request: x-amz-content-sha256');
    }
    const payloadHash = cred.presigned ? 'UNSIGNED-PAYLOAD' : (declared ?? bodySha256(body));
    if (/^[0-9a-f]{64}$/.test(payloadHash) && payloadHash !== bodySha256(body)) {
      return s3Error(
        400,
        'XAmzContentSHA256Mismatch',
        "The provided 'x-amz-content-sha256' header does not match what was computed.",
      );
    }
    const rawQuery = url.search.startsWith('?') ? url.search.slice(1) : '';
    if (
      !signatureMatches(cred, secret, {
        method: request.method,
        rawPath: url.pathname,
        rawQuery,
        headers: request.headers,
        payloadHash,
      })
    ) {
      return this.refuse(
        cred.service,
        403,
        'SignatureDoesNotMatch',
        'The request signature we calculated does not match the signature you provided. Check your key and signing method.',
        cred.accessKeyId,
      );
    }
    const headers = new Headers(request.headers);
    if (isAwsChunked(payloadHash, headers)) {
      const decoded = decodeAwsChunked(body);
      if (!decoded)
        return s3Error(400, 'IncompleteBody', 'The request body is not valid aws-chunked encoding.');
      body = decoded;
      const encodings = (headers.get('content-encoding') ?? '')
        .split(',')
        .map((e) => e.trim())
        .filter((e) => e && e.toLowerCase() !== 'aws-chunked');
      if (encodings.length) headers.set('content-encoding', encodings.join(', '));
      else headers.delete('content-encoding');
      headers.set('content-length', String(body.length));
    }
    if (cred.service === 'sqs' && headers.has('x-amz-target')) {
      // The current SQS clients speak the JSON protocol; the engine speaks only the query protocol.
      return new Response(
        JSON.stringify({
          __type: 'com.amazon.coral.service#UnknownOperationException',
          message: 'This twin serves SQS over the query protocol only.',
        }),
        { status: 400, headers: { 'content-type': 'application/x-amz-json-1.0' } },
      );
    }
    if (QUERY_SERVICES.has(cred.service) && (url.pathname === '/' || url.pathname === '')) {
      url.pathname = `/${cred.service}/`;
    }
    // The engine knows callers by a bearer token: the access key id, standing for its IAM user.
    this.engine.tokenMap.set(cred.accessKeyId, { login: user, id: 1 });
    headers.set('authorization', `Bearer ${cred.accessKeyId}`);
    const method = request.method;
    const response = await this.engine.app.fetch(
      new Request(url, {
        method,
        headers,
        ...(method === 'GET' || method === 'HEAD' ? {} : { body: new Uint8Array(body) }),
      }),
    );
    return toAwsResponse(
      method,
      cred.service,
      url.pathname,
      response,
      (bucket, key) =>
        this.collection('aws.s3_objects')
          .findBy('bucket_name', bucket)
          .find((o) => o.key === key)?.metadata,
    );
  }

  errorResponse(status: number, message: string, code?: string): Response {
    if (code === 'too_large') {
      return s3Error(413, 'EntityTooLarge', 'Your proposed upload exceeds the maximum allowed size');
    }
    if (status >= 500)
      return s3Error(status, 'InternalError', 'We encountered an internal error. Please try again.');
    return s3Error(status, status === 403 ? 'AccessDenied' : 'InvalidRequest', message);
  }

  envVars(): Record<string, string> {
    return {
      AWS_ACCESS_KEY_ID: this.accessKeyId,
      AWS_SECRET_ACCESS_KEY: this.secretAccessKey,
      AWS_REGION: this.region,
      // AWS SDK v3 (and the CLI) read both; the service-specific one wins for S3.
      AWS_ENDPOINT_URL: this.baseUrl,
      AWS_ENDPOINT_URL_S3: this.baseUrl,
    };
  }

  /** The twin's key pair (the key id too: it names the account) and the secrets of the keys IAM issued. */
  override secrets(): string[] {
    const issued = this.collection('aws.iam_users')
      .all()
      .flatMap((u) => (Array.isArray(u.access_keys) ? (u.access_keys as Array<Record<string, unknown>>) : []))
      .map((k) => String(k.secret_access_key ?? ''));
    return [this.secretAccessKey, this.accessKeyId, ...issued];
  }

  /** Leaves the engine's own demo objects out, and makes the twin's key pair an IAM user's. */
  prepare(): void {
    const buckets = this.collection('aws.s3_buckets');
    const queues = this.collection('aws.sqs_queues');
    const users = this.collection('aws.iam_users');
    const seeded = (list: Array<{ name?: string; user_name?: string }> | undefined, name: string) =>
      list?.some((x) => (x.name ?? x.user_name) === name);
    for (const b of buckets.findBy('bucket_name', ENGINE_DEFAULTS.bucket))
      if (!seeded(this.seed.buckets, ENGINE_DEFAULTS.bucket)) buckets.delete(b.id);
    for (const q of queues.findBy('queue_name', ENGINE_DEFAULTS.queue))
      if (!seeded(this.seed.queues, ENGINE_DEFAULTS.queue)) queues.delete(q.id);
    for (const u of users.findBy('user_name', ENGINE_DEFAULTS.user)) users.delete(u.id);
    this.addObjects(this.seed);
    if (!users.findOneBy('user_name', this.userName)) {
      users.insert({
        user_name: this.userName,
        user_id: `AIDA${randomBytes(8).toString('hex').toUpperCase()}`,
        arn: `arn:aws:iam::123456789012:user/${this.userName}`,
        path: '/',
        access_keys: [],
      });
    }
  }

  /** Seeded objects, written to the engine's store as its PutObject writes them. */
  private addObjects(seed: AwsSeed): void {
    const objects = this.collection('aws.s3_objects');
    const now = new Date().toISOString();
    for (const bucket of seed.buckets ?? []) {
      for (const [key, text] of Object.entries(bucket.objects ?? {})) {
        const body = Buffer.from(text, 'utf8');
        const fields = {
          body_base64: body.toString('base64'),
          content_type: key.endsWith('.json') ? 'application/json' : 'text/plain',
          content_length: body.length,
          etag: md5(body),
          last_modified: now,
          metadata: {},
        };
        const existing = objects.findBy('bucket_name', bucket.name).find((o) => o.key === key);
        if (existing) objects.update(existing.id, fields);
        else objects.insert({ bucket_name: bucket.name, key, ...fields });
      }
    }
  }

  protected override afterReset(): void {
    this.prepare();
  }

  async applySeed(raw: unknown): Promise<void> {
    const seed = raw as AwsSeed;
    this.engine.seedFromConfig(engineSeed(seed, this.region));
    this.addObjects(seed);
  }

  faultResponse(kind: 'status' | 'rate_limit', status: number): Response {
    // S3 throttles with 503 SlowDown (the SDKs retry it as a throttling error).
    if (kind === 'rate_limit') return s3Error(503, 'SlowDown', 'Please reduce your request rate.');
    if (status >= 500)
      return s3Error(status, 'InternalError', 'We encountered an internal error. Please try again.');
    return s3Error(status, status === 403 ? 'AccessDenied' : 'InvalidRequest', 'Injected fault');
  }
}

function engineSeed(seed: AwsSeed, region: string): AwsEngineSeed {
  return {
    region,
    s3: { buckets: (seed.buckets ?? []).map((b) => ({ name: b.name })) },
    sqs: { queues: seed.queues ?? [] },
    iam: { users: seed.iam?.users ?? [], roles: seed.iam?.roles ?? [] },
  };
}

/** `AKIA` + 16 upper-case letters and digits, as AWS access key ids look. */
function accessKeyId(): string {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  return `AKIA${[...randomBytes(16)].map((b) => alphabet[b % 32]).join('')}`;
}

export const awsTwin = engineTwinFactory(awsDescriptor, {
  newCredentials: () => ({
    AWS_ACCESS_KEY_ID: accessKeyId(),
    AWS_SECRET_ACCESS_KEY: randomBytes(30).toString('base64').slice(0, 40),
  }),
  engineSeed: (seed) => ({ aws: engineSeed(seed, seed.region ?? 'us-east-1') }),
  driver: (engine, baseUrl, credentials, seed) => new AwsTwin(engine, baseUrl, credentials, seed),
  fresh: (twin) => twin.prepare(),
  // Up to d4a1e50 the twin saved its key pair in fields of their own and no token map (the
  // engine's then starts empty: `handle` puts the caller's credential in it): read once, saved anew.
  readSaved: credentialFieldsSaved({
    AWS_ACCESS_KEY_ID: 'access_key_id',
    AWS_SECRET_ACCESS_KEY: 'secret_access_key',
  }),
});
