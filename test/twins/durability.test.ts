import t from 'tap';
import { spawn, type ChildProcess } from 'node:child_process';
import { appendFile, readFile, stat } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { GetCallerIdentityCommand, STSClient } from '@aws-sdk/client-sts';
import { LinearClient } from '@linear/sdk';
import { Resend } from 'resend';
import Stripe from 'stripe';
import { journalPath, snapshotPath } from '../../server/twins/runtime/persistence.ts';
import { twinFactories } from '../../server/twins/registry.ts';
import type { TwinEntry } from '../../server/twins/runtime/host.ts';
import { tempDir, type Teardown } from './helpers.ts';
import { githubClient } from './vendor-schema.ts';

/**
 * Issue 20, part 3: a twin answers a write only once the change is on disk. A process that hosts twins
 * (durable-child.ts) is killed with SIGKILL right after its writes were answered; a new one restores the
 * sandbox from the same directory, and every answered write is there. One engine-backed twin through the
 * engine factory (Resend), GitHub (engine inside, its own driver) and Stripe (its own store).
 */

const CHILD = fileURLToPath(new URL('./durable-child.ts', import.meta.url));
const SANDBOX = 'sb-durable';
const ghSeed = {
  users: [{ login: 'octocat', email: 'octocat@example.com' }],
  repos: [{ owner: 'octocat', name: 'app' }],
};

interface Child {
  proc: ChildProcess;
  entries: Record<string, TwinEntry>;
  stderr: () => string;
}

/** Starts a twin-hosting process; resolves with its twins' entries once they serve (bounded wait). */
async function hostProcess(t: Teardown, env: Record<string, string>): Promise<Child> {
  const proc = spawn(process.execPath, ['--import', 'tsx', CHILD], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  proc.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  t.teardown(() => {
    if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
  });
  const line = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the twin process did not start: ${stderr}`)), 120_000);
    createInterface({ input: proc.stdout! }).once('line', (l) => {
      clearTimeout(timer);
      resolve(l);
    });
    proc.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the twin process exited (${code}): ${stderr}`));
    });
  });
  return { proc, entries: JSON.parse(line) as Record<string, TwinEntry>, stderr: () => stderr };
}

async function killNow(child: Child): Promise<void> {
  const exited = new Promise((resolve) => child.proc.once('exit', resolve));
  child.proc.kill('SIGKILL');
  await exited;
}

function stripeOf(entry: TwinEntry): Stripe {
  const url = new URL(entry.base_url);
  return new Stripe(entry.env_vars.STRIPE_SECRET_KEY!, {
    host: url.hostname,
    port: Number(url.port),
    protocol: 'http',
    maxNetworkRetries: 0,
  });
}

function resendOf(entry: TwinEntry): Resend {
  process.env.RESEND_BASE_URL = entry.env_vars.RESEND_BASE_URL;
  try {
    return new Resend(entry.env_vars.RESEND_API_KEY);
  } finally {
    delete process.env.RESEND_BASE_URL;
  }
}

