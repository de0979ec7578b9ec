import t, { type Test } from 'tap';
import {
  CreateBucketCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListBucketsCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import { GetCallerIdentityCommand, STSClient } from '@aws-sdk/client-sts';
import { TwinAdminClient } from '../../server/twins/kit/admin-client.ts';
import { awsTwin } from '../../server/twins/vendors/aws/twin.ts';
import { tempHost, type Teardown } from './helpers.ts';
import { checkSmithyAnswer, smithyCheck } from './smithy-check.ts';
import { checked, VendorSchemaError } from './vendor-schema.ts';

const seed = {
  region: 'eu-west-1',
  buckets: [{ name: 'app-uploads', objects: { 'welcome.txt': 'Hello from the seed' } }, { name: 'app-logs' }],
};

const ENV_KEYS = [
  'AWS_ACCESS_KEY_ID',
  'AWS_SECRET_ACCESS_KEY',
  'AWS_REGION',
  'AWS_ENDPOINT_URL',
  'AWS_ENDPOINT_URL_S3',
] as const;

/**
 * The twin's env_vars in this process's environment until the test ends: the SDK reads
 * AWS_ENDPOINT_URL[_S3], AWS_REGION and the key pair itself, when a call is made.
 */
function useEnv(t: Teardown, env: Record<string, string>): void {
  const before = Object.fromEntries(ENV_KEYS.map((k) => [k, process.env[k]]));
  for (const k of ENV_KEYS) process.env[k] = env[k];
  t.teardown(() => {
    for (const k of ENV_KEYS) {
      if (before[k] === undefined) delete process.env[k];
      else process.env[k] = before[k];
    }
  });
}

/**
 * The SDK clients as an app builds them: no options but the credentials a test wants to get wrong, the
 * rest from the environment. Retries off, so an injected fault reaches the test as it is.
 */
function clients(t: Teardown, credentials?: { accessKeyId: string; secretAccessKey: string }) {
  // Every answer is checked against AWS's own Smithy models (../shared/vendor-schemas/aws): a missing
  // required member or a value of the wrong type rejects the call and fails the test.
  const s3 = smithyCheck(new S3Client({ maxAttempts: 1, ...(credentials ? { credentials } : {}) }), 's3');
  const sts = smithyCheck(new STSClient({ maxAttempts: 1, ...(credentials ? { credentials } : {}) }), 'sts');
  t.teardown(() => {
    s3.destroy();
    sts.destroy();
  });
  return { s3, sts };
}

const errorOf = (call: Promise<unknown>) =>
  call.then(
    () => undefined,
    (e: S3ServiceException) => ({ name: e.name, status: e.$metadata?.httpStatusCode }),
  );

t.test(
  'aws twin: S3 objects and STS identity through the AWS SDK v3, configured by env_vars only',
  async (t) => {
    const { host } = await tempHost(t);
    const entry = (await host.start('sb', ['aws'], { adminToken: 'admin', seeds: { aws: seed } })).aws!;
    t.match(entry.env_vars.AWS_ACCESS_KEY_ID, /^AKIA[A-Z2-7]{16}$/);
    t.equal(entry.env_vars.AWS_SECRET_ACCESS_KEY!.length, 40);
    t.equal(entry.env_vars.AWS_REGION, 'eu-west-1');
    useEnv(t, entry.env_vars);
    const { s3, sts } = clients(t);

    const buckets = await s3.send(new ListBucketsCommand({}));
    t.same(
      buckets.Buckets?.map((b) => b.Name).sort(),
      ['app-logs', 'app-uploads'],
      'only the seeded buckets',
    );
    const seeded = await s3.send(new GetObjectCommand({ Bucket: 'app-uploads', Key: 'welcome.txt' }));
    t.equal(await seeded.Body?.transformToString(), 'Hello from the seed');

    await s3.send(new CreateBucketCommand({ Bucket: 'avatars' }));
    const put = await s3.send(
      new PutObjectCommand({
        Bucket: 'avatars',
        Key: 'users/ada/profile.json',
        Body: JSON.stringify({ name: 'Ada' }),
        ContentType: 'application/json',
        Metadata: { owner: 'ada' },
      }),
    );
    t.match(put.ETag, /^"[0-9a-f]{32}"$/);
    const bytes = Buffer.from([0, 1, 2, 250, 255]);
    await s3.send(new PutObjectCommand({ Bucket: 'avatars', Key: 'users/ada/avatar.bin', Body: bytes }));

    const head = await s3.send(new HeadObjectCommand({ Bucket: 'avatars', Key: 'users/ada/profile.json' }));
    t.equal(head.ContentType, 'application/json');
    t.equal(head.Metadata?.owner, 'ada');
    const got = await s3.send(new GetObjectCommand({ Bucket: 'avatars', Key: 'users/ada/avatar.bin' }));
    t.same(Buffer.from(await got.Body!.transformToByteArray()), bytes, 'binary bodies round-trip');

    const listed = await s3.send(new ListObjectsV2Command({ Bucket: 'avatars', Prefix: 'users/ada/' }));
    t.same(listed.Contents?.map((o) => o.Key).sort(), ['users/ada/avatar.bin', 'users/ada/profile.json']);

    await s3.send(new DeleteObjectCommand({ Bucket: 'avatars', Key: 'users/ada/avatar.bin' }));
    t.same(await errorOf(s3.send(new GetObjectCommand({ Bucket: 'avatars', Key: 'users/ada/avatar.bin' }))), {
      name: 'NoSuchKey',
      status: 404,
    });
    t.same(await errorOf(s3.send(new ListObjectsV2Command({ Bucket: 'nope' }))), {
      name: 'NoSuchBucket',
      status: 404,
    });

    const me = await sts.send(new GetCallerIdentityCommand({}));
    t.equal(me.Account, '123456789012');
    t.equal(me.Arn, 'arn:aws:iam::123456789012:user/twinbox', 'the key pair is the twin user’s');

    const admin = new TwinAdminClient(entry.admin_url, 'admin');
    await admin.addFault({ rate_limit: true, count: 1 });
    t.same(await errorOf(s3.send(new ListBucketsCommand({}))), { name: 'SlowDown', status: 503 });
    t.ok((await s3.send(new ListBucketsCommand({}))).Buckets, 'then it stops');

    // Request log: the secret key never appears, nor the key id, nor the signature header.
    const log = JSON.stringify(await admin.requests());
    t.notOk(log.includes(entry.env_vars.AWS_SECRET_ACCESS_KEY!), 'no secret key in the log');
    t.notOk(log.includes(entry.env_vars.AWS_ACCESS_KEY_ID!), 'no access key id in the log');
    t.match(log, /avatars/, 'the log shows the calls');

    await admin.reset();
    t.same(
      (await s3.send(new ListBucketsCommand({}))).Buckets?.map((b) => b.Name).sort(),
      ['app-logs', 'app-uploads'],
      'reset drops what the app created',
    );
    const again = await s3.send(new GetObjectCommand({ Bucket: 'app-uploads', Key: 'welcome.txt' }));
    t.equal(await again.Body?.transformToString(), 'Hello from the seed', 'and brings the seed back');

    await admin.seed({ buckets: [{ name: 'more', objects: { 'a.txt': 'A' } }] });
    const more = await s3.send(new GetObjectCommand({ Bucket: 'more', Key: 'a.txt' }));
    t.equal(await more.Body?.transformToString(), 'A', 'POST /seed adds buckets and objects');
  },
);

t.test('aws twin: state and credentials survive a restart', async (t) => {
  const { host } = await tempHost(t);
  const entry = (await host.start('sb', ['aws'], { adminToken: 'admin', seeds: { aws: seed } })).aws!;
  useEnv(t, entry.env_vars);
  const { s3 } = clients(t);
  await s3.send(new PutObjectCommand({ Bucket: 'app-logs', Key: '2026/11/23.log', Body: 'deploy ok\n' }));

  await host.stop('sb');
  await host.restore(['sb']);
  const restored = host.get('sb')?.aws;
  t.ok(restored, 'the instance comes back from its state file');
  t.equal(restored!.env_vars.AWS_SECRET_ACCESS_KEY, entry.env_vars.AWS_SECRET_ACCESS_KEY, 'same key pair');
  useEnv(t, restored!.env_vars);
  const { s3: after } = clients(t);
  const log = await after.send(new GetObjectCommand({ Bucket: 'app-logs', Key: '2026/11/23.log' }));
  t.equal(await log.Body?.transformToString(), 'deploy ok\n');
  const buckets = await after.send(new ListBucketsCommand({}));
  t.notOk(
    buckets.Buckets?.some((b) => b.Name === 'emulate-default'),
    'the engine demo bucket stays out after a restart',
  );
});

t.test('aws twin: unknown keys and wrong secrets fail as AWS fails them', async (t) => {
  const { host } = await tempHost(t);
  const entry = (await host.start('sb', ['aws'], { adminToken: 'admin', seeds: { aws: seed } })).aws!;
  const env = entry.env_vars;
  useEnv(t, env);

  const unknown = clients(t, {
    accessKeyId: 'AKIAIOSFODNN7EXAMPLE',
    secretAccessKey: env.AWS_SECRET_ACCESS_KEY!,
  });
  t.same(await errorOf(unknown.s3.send(new ListBucketsCommand({}))), {
    name: 'InvalidAccessKeyId',
    status: 403,
  });
  t.same(await errorOf(unknown.sts.send(new GetCallerIdentityCommand({}))), {
    name: 'InvalidClientTokenId',
    status: 403,
  });

  const wrongSecret = clients(t, { accessKeyId: env.AWS_ACCESS_KEY_ID!, secretAccessKey: 'x'.repeat(40) });
  t.same(await errorOf(wrongSecret.s3.send(new ListBucketsCommand({}))), {
    name: 'SignatureDoesNotMatch',
    status: 403,
  });
  t.same(
    await errorOf(wrongSecret.s3.send(new PutObjectCommand({ Bucket: 'app-logs', Key: 'x', Body: 'x' }))),
    { name: 'SignatureDoesNotMatch', status: 403 },
  );
  t.same(await errorOf(wrongSecret.sts.send(new GetCallerIdentityCommand({}))), {
    name: 'SignatureDoesNotMatch',
    status: 403,
  });

  const anonymous = await fetch(`${env.AWS_ENDPOINT_URL}/app-uploads/welcome.txt`);
  t.equal(anonymous.status, 403);
  t.match(await anonymous.text(), /<Code>AccessDenied<\/Code>/);

  // A signed request altered on the way (another body than the one signed) is refused.
  const { s3 } = clients(t);
  s3.middlewareStack.add(
    (next) => async (args) => {
      const request = args.request as { body?: unknown };
      request.body = 'tampered';
      return next(args);
    },
    { step: 'finalizeRequest', priority: 'low', name: 'tamper' },
  );
  t.same(await errorOf(s3.send(new PutObjectCommand({ Bucket: 'app-logs', Key: 'x', Body: 'original' }))), {
    name: 'XAmzContentSHA256Mismatch',
    status: 400,
  });
});

/**
 * The S3 and STS calls of an app, as either SDK generation makes them. The AWS SDK for JavaScript v2
 * (`aws-sdk`) and v3 share no call shape (`s3.putObject(params).promise()` against
 * `s3.send(new PutObjectCommand(params))`), so each gets a thin adapter and the flow below is one.
 */
interface AwsCalls {
  listBuckets(): Promise<string[]>;
  createBucket(bucket: string): Promise<void>;
  putObject(params: {
    Bucket: string;
    Key: string;
    Body: string | Buffer;
    ContentType?: string;
    Metadata?: Record<string, string>;
  }): Promise<string | undefined>;
  headObject(
    bucket: string,
    key: string,
  ): Promise<{ ContentType?: string; Metadata?: Record<string, string> }>;
  getObject(bucket: string, key: string): Promise<Buffer>;
  listKeys(bucket: string, prefix?: string): Promise<string[]>;
  deleteObject(bucket: string, key: string): Promise<void>;
  callerIdentity(): Promise<{ Account?: string; Arn?: string }>;
  /** The service error a call rejected with: its name (v2's `code`) and HTTP status. */
  failure(call: Promise<unknown>): Promise<{ name?: string; status?: number } | undefined>;
}

/** v3's clients, configured from the environment (`clients` above checks each answer against the models). */
function sdkV3Calls(t: Teardown): AwsCalls {
  const { s3, sts } = clients(t);
  return {
    listBuckets: async () => (await s3.send(new ListBucketsCommand({}))).Buckets?.map((b) => b.Name!) ?? [],
    createBucket: async (Bucket) => void (await s3.send(new CreateBucketCommand({ Bucket }))),
    putObject: async (params) => (await s3.send(new PutObjectCommand(params))).ETag,
    headObject: (Bucket, Key) => s3.send(new HeadObjectCommand({ Bucket, Key })),
    getObject: async (Bucket, Key) =>
      Buffer.from(await (await s3.send(new GetObjectCommand({ Bucket, Key }))).Body!.transformToByteArray()),
    listKeys: async (Bucket, Prefix) =>
      (await s3.send(new ListObjectsV2Command({ Bucket, Prefix }))).Contents?.map((o) => o.Key!) ?? [],
    deleteObject: async (Bucket, Key) => void (await s3.send(new DeleteObjectCommand({ Bucket, Key }))),
    callerIdentity: () => sts.send(new GetCallerIdentityCommand({})),
    failure: errorOf,
  };
}

/**
 * v2's clients as its docs have an app make them for an S3-compatible endpoint: v2 reads the key pair and
 * AWS_REGION from the environment but not AWS_ENDPOINT_URL[_S3] (only v3 and the newer SDKs do), so the
 * endpoint is passed, with path-style addressing. No retries, as for v3.
 */
async function sdkV2Calls(): Promise<AwsCalls> {
  // Each client on its own, as v2's docs show for loading one service (`require('aws-sdk/clients/s3')`):
  // the whole SDK's types were a third of what `tsc` read for the suite's type check. aws-sdk is CommonJS,
  // which Node's ESM loader gives as a default export.
  const { default: S3 } = await import('aws-sdk/clients/s3.js');
  const { default: STS } = await import('aws-sdk/clients/sts.js');
  const s3 = new S3({ endpoint: process.env.AWS_ENDPOINT_URL_S3, s3ForcePathStyle: true, maxRetries: 0 });
  const sts = new STS({ endpoint: process.env.AWS_ENDPOINT_URL, maxRetries: 0 });
  /** A v2 call's answer, checked against the service's Smithy model before the flow reads it. */
  async function checked<T>(service: 's3' | 'sts', operation: string, request: { promise(): Promise<T> }) {
    let output: T;
    try {
      output = await request.promise();
    } catch (error) {
      checkSmithyAnswer(service, operation, { error: error as { code?: string; statusCode?: number } });
      throw error;
    }
    checkSmithyAnswer(service, operation, { output });
    return output;
  }
  return {
    listBuckets: async () =>
      (await checked('s3', 'ListBuckets', s3.listBuckets())).Buckets?.map((b) => b.Name!) ?? [],
    createBucket: async (Bucket) => void (await checked('s3', 'CreateBucket', s3.createBucket({ Bucket }))),
    putObject: async (params) => (await checked('s3', 'PutObject', s3.putObject(params))).ETag,
    headObject: (Bucket, Key) => checked('s3', 'HeadObject', s3.headObject({ Bucket, Key })),
    getObject: async (Bucket, Key) =>
      Buffer.from((await checked('s3', 'GetObject', s3.getObject({ Bucket, Key }))).Body as Uint8Array),
    listKeys: async (Bucket, Prefix) =>
      (await checked('s3', 'ListObjectsV2', s3.listObjectsV2({ Bucket, Prefix }))).Contents?.map(
        (o) => o.Key!,
      ) ?? [],
    deleteObject: async (Bucket, Key) =>
      void (await checked('s3', 'DeleteObject', s3.deleteObject({ Bucket, Key }))),
    callerIdentity: () => checked('sts', 'GetCallerIdentity', sts.getCallerIdentity({})),
    failure: (call) =>
      call.then(
        () => undefined,
        (e: { code?: string; statusCode?: number }) => {
          if (e instanceof VendorSchemaError) throw e;
          return { name: e.code, status: e.statusCode };
        },
      ),
  };
}

/**
 * An app's S3 and STS flow, whichever SDK generation `aws` wraps: the seeded buckets and object, a bucket
 * created, text with a content type and metadata and binary bodies stored and read back, a prefix listing, a
 * delete, S3's NoSuchKey and NoSuchBucket, and the caller's identity.
 */
async function storageFlow(t: Test, aws: AwsCalls, label: string): Promise<void> {
  const bucket = `avatars-${label}`;
  t.ok((await aws.listBuckets()).includes('app-uploads'), `${label}: the seeded bucket is listed`);
  t.equal((await aws.getObject('app-uploads', 'welcome.txt')).toString(), 'Hello from the seed');
  await aws.createBucket(bucket);
  const etag = await aws.putObject({
    Bucket: bucket,
    Key: 'users/ada/profile.json',
    Body: JSON.stringify({ name: 'Ada' }),
    ContentType: 'application/json',
    Metadata: { owner: 'ada' },
  });
  t.match(etag, /^"[0-9a-f]{32}"$/);
  const bytes = Buffer.from([0, 1, 2, 250, 255]);
  await aws.putObject({ Bucket: bucket, Key: 'users/ada/avatar.bin', Body: bytes });
  const head = await aws.headObject(bucket, 'users/ada/profile.json');
  t.equal(head.ContentType, 'application/json');
  t.equal(head.Metadata?.owner, 'ada', `${label}: user metadata comes back`);
  t.same(await aws.getObject(bucket, 'users/ada/avatar.bin'), bytes, `${label}: binary bodies round-trip`);
  t.same((await aws.listKeys(bucket, 'users/ada/')).sort(), [
    'users/ada/avatar.bin',
    'users/ada/profile.json',
  ]);
  await aws.deleteObject(bucket, 'users/ada/avatar.bin');
  t.same(await aws.failure(aws.getObject(bucket, 'users/ada/avatar.bin')), {
    name: 'NoSuchKey',
    status: 404,
  });
  t.same(await aws.failure(aws.listKeys('nope')), { name: 'NoSuchBucket', status: 404 });
  const me = await aws.callerIdentity();
  t.equal(me.Account, '123456789012');
  t.equal(me.Arn, 'arn:aws:iam::123456789012:user/twinbox');
}

t.test('aws twin: one S3 and STS flow with the AWS SDK for JavaScript v3 and v2', async (t) => {
  const { host } = await tempHost(t);
  const entry = (await host.start('sb', ['aws'], { adminToken: 'admin', seeds: { aws: seed } })).aws!;
  useEnv(t, entry.env_vars);
  await storageFlow(t, sdkV3Calls(t), 'v3');
  const before = checked.length;
  await storageFlow(t, await sdkV2Calls(), 'v2');
  const results = checked.slice(before).filter((r) => r.twin === 'aws');
  t.ok(results.length >= 12, `${results.length} answers to aws-sdk 2 checked against the Smithy models`);
});

t.test('aws twin: seeds are checked', async (t) => {
  t.throws(() => awsTwin.validateSeed({ buckets: [{ name: 'Bad_Bucket' }] }), /valid S3 bucket name/);
  t.throws(() => awsTwin.validateSeed({ buckets: [{ name: 'ok-bucket', objects: { a: 1 } }] }), /aws seed/);
  t.same(awsTwin.validateSeed(undefined), {});
});

t.test('aws twin: which query-protocol calls the runtime saves (changesState)', async (t) => {
  const driver = await awsTwin.create({ baseUrl: 'http://127.0.0.1:9', seed: awsTwin.validateSeed({}) });
  t.teardown(() => driver.close());
  const env = driver.envVars();
  const scoped = (service: string) =>
    `AWS4-HMAC-SHA256 Credential=${env.AWS_ACCESS_KEY_ID}/20260101/us-east-1/${service}/aws4_request, SignedHeaders=host;x-amz-date, Signature=${'0'.repeat(64)}`;
  const changes = (path: string, body: string, headers: Record<string, string> = {}, method = 'POST') =>
    driver.changesState!(
      { method, url: new URL(`http://127.0.0.1:9${path}`), headers: new Headers(headers) },
      Buffer.from(body),
    );
  const cases: Array<[string, boolean, ...Parameters<typeof changes>]> = [
    [
      'STS GetCallerIdentity at the root',
      false,
      '/',
      'Action=GetCallerIdentity&Version=2011-06-15',
      { authorization: scoped('sts') },
    ],
    [
      'STS AssumeRole (keeps nothing)',
      false,
      '/',
      'Action=AssumeRole&RoleArn=x',
      { authorization: scoped('sts') },
    ],
    ['IAM ListUsers at /iam/', false, '/iam/', 'Action=ListUsers'],
    ['IAM CreateUser', true, '/', 'Action=CreateUser&UserName=ada', { authorization: scoped('iam') }],
    ['IAM DeleteAccessKey', true, '/iam/', 'Action=DeleteAccessKey'],
    ['SQS GetQueueUrl', false, '/sqs/', 'Action=GetQueueUrl&QueueName=q'],
    ['SQS ReceiveMessage (moves the visibility)', true, '/sqs/', 'Action=ReceiveMessage'],
    [
      'a read action, then a write one: the engine takes the last',
      true,
      '/sts/',
      'Action=GetCallerIdentity&Action=AssumeRole&Action=CreateUser',
    ],
    ['no Action in the body: the query string’s', false, '/sts/?Action=GetCallerIdentity', ''],
    ['no Action at all', true, '/sts/', 'Version=2011-06-15'],
    ['an S3 POST at the root', true, '/', 'Action=GetCallerIdentity', { authorization: scoped('s3') }],
    ['an aws-chunked body', true, '/sts/', 'Action=GetCallerIdentity', { 'content-encoding': 'aws-chunked' }],
    ['an S3 GET', false, '/bucket/key', '', {}, 'GET'],
    ['an S3 PUT', true, '/bucket/key', 'data', {}, 'PUT'],
  ];
  let checkedCases = 0;
  for (const [label, expected, ...args] of cases) {
    t.equal(changes(...args), expected, label);
    checkedCases++;
  }
  t.equal(checkedCases, cases.length, 'every case was checked');
});
