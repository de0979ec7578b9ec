import t, { type Test } from 'tap';
import { Resend } from 'resend';
import { TwinAdminClient } from '../../server/twins/kit/admin-client.ts';
import { TwinHost } from '../../server/twins/runtime/host.ts';
import { PRESETS } from '../../server/scenarios/presets.ts';
import { tempDir, tempHost, webhookReceiver } from './helpers.ts';
import { checkGlobalFetch } from './vendor-hooks.ts';
import { checked } from './vendor-schema.ts';
import { twinFactories } from '../../server/twins/registry.ts';

const seed = {
  domains: [{ name: 'acme.dev' }],
  contacts: [{ email: 'ada@example.com', first_name: 'Ada', audience: 'Newsletter' }],
  emails: [{ from: 'Acme <hi@acme.dev>', to: 'grace@example.com', subject: 'Welcome back' }],
};

// Every call resend-node makes (it names itself in User-Agent) is checked against Resend's OpenAPI description.
checkGlobalFetch(
  t,
  'resend',
  (request) => request.headers.get('user-agent')?.startsWith('resend-node') ?? false,
);

/** resend-node as an app builds it from the twin's variables: the key, and RESEND_BASE_URL read from the environment. */
function resendClient(env: Record<string, string>, key = env.RESEND_API_KEY): Resend {
  process.env.RESEND_BASE_URL = env.RESEND_BASE_URL;
  try {
    return new Resend(key);
  } finally {
    delete process.env.RESEND_BASE_URL;
  }
}

/** The data of a resend-node call, or the test fails with its error. */
async function ok<T>(call: Promise<{ data: T | null; error: unknown }>): Promise<T> {
  const { data, error } = await call;
  if (error || data === null) throw new Error(`resend call failed: ${JSON.stringify(error)}`);
  return data;
}