t.test('answered writes survive kill -9 of the process hosting the twins', async (t) => {
  const dataDir = await tempDir(t);
  const first = await hostProcess(t, {
    DURABLE_DATA_DIR: dataDir,
    DURABLE_TWINS: 'stripe,github,resend',
    DURABLE_SEEDS: JSON.stringify({ github: ghSeed, resend: { domains: [{ name: 'acme.dev' }] } }),
  });
  const octokit = githubClient({
    auth: first.entries.github!.env_vars.GITHUB_TOKEN,
    baseUrl: first.entries.github!.base_url,
  });
  const issue = await octokit.issues.create({ owner: 'octocat', repo: 'app', title: 'Kept after kill -9' });
  const sent = await resendOf(first.entries.resend!).emails.send({
    from: 'Acme <hi@acme.dev>',
    to: 'grace@example.com',
    subject: 'Kept after kill -9',
    html: '<p>hi</p>',
  });
  t.equal(sent.error, null, 'the email was accepted');
  // Stripe last, killed the moment its answers are in.
  const stripe = stripeOf(first.entries.stripe!);
  const one = await stripe.customers.create({ email: 'one@example.com' });
  // Written at once: their records share fsyncs (group commit), and each is answered only once on disk.
  const many = await Promise.all(
    Array.from({ length: 12 }, (_, i) => stripe.customers.create({ email: `many-${i}@example.com` })),
  );
  await killNow(first);

  // What carried the writes is the journal: the snapshot was written when the twins started.
  const stripeSnapshot = await readFile(snapshotPath(dataDir, SANDBOX, 'stripe'), 'utf8');
  t.notMatch(stripeSnapshot, 'one@example.com', 'the snapshot predates the customer');
  t.match(await readFile(journalPath(dataDir, SANDBOX, 'stripe'), 'utf8'), 'one@example.com');

  const second = await hostProcess(t, { DURABLE_DATA_DIR: dataDir, DURABLE_MODE: 'restore' });
  t.same(Object.keys(second.entries).sort(), ['github', 'resend', 'stripe'], 'all three twins restored');
  const stripeAfter = stripeOf(second.entries.stripe!);
  t.equal((await stripeAfter.customers.retrieve(one.id)).id, one.id, 'the customer answered 200 is there');
  const kept = await Promise.all(many.map((c) => stripeAfter.customers.retrieve(c.id)));
  t.same(
    kept.map((c) => (c as Stripe.Customer).email),
    many.map((c) => c.email),
    'so are the 12 written at once',
  );
  const octokitAfter = githubClient({
    auth: second.entries.github!.env_vars.GITHUB_TOKEN,
    baseUrl: second.entries.github!.base_url,
  });
  const gotIssue = await octokitAfter.issues.get({
    owner: 'octocat',
    repo: 'app',
    issue_number: issue.data.number,
  });
  t.equal(gotIssue.data.title, 'Kept after kill -9', 'the GitHub issue is there');
  const email = await resendOf(second.entries.resend!).emails.get(sent.data!.id);
  t.equal(email.data?.subject, 'Kept after kill -9', 'the Resend email is there');

  // Restoring compacted: the snapshot holds it all, and the journal starts empty.
  t.match(await readFile(snapshotPath(dataDir, SANDBOX, 'stripe'), 'utf8'), 'one@example.com');
  const journal = (await readFile(journalPath(dataDir, SANDBOX, 'stripe'), 'utf8')).split('\n');
  t.same(journal.length, 2, 'the journal holds its header only');
  await killNow(second);
});

t.test('reads write nothing; a torn last journal record is dropped, the ones before it kept', async (t) => {
  const dataDir = await tempDir(t);
  const first = await hostProcess(t, { DURABLE_DATA_DIR: dataDir, DURABLE_TWINS: 'stripe' });
  const stripe = stripeOf(first.entries.stripe!);
  const customer = await stripe.customers.create({ email: 'reader@example.com' });
  // Input the twin keeps as keys, named like prototype properties, goes through the journal as keys.
  const proto = await stripe.customers.create(
    { email: 'proto@example.com' },
    { idempotencyKey: '__proto__' },
  );
  const log = journalPath(dataDir, SANDBOX, 'stripe');
  const size = (await stat(log)).size;
  for (let i = 0; i < 10; i++) {
    await stripe.customers.retrieve(customer.id);
    await stripe.customers.list({ limit: 3 });
  }
  t.equal((await stat(log)).size, size, 'twenty reads added nothing to the journal');
  await killNow(first);

  // What a power cut in the middle of an append could leave: a record without its newline.
  await appendFile(log, '{"patch":[{"op":"add","path":"/x"');
  const second = await hostProcess(t, { DURABLE_DATA_DIR: dataDir, DURABLE_MODE: 'restore' });
  const restored = await stripeOf(second.entries.stripe!).customers.retrieve(customer.id);
  t.equal((restored as Stripe.Customer).email, 'reader@example.com', 'the answered write is kept');
  const again = await stripeOf(second.entries.stripe!).customers.create(
    { email: 'proto@example.com' },
    { idempotencyKey: '__proto__' },
  );
  t.equal(again.id, proto.id, 'the Idempotency-Key `__proto__` was kept as a key: the same customer again');
  t.match(second.stderr(), /journal replay stopped early.*torn/, 'the torn record is reported');
  await killNow(second);
});

