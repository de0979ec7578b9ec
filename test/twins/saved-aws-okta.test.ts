import t from 'tap';
import { cp, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  GetObjectCommand,
  HeadObjectCommand,
  ListBucketsCommand,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import { GetCallerIdentityCommand, STSClient } from '@aws-sdk/client-sts';
import * as okta from '@okta/okta-sdk-nodejs';
import { TwinAdminClient } from '../../server/twins/kit/admin-client.ts';
import { snapshotPath } from '../../server/twins/runtime/persistence.ts';
import type { TwinEntry } from '../../server/twins/runtime/host.ts';
import { tempHost, type Teardown } from './helpers.ts';
import { smithyCheck } from './smithy-check.ts';

/**
 * State files written by the aws and okta twins of d4a1e50, whose snapshots were written by hand, before
 * they moved onto engineTwinFactory (fixtures/saved-aws-okta-d4a1e50/README.md says what each holds).
 * Today's twins read that format once: the next save is EngineTwinSaved, which restores too.
 */
const FIXTURES = fileURLToPath(new URL('./fixtures/saved-aws-okta-d4a1e50/', import.meta.url));

/** The state a fixture's snapshot holds, in the old format (what the restored twin must hand out again). */
async function savedState(sandbox: string, twin: string): Promise<Record<string, string>> {
  const record = JSON.parse(await readFile(join(FIXTURES, sandbox, `${twin}.json`), 'utf8')) as {
    state: Record<string, string>;
  };
  return record.state;
}

/** A host on a temp data dir holding a copy of the fixture's sandbox, restored from it. */
async function restored(t: Teardown, sandbox: string, twin: string) {
  const { host, dataDir } = await tempHost(t);
  await cp(join(FIXTURES, sandbox), join(dataDir, sandbox), { recursive: true });
  await host.restore([sandbox]);
  const entry = host.get(sandbox)?.[twin];
  if (!entry) throw new Error(`${twin} did not come back from ${sandbox}`);
  const again = async (): Promise<TwinEntry> => {
    await host.stop(sandbox);
    await host.restore([sandbox]);
    return host.get(sandbox)![twin]!;
  };
  /** The state file as the restored instance rewrote it. */
  const onDisk = async () =>
    (
      JSON.parse(await readFile(snapshotPath(dataDir, sandbox, twin), 'utf8')) as {
        state: Record<string, unknown>;
      }
    ).state;
  return { entry, again, onDisk };
}

const errorOf = (call: Promise<unknown>) =>
  call.then(
    () => undefined,
    (e: S3ServiceException) => ({ name: e.name, status: e.$metadata?.httpStatusCode }),
  );

/** The AWS SDK clients of a twin's env_vars, every answer checked against AWS's Smithy models. */
function awsClients(t: Teardown, env: Record<string, string>) {
  const config = {
    region: env.AWS_REGION,
    credentials: { accessKeyId: env.AWS_ACCESS_KEY_ID!, secretAccessKey: env.AWS_SECRET_ACCESS_KEY! },
    maxAttempts: 1,
  };
  const s3 = smithyCheck(
    new S3Client({ ...config, endpoint: env.AWS_ENDPOINT_URL_S3, forcePathStyle: true }),
    's3',
  );
  const sts = smithyCheck(new STSClient({ ...config, endpoint: env.AWS_ENDPOINT_URL }), 'sts');
  t.teardown(() => {
    s3.destroy();
    sts.destroy();
  });
  return { s3, sts };
}

t.test('aws: a state file of d4a1e50 restores, and so does the next save', async (t) => {
  const old = await savedState('aws-d4a1e50', 'aws');
  const { entry, again, onDisk } = await restored(t, 'aws-d4a1e50', 'aws');

  const check = async (aws: TwinEntry, when: string) => {
    t.equal(aws.env_vars.AWS_ACCESS_KEY_ID, old.access_key_id, `${when}: the saved key id`);
    t.equal(aws.env_vars.AWS_SECRET_ACCESS_KEY, old.secret_access_key, `${when}: the saved secret`);
    t.equal(aws.env_vars.AWS_REGION, 'eu-west-1', `${when}: the seed's region`);
    const { s3, sts } = awsClients(t, aws.env_vars);
    const buckets = await s3.send(new ListBucketsCommand({}));
    t.same(buckets.Buckets?.map((b) => b.Name).sort(), ['app-logs', 'app-uploads', 'avatars'], when);
    const welcome = await s3.send(new GetObjectCommand({ Bucket: 'app-uploads', Key: 'welcome.txt' }));
    t.equal(await welcome.Body?.transformToString(), 'Hello from the seed', `${when}: the seeded object`);
    const log = await s3.send(new GetObjectCommand({ Bucket: 'app-logs', Key: '2026/11/23.log' }));
    t.equal(await log.Body?.transformToString(), 'deploy ok\n', `${when}: an object the app wrote`);
    const avatar = await s3.send(new GetObjectCommand({ Bucket: 'avatars', Key: 'users/ada/avatar.bin' }));
    t.same(
      Buffer.from(await avatar.Body!.transformToByteArray()),
      Buffer.from([0, 1, 2, 250, 255]),
      `${when}: binary bytes`,
    );
    const head = await s3.send(new HeadObjectCommand({ Bucket: 'avatars', Key: 'users/ada/profile.json' }));
    t.equal(head.ContentType, 'application/json', `${when}: content type`);
    t.equal(head.Metadata?.owner, 'ada', `${when}: user metadata`);
    t.same(
      await errorOf(s3.send(new GetObjectCommand({ Bucket: 'app-uploads', Key: 'gone.txt' }))),
      { name: 'NoSuchKey', status: 404 },
      `${when}: a deleted object stays deleted`,
    );
    const me = await sts.send(new GetCallerIdentityCommand({}));
    t.equal(me.Arn, 'arn:aws:iam::123456789012:user/deployer', `${when}: the key pair is the seed's user's`);
    const wrong = awsClients(t, { ...aws.env_vars, AWS_SECRET_ACCESS_KEY: 'x'.repeat(40) });
    t.same(
      await errorOf(wrong.s3.send(new ListBucketsCommand({}))),
      { name: 'SignatureDoesNotMatch', status: 403 },
      `${when}: a wrong secret is still refused`,
    );
    return s3;
  };

  const s3 = await check(entry, 'restored from d4a1e50');
  const state = await onDisk();
  t.same(
    Object.keys(state).sort(),
    ['credentials', 'engine', 'tokens'],
    'the restored instance saved EngineTwinSaved at once',
  );
  t.same(state.credentials, {
    AWS_ACCESS_KEY_ID: old.access_key_id,
    AWS_SECRET_ACCESS_KEY: old.secret_access_key,
  });
  await s3.send(new PutObjectCommand({ Bucket: 'avatars', Key: 'after.txt', Body: 'written after' }));

  const next = await again();
  const s3Again = await check(next, 'restored from its new save');
  const after = await s3Again.send(new GetObjectCommand({ Bucket: 'avatars', Key: 'after.txt' }));
  t.equal(await after.Body?.transformToString(), 'written after', 'a write after the upgrade is kept');

  await new TwinAdminClient(next.admin_url, 'admin').reset();
  t.same(
    (await s3Again.send(new ListBucketsCommand({}))).Buckets?.map((b) => b.Name).sort(),
    ['app-logs', 'app-uploads'],
    'reset returns to the saved seed',
  );
});

/** okta-sdk-nodejs on a twin's env_vars, without a response cache (a reset must show at once). */
function oktaClient(env: Record<string, string>, token = env.OKTA_CLIENT_TOKEN): okta.Client {
  return new okta.Client({
    orgUrl: env.OKTA_CLIENT_ORGURL,
    token,
    cacheMiddleware: null,
  } as ConstructorParameters<typeof okta.Client>[0]);
}

async function all<T>(collection: { each(fn: (item: T) => void): Promise<unknown> }): Promise<T[]> {
  const items: T[] = [];
  await collection.each((item) => void items.push(item));
  return items;
}

t.test('okta: a state file of d4a1e50 restores, and so does the next save', async (t) => {
  const old = await savedState('okta-d4a1e50', 'okta');
  const { entry, again, onDisk } = await restored(t, 'okta-d4a1e50', 'okta');

  const check = async (o: TwinEntry, when: string, more: Record<string, string> = {}) => {
    const env = o.env_vars;
    t.equal(env.OKTA_CLIENT_TOKEN, old.api_token, `${when}: the saved API token`);
    t.equal(env.OKTA_OAUTH2_CLIENT_ID, old.client_id, `${when}: the saved client id`);
    t.equal(env.OKTA_OAUTH2_CLIENT_SECRET, old.client_secret, `${when}: the saved client secret`);
    const client = oktaClient(env);
    const users = await all<okta.User>(await client.userApi.listUsers());
    t.same(
      Object.fromEntries(users.map((u) => [u.profile?.login, u.status])),
      {
        'ada@acme.example.com': 'ACTIVE',
        'grace@acme.example.com': 'ACTIVE',
        'linus@acme.example.com': 'ACTIVE',
        'margaret@acme.example.com': 'DEPROVISIONED',
        ...more,
      },
      `${when}: the users and their lifecycle`,
    );
    const groups = await all<okta.Group>(await client.groupApi.listGroups());
    t.same(groups.map((g) => g.profile?.name).sort(), ['Engineering', 'Everyone', 'Ops'], `${when}: groups`);
    const members = async (name: string) => {
      const group = groups.find((g) => g.profile?.name === name)!;
      const list = await all<okta.User>(await client.groupApi.listGroupUsers({ groupId: group.id! }));
      return list.map((u) => u.profile?.login);
    };
    t.same(await members('Engineering'), ['ada@acme.example.com'], `${when}: seeded membership`);
    t.same(await members('Ops'), ['linus@acme.example.com'], `${when}: a membership the app made`);

    const bogus = oktaClient(env, '00bogus-token-000000000000000000');
    const refused = await bogus.userApi
      .listUsers()
      .then((c) => all(c))
      .then(
        () => undefined,
        (e: { status?: number }) => e.status,
      );
    t.equal(refused, 401, `${when}: another token is still refused`);

    // The twin's OIDC app (its client is in the saved store) still issues tokens to its saved secret.
    const basic = Buffer.from(`${env.OKTA_OAUTH2_CLIENT_ID}:${env.OKTA_OAUTH2_CLIENT_SECRET}`).toString(
      'base64',
    );
    const token = await fetch(`${env.OKTA_OAUTH2_ISSUER}/v1/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${basic}` },
      body: 'grant_type=client_credentials&scope=api',
    });
    t.equal(token.status, 200, `${when}: client credentials`);
    t.equal(((await token.json()) as { token_type?: string }).token_type, 'Bearer');
    return client;
  };

  const client = await check(entry, 'restored from d4a1e50');
  const state = await onDisk();
  t.same(
    Object.keys(state).sort(),
    ['credentials', 'engine', 'tokens'],
    'the restored instance saved EngineTwinSaved at once',
  );
  t.same(state.credentials, {
    OKTA_CLIENT_TOKEN: old.api_token,
    OKTA_OAUTH2_CLIENT_ID: old.client_id,
    OKTA_OAUTH2_CLIENT_SECRET: old.client_secret,
  });
  const created = await client.userApi.createUser({
    body: {
      profile: {
        firstName: 'After',
        lastName: 'Upgrade',
        email: 'after@acme.example.com',
        login: 'after@acme.example.com',
      },
    },
    activate: true,
  });

  const next = await again();
  const clientAgain = await check(next, 'restored from its new save', {
    'after@acme.example.com': 'ACTIVE',
  });
  t.equal((await clientAgain.userApi.getUser({ userId: 'after@acme.example.com' })).id, created.id);

  await new TwinAdminClient(next.admin_url, 'admin').reset();
  const afterReset = await all<okta.User>(await clientAgain.userApi.listUsers());
  t.same(
    afterReset.map((u) => u.profile?.login).sort(),
    ['ada@acme.example.com', 'grace@acme.example.com'],
    'reset returns to the saved seed',
  );
});