t.test(
  'resend twin: emails, domains, API keys, audiences and signed webhooks through resend-node',
  async (t) => {
    const { host } = await tempHost(t);
    const receiver = await webhookReceiver(t);
    const entry = (
      await host.start('sb', ['resend'], {
        adminToken: 'admin',
        seeds: { resend: { ...seed, webhook: { url: receiver.url } } },
      })
    ).resend!;
    t.match(entry.env_vars.RESEND_API_KEY, /^re_/);
    t.equal(entry.env_vars.RESEND_BASE_URL, entry.base_url);
    const resend = resendClient(entry.env_vars);

    const domains = await ok(resend.domains.list());
    t.same(
      domains.data.map((d) => [d.name, d.status]),
      [['acme.dev', 'verified']],
      'the seeded domain is verified',
    );

    const sent = await ok(
      resend.emails.send({
        from: 'Acme <hi@acme.dev>',
        to: ['ada@example.com'],
        subject: 'Your sandbox is ready',
        html: '<p>Open it</p>',
        tags: [{ name: 'kind', value: 'ready' }],
      }),
    );
    const email = await ok(resend.emails.get(sent.id));
    t.equal(email.subject, 'Your sandbox is ready');
    t.same(email.to, ['ada@example.com']);
    t.equal(email.last_event, 'delivered');

    // The signed webhook, verified the way resend-node documents it.
    const sentEvent = await receiver.next(10_000);
    const verified = resend.webhooks.verify({
      payload: sentEvent.body,
      headers: {
        id: String(sentEvent.headers['svix-id']),
        timestamp: String(sentEvent.headers['svix-timestamp']),
        signature: String(sentEvent.headers['svix-signature']),
      },
      webhookSecret: entry.env_vars.RESEND_WEBHOOK_SECRET!,
    }) as { type: string; data: { email_id: string } };
    t.equal(verified.type, 'email.sent');
    t.equal(verified.data.email_id, sent.id);
    t.throws(
      () =>
        resend.webhooks.verify({
          payload: sentEvent.body.replace('email.sent', 'email.bounced'),
          headers: {
            id: String(sentEvent.headers['svix-id']),
            timestamp: String(sentEvent.headers['svix-timestamp']),
            signature: String(sentEvent.headers['svix-signature']),
          },
          webhookSecret: entry.env_vars.RESEND_WEBHOOK_SECRET!,
        }),
      'a changed body does not verify',
    );

    const unverified = await resend.emails.send({
      from: 'someone@gmail.com',
      to: 'ada@example.com',
      subject: 'x',
      text: 'x',
    });
    t.equal(unverified.data, null);
    t.match(unverified.error, {
      name: 'validation_error',
      statusCode: 403,
      message: /gmail\.com domain is not verified/,
    });
    t.ok(
      (
        await resend.emails.send({
          from: 'onboarding@resend.dev',
          to: 'ada@example.com',
          subject: 'hi',
          text: 'hi',
        })
      ).data?.id,
      "Resend's shared test domain always sends",
    );

    const batch = await ok(
      resend.batch.send([
        { from: 'hi@acme.dev', to: 'a@example.com', subject: 'one', text: '1' },
        { from: 'hi@acme.dev', to: 'b@example.com', subject: 'two', text: '2' },
      ]),
    );
    t.equal(batch.data.length, 2);
    const listed = await ok(resend.emails.list());
    t.ok(
      listed.data.some((e) => e.subject === 'Welcome back'),
      'seeded emails are listed',
    );
    t.ok(listed.data.some((e) => e.subject === 'two'));

    const missing = await resend.emails.get('4ef9a417-02e9-4d39-ad75-9611e0fcc33c');
    t.match(missing.error, { name: 'not_found', statusCode: 404 });

    const domain = await ok(resend.domains.create({ name: 'mail.acme.dev' }));
    t.equal(domain.status, 'pending');
    t.ok(domain.records.length >= 2, 'DNS records to add');
    await ok(resend.domains.verify(domain.id));
    t.equal((await ok(resend.domains.get(domain.id))).status, 'verified');
    await ok(resend.domains.remove(domain.id));

    const key = await ok(resend.apiKeys.create({ name: 'worker' }));
    t.match(key.token, /^re_/);
    const worker = resendClient(entry.env_vars, key.token);
    t.ok((await worker.domains.list()).data, 'a key made through the API works');
    await ok(resend.apiKeys.remove(key.id));
    t.match(
      (await worker.domains.list()).error,
      { name: 'invalid_api_key', statusCode: 403 },
      'until it is deleted',
    );

    const audiences = await ok(resend.audiences.list());
    const newsletter = audiences.data.find((a) => a.name === 'Newsletter')!;
    t.ok(newsletter, 'the seeded contact created its audience');
    t.equal((await ok(resend.audiences.get(newsletter.id))).name, 'Newsletter');
    const contact = await ok(
      resend.contacts.create({ audienceId: newsletter.id, email: 'grace@example.com', firstName: 'Grace' }),
    );
    const contacts = await ok(resend.contacts.list({ audienceId: newsletter.id }));
    t.same(contacts.data.map((c) => c.email).sort(), ['ada@example.com', 'grace@example.com']);
    await ok(resend.contacts.remove({ audienceId: newsletter.id, id: contact.id }));

    // The request log keeps the calls and hides the keys, including the one the API made.
    const admin = new TwinAdminClient(entry.admin_url, 'admin');
    const log = JSON.stringify(await admin.requests());
    t.match(log, /Your sandbox is ready/);
    t.notOk(log.includes(entry.env_vars.RESEND_API_KEY!), 'the API key is redacted');
    t.notOk(log.includes(key.token), 'a created key is redacted');
    t.notOk(log.includes(entry.env_vars.RESEND_WEBHOOK_SECRET!));
    const deliveries = await admin.deliveries();
    t.ok(deliveries.some((d) => d.event === 'email.delivered' && d.success));

    await admin.addFault({ rate_limit: true, count: 1 });
    t.match((await resend.domains.list()).error, { name: 'rate_limit_exceeded', statusCode: 429 });
  },
);

t.test('resend twin: unknown and missing keys fail as Resend fails them', async (t) => {
  const { host } = await tempHost(t);
  const entry = (await host.start('sb', ['resend'], { adminToken: 'admin' })).resend!;
  const bogus = resendClient(entry.env_vars, 're_123456789_notakey');
  const sent = await bogus.emails.send({
    from: 'hi@example.com',
    to: 'a@example.com',
    subject: 'x',
    text: 'x',
  });
  t.equal(sent.data, null);
  t.match(sent.error, { name: 'invalid_api_key', statusCode: 403, message: 'API key is invalid' });
  const anonymous = await fetch(`${entry.base_url}/domains`);
  t.equal(anonymous.status, 401);
  t.match(await anonymous.json(), { name: 'missing_api_key' });
  const admin = new TwinAdminClient(entry.admin_url, 'admin');
  t.equal(
    (await admin.state<{ engine: { collections: Record<string, { items: unknown[] }> } }>()).state.engine
      .collections['resend.emails']?.items.length ?? 0,
    0,
    'nothing was sent',
  );
  const unknownRoute = await fetch(`${entry.base_url}/nope`, {
    headers: { authorization: `Bearer ${entry.env_vars.RESEND_API_KEY}` },
  });
  t.equal(unknownRoute.status, 404);
  t.match(await unknownRoute.json(), { name: 'not_found' });
});