// Linear's reads and writes are all POST /graphql: the twin tells them apart by the document
// (LinearTwin.changesState), so a query is not saved and a mutation is on disk before its answer.
t.test('linear: a query writes nothing, a mutation is on disk when answered', async (t) => {
  const dataDir = await tempDir(t);
  const seed = {
    organization: { name: 'Acme', url_key: 'acme' },
    users: [{ email: 'ada@acme.dev', name: 'Ada Lovelace', admin: true }],
    teams: [{ key: 'WEB', name: 'Web' }],
  };
  const first = await hostProcess(t, {
    DURABLE_DATA_DIR: dataDir,
    DURABLE_TWINS: 'linear',
    DURABLE_SEEDS: JSON.stringify({ linear: seed }),
  });
  const env = first.entries.linear!.env_vars;
  const linear = new LinearClient({ apiKey: env.LINEAR_API_KEY, apiUrl: env.LINEAR_API_URL });
  const web = (await linear.teams()).nodes.find((team) => team.key === 'WEB')!;
  t.ok(web, 'the seeded team');
  const log = journalPath(dataDir, SANDBOX, 'linear');
  const size = (await stat(log)).size;
  for (let i = 0; i < 5; i++) {
    t.equal((await linear.viewer).email, 'ada@acme.dev');
    await linear.issues();
  }
  t.equal((await stat(log)).size, size, 'ten queries added nothing to the journal');
  const created = await linear.createIssue({ teamId: web.id, title: 'Saved before answered' });
  const issue = (await created.issue)!;
  t.ok((await stat(log)).size > size, 'the mutation is in the journal');
  await killNow(first);

  const second = await hostProcess(t, { DURABLE_DATA_DIR: dataDir, DURABLE_MODE: 'restore' });
  const after = second.entries.linear!.env_vars;
  const restored = new LinearClient({ apiKey: after.LINEAR_API_KEY, apiUrl: after.LINEAR_API_URL });
  t.equal((await restored.issue(issue.id)).title, 'Saved before answered', 'the answered mutation is kept');
  await killNow(second);
});

// AWS's query protocol sends its reads as POSTs (STS GetCallerIdentity): the twin names the engine's
// read actions (AwsTwin.changesState), so they are not saved, while a write is on disk before its answer.
t.test('aws: STS GetCallerIdentity writes nothing, an S3 PutObject is on disk when answered', async (t) => {
  const dataDir = await tempDir(t);
  const first = await hostProcess(t, {
    DURABLE_DATA_DIR: dataDir,
    DURABLE_TWINS: 'aws',
    DURABLE_SEEDS: JSON.stringify({ aws: { buckets: [{ name: 'kept' }] } }),
  });
  const awsClients = (entry: TwinEntry) => {
    const env = entry.env_vars;
    const options = {
      maxAttempts: 1,
      region: env.AWS_REGION!,
      endpoint: env.AWS_ENDPOINT_URL!,
      forcePathStyle: true,
      credentials: { accessKeyId: env.AWS_ACCESS_KEY_ID!, secretAccessKey: env.AWS_SECRET_ACCESS_KEY! },
    };
    const clients = { sts: new STSClient(options), s3: new S3Client(options) };
    t.teardown(() => {
      clients.sts.destroy();
      clients.s3.destroy();
    });
    return clients;
  };
  const { sts, s3 } = awsClients(first.entries.aws!);
  const log = journalPath(dataDir, SANDBOX, 'aws');
  const size = (await stat(log)).size;
  // The first call is the one that used to be saved: the engine learns the caller's key on it.
  for (let i = 0; i < 5; i++) {
    const me = await sts.send(new GetCallerIdentityCommand({}));
    t.equal(me.Arn, 'arn:aws:iam::123456789012:user/twinbox', `GetCallerIdentity ${i + 1} answers`);
  }
  t.equal((await stat(log)).size, size, 'five GetCallerIdentity calls added nothing to the journal');
  await s3.send(new PutObjectCommand({ Bucket: 'kept', Key: 'saved.txt', Body: 'saved before answered' }));
  t.ok((await stat(log)).size > size, 'the PutObject is in the journal');
  await killNow(first);

  const second = await hostProcess(t, { DURABLE_DATA_DIR: dataDir, DURABLE_MODE: 'restore' });
  const restored = awsClients(second.entries.aws!);
  const object = await restored.s3.send(new GetObjectCommand({ Bucket: 'kept', Key: 'saved.txt' }));
  t.equal(await object.Body!.transformToString(), 'saved before answered', 'the answered write is kept');
  t.equal(
    (await restored.sts.send(new GetCallerIdentityCommand({}))).Arn,
    'arn:aws:iam::123456789012:user/twinbox',
    'the restored twin still knows its caller',
  );
  await killNow(second);
});