t.test('resend twin: state survives a restart; reset returns to the seed; POST /seed adds', async (t) => {
  const dataDir = await tempDir(t);
  const first = new TwinHost({ factories: twinFactories, dataDir, publicHost: '127.0.0.1' });
  const before = (await first.start('sb', ['resend'], { adminToken: 'admin', seeds: { resend: seed } }))
    .resend!;
  const sent = await ok(
    resendClient(before.env_vars).emails.send({
      from: 'hi@acme.dev',
      to: 'ada@example.com',
      subject: 'kept',
      text: 'k',
    }),
  );
  await first.close();

  const second = new TwinHost({ factories: twinFactories, dataDir, publicHost: '127.0.0.1' });
  t.teardown(() => second.close());
  await second.restore(['sb']);
  const after = second.get('sb')!.resend!;
  t.equal(after.env_vars.RESEND_API_KEY, before.env_vars.RESEND_API_KEY, 'credentials survive');
  t.equal(after.env_vars.RESEND_WEBHOOK_SECRET, before.env_vars.RESEND_WEBHOOK_SECRET);
  const resend = resendClient(after.env_vars);
  t.equal((await ok(resend.emails.get(sent.id))).subject, 'kept', 'the sent email survives');

  const admin = new TwinAdminClient(after.admin_url, 'admin');
  await admin.seed({
    domains: [{ name: 'other.dev' }],
    emails: [{ from: 'a@other.dev', to: 'b@example.com', subject: 'seeded later' }],
  });
  t.same((await ok(resend.domains.list())).data.map((d) => d.name).sort(), ['acme.dev', 'other.dev']);
  await admin.reset();
  const emails = await ok(resend.emails.list());
  t.same(
    emails.data.map((e) => e.subject),
    ['Welcome back'],
    'reset: only the start seed',
  );
  t.same(
    (await ok(resend.domains.list())).data.map((d) => d.name),
    ['acme.dev'],
  );
  t.ok((await resend.domains.list()).data, 'the key still works after reset');

  await t.rejects(admin.seed({ domains: [{ name: 'not a domain' }] }), /resend seed: "domains\[0\]\.name"/);
});

t.test('resend twin: its presets seed what they promise', async (t) => {
  const presets = PRESETS.filter((p) => p.twins.includes('resend'));
  t.ok(presets.length >= 1, 'at least one preset uses resend');
  for (const preset of presets) {
    const { host } = await tempHost(t);
    const entry = (
      await host.start(preset.id, ['resend'], { adminToken: 'admin', seeds: { resend: preset.seed.resend } })
    ).resend!;
    const resend = resendClient(entry.env_vars);
    const promised = preset.promises.resend!;
    if (promised.domains !== undefined)
      t.equal((await ok(resend.domains.list())).data.length, promised.domains);
    if (promised.emails !== undefined) t.equal((await ok(resend.emails.list())).data.length, promised.emails);
  }
});

/** What both resend-node majors answer: `{ data, error }`, never a throw. */
type Answer<T> = Promise<{ data: T | null; error: unknown }>;

/**
 * The calls an app makes with either resend-node major (4 and today's): their shared surface, so one flow
 * runs against both. resend-node 4 has no `emails.list` and no `webhooks`; the current-major test covers those.
 */
interface ResendCalls {
  emails: {
    send(payload: { from: string; to: string | string[]; subject: string; text: string }): Answer<{
      id: string;
    }>;
    get(id: string): Answer<{ subject: string; to: string[] | string; last_event: string }>;
  };
  batch: {
    send(
      payload: Array<{ from: string; to: string; subject: string; text: string }>,
    ): Answer<{ data: unknown[] }>;
  };
  domains: {
    list(): Answer<{ data: Array<{ name: string; status: string }> }>;
    create(payload: { name: string }): Answer<{ id: string; status: string; records: unknown[] }>;
    verify(id: string): Answer<unknown>;
    get(id: string): Answer<{ status: string }>;
    remove(id: string): Answer<unknown>;
  };
  apiKeys: {
    create(payload: { name: string }): Answer<{ id: string; token: string }>;
    remove(id: string): Answer<unknown>;
  };
  audiences: {
    list(): Answer<{ data: Array<{ id: string; name: string }> }>;
    get(id: string): Answer<{ name: string }>;
  };
  contacts: {
    create(payload: { audienceId: string; email: string; firstName?: string }): Answer<{ id: string }>;
    list(options: { audienceId: string }): Answer<{ data: Array<{ email: string }> }>;
    remove(payload: { audienceId: string; id: string }): Answer<unknown>;
  };
}

/**
 * An app's flow with resend-node, whichever major: send (single and batch) and read back, a domain from
 * pending to verified, an API key made, used and deleted, an audience's contacts, and Resend's error bodies
 * (`not_found`, a domain not verified). Every answer is checked against Resend's description on the way.
 */
async function resendFlow(
  t: Test,
  client: (key: string) => ResendCalls,
  apiKey: string,
  label: string,
): Promise<void> {
  const resend = client(apiKey);
  t.same(
    (await ok(resend.domains.list())).data.map((d) => [d.name, d.status]),
    [['acme.dev', 'verified']],
    `${label}: the seeded domain is verified`,
  );
  const sent = await ok(
    resend.emails.send({
      from: 'Acme <hi@acme.dev>',
      to: ['ada@example.com'],
      subject: `hi from ${label}`,
      text: 'x',
    }),
  );
  const email = await ok(resend.emails.get(sent.id));
  t.equal(email.subject, `hi from ${label}`);
  t.same(email.to, ['ada@example.com']);
  const refused = await resend.emails.send({
    from: 'someone@gmail.com',
    to: 'ada@example.com',
    subject: 'x',
    text: 'x',
  });
  t.equal(refused.data, null, `${label}: a domain not verified is refused`);
  t.match(refused.error, {
    name: 'validation_error',
    statusCode: 403,
    message: /gmail\.com domain is not verified/,
  });
  const batch = await ok(
    resend.batch.send([
      { from: 'hi@acme.dev', to: 'a@example.com', subject: 'one', text: '1' },
      { from: 'hi@acme.dev', to: 'b@example.com', subject: 'two', text: '2' },
    ]),
  );
  t.equal(batch.data.length, 2);
  t.match((await resend.emails.get('4ef9a417-02e9-4d39-ad75-9611e0fcc33c')).error, {
    name: 'not_found',
    statusCode: 404,
  });

  const domain = await ok(resend.domains.create({ name: `${label}.acme.dev` }));
  t.equal(domain.status, 'pending');
  t.ok(domain.records.length >= 2, 'DNS records to add');
  await ok(resend.domains.verify(domain.id));
  t.equal((await ok(resend.domains.get(domain.id))).status, 'verified');
  await ok(resend.domains.remove(domain.id));

  const key = await ok(resend.apiKeys.create({ name: `worker ${label}` }));
  t.match(key.token, /^re_/);
  const worker = client(key.token);
  t.ok((await worker.domains.list()).data, `${label}: a key made through the API works`);
  await ok(resend.apiKeys.remove(key.id));
  t.match(
    (await worker.domains.list()).error,
    { name: 'invalid_api_key', statusCode: 403 },
    'until it is deleted',
  );

  const newsletter = (await ok(resend.audiences.list())).data.find((a) => a.name === 'Newsletter');
  if (!newsletter) throw new Error('the seeded audience is not listed');
  t.equal((await ok(resend.audiences.get(newsletter.id))).name, 'Newsletter');
  const contact = await ok(
    resend.contacts.create({ audienceId: newsletter.id, email: `${label}@example.com`, firstName: label }),
  );
  t.ok(
    (await ok(resend.contacts.list({ audienceId: newsletter.id }))).data.some(
      (c) => c.email === `${label}@example.com`,
    ),
  );
  await ok(resend.contacts.remove({ audienceId: newsletter.id, id: contact.id }));
}

t.test('resend twin: one app flow with resend-node 6 and with resend-node 4', async (t) => {
  const { host } = await tempHost(t);
  const entry = (await host.start('sb', ['resend'], { adminToken: 'admin', seeds: { resend: seed } }))
    .resend!;
  await resendFlow(t, (key) => resendClient(entry.env_vars, key), entry.env_vars.RESEND_API_KEY!, 'v6');
  // resend-node 4 reads RESEND_BASE_URL once, as its module loads: an app has it in its environment from the start.
  process.env.RESEND_BASE_URL = entry.env_vars.RESEND_BASE_URL;
  try {
    const { Resend: ResendV4 } = await import('resend-v4');
    const before = checked.length;
    await resendFlow(t, (key) => new ResendV4(key), entry.env_vars.RESEND_API_KEY!, 'v4');
    const results = checked.slice(before).filter((r) => r.twin === 'resend');
    t.ok(
      results.length >= 15,
      `${results.length} answers to resend-node 4 checked against Resend's description`,
    );
  } finally {
    delete process.env.RESEND_BASE_URL;
  }
});