t.test('a journal compacted while writes go on loses none of them', async (t) => {
  const dataDir = await tempDir(t);
  const first = await hostProcess(t, {
    DURABLE_DATA_DIR: dataDir,
    DURABLE_TWINS: 'github',
    DURABLE_SEEDS: JSON.stringify({ github: ghSeed }),
  });
  const octokit = githubClient({
    auth: first.entries.github!.env_vars.GITHUB_TOKEN,
    baseUrl: first.entries.github!.base_url,
  });
  const snapshot = snapshotPath(dataDir, SANDBOX, 'github');
  const titles: string[] = [];
  let compactedAt = 0;
  // Ten writers at once, without pause, until the journal has outgrown its snapshot and been compacted
  // into a new one while they wrote, and as many writes again after.
  await Promise.all(
    Array.from({ length: 10 }, async () => {
      while (compactedAt === 0 || titles.length < 2 * compactedAt) {
        if (titles.length >= 5000) throw new Error('the journal was never compacted');
        const title = `issue ${titles.length}`;
        titles.push(title);
        await octokit.issues.create({ owner: 'octocat', repo: 'app', title });
        if (compactedAt === 0 && (await readFile(snapshot, 'utf8')).includes('"issue 0"'))
          compactedAt = titles.length;
      }
    }),
  );
  t.ok(compactedAt > 10, `compacted after ${compactedAt} issues, while more were written`);
  await killNow(first);

  const second = await hostProcess(t, { DURABLE_DATA_DIR: dataDir, DURABLE_MODE: 'restore' });
  const after = githubClient({
    auth: second.entries.github!.env_vars.GITHUB_TOKEN,
    baseUrl: second.entries.github!.base_url,
  });
  const issues = await after.paginate(after.issues.listForRepo, {
    owner: 'octocat',
    repo: 'app',
    state: 'all',
    per_page: 100,
  });
  t.same(issues.map((i) => i.title).sort(), titles.toSorted(), 'every issue answered is there, once');
  await killNow(second);
});

/** Where `value` is not plain JSON (a Date, a Map, a class instance, undefined in an array...), or undefined. */
function notPlain(value: unknown, path = ''): string | undefined {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return undefined;
  if (typeof value === 'number') return Number.isFinite(value) ? undefined : path;
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) {
      const found = notPlain(item, `${path}/${i}`);
      if (found !== undefined) return found;
    }
    return undefined;
  }
  if (typeof value !== 'object') return path;
  const proto = Object.getPrototypeOf(value) as unknown;
  if (proto !== Object.prototype && proto !== null) return path;
  for (const [key, item] of Object.entries(value)) {
    // An absent key, to JSON and to the diff alike (not so in an array, where JSON makes it null).
    if (item === undefined) continue;
    const found = notPlain(item, `${path}/${key}`);
    if (found !== undefined) return found;
  }
  return undefined;
}

// The journal diffs a driver's live snapshot against the persisted state (instance.ts, commit): a value
// JSON would turn into something else would be recorded wrongly, or on every write.
t.test("every twin's snapshot is plain JSON", async (t) => {
  t.ok(twinFactories.size >= 14, 'all twins are checked');
  for (const [name, factory] of twinFactories) {
    const driver = await factory.create({
      baseUrl: 'http://127.0.0.1:9',
      seed: factory.validateSeed(undefined),
    });
    try {
      t.equal(notPlain(driver.snapshot()), undefined, `${name}: no value JSON would change`);
    } finally {
      await driver.close();
    }
  }
});
