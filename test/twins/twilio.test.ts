import t, { type Test } from 'tap';
import twilio from 'twilio';
import { TwinAdminClient } from '../../server/twins/kit/admin-client.ts';
import { TwinHost } from '../../server/twins/runtime/host.ts';
import { tempDir, tempHost } from './helpers.ts';
import { assertVendorResponse, checked } from './vendor-schema.ts';
import { twinFactories } from '../../server/twins/registry.ts';

type TwilioModule = typeof twilio;

/**
 * twilio-node has no base-URL setting; an app points it at the twin with an httpClient that sends
 * https://<product>.twilio.com/<path> to TWILIO_BASE_URL (api -> /, verify -> /verify, ...), as docs/twins.md shows.
 * Here it also checks every response against Twilio's vendored description (a failure rejects the call).
 * Made from the RequestClient of the twilio-node major in use (5 and today's have the same one).
 */
function twinRequestClient(sdk: TwilioModule, base: string): InstanceType<TwilioModule['RequestClient']> {
  class TwinRequestClient extends sdk.RequestClient {
    override async request<TData>(opts: Parameters<typeof twilio.RequestClient.prototype.request<TData>>[0]) {
      const uri = new URL(opts.uri);
      const product = uri.hostname.split('.')[0];
      const path = `${product === 'api' ? '' : `/${product}`}${uri.pathname}`;
      opts.uri = `${base}${path}${uri.search}`;
      const response = await super.request<TData>(opts);
      // Every answer is checked against Twilio's OpenAPI descriptions before twilio-node reads it.
      let body: unknown = response.body;
      if (typeof body === 'string' && body) {
        try {
          body = JSON.parse(body);
        } catch {
          // Not JSON: checked as text, which a JSON schema refuses.
        }
      }
      assertVendorResponse('twilio', { method: opts.method, path, status: response.statusCode, body });
      return response;
    }
  }
  return new TwinRequestClient();
}

function twilioClient(
  env: Record<string, string>,
  user = env.TWILIO_ACCOUNT_SID!,
  password = env.TWILIO_AUTH_TOKEN!,
  sdk: TwilioModule = twilio,
) {
  return sdk(user, password, {
    accountSid: env.TWILIO_ACCOUNT_SID,
    httpClient: twinRequestClient(sdk, env.TWILIO_BASE_URL!),
  });
}

async function restError(call: Promise<unknown>): Promise<{ status?: number; code?: number }> {
  try {
    await call;
  } catch (error) {
    return error as { status?: number; code?: number };
  }
  throw new Error('the call succeeded');
}

t.test('twilio twin: SMS and Verify through twilio-node', async (t) => {
  const { host } = await tempHost(t);
  const entry = (
    await host.start('sb', ['twilio'], {
      adminToken: 'admin',
      seeds: { twilio: { phone_numbers: [{ phone_number: '+15005550006', friendly_name: 'Alerts' }] } },
    })
  ).twilio!;
  const env = entry.env_vars;
  t.match(env.TWILIO_ACCOUNT_SID, /^AC[0-9a-f]{32}$/);
  t.match(env.TWILIO_AUTH_TOKEN, /^[0-9a-f]{32}$/);
  const client = twilioClient(env);

  const account = await client.api.v2010.accounts(env.TWILIO_ACCOUNT_SID!).fetch();
  t.equal(account.sid, env.TWILIO_ACCOUNT_SID);
  const numbers = await client.incomingPhoneNumbers.list();
  t.ok(
    numbers.some((n) => n.phoneNumber === '+15005550006'),
    'the seeded number is listed',
  );

  const message = await client.messages.create({
    from: env.TWILIO_PHONE_NUMBER!,
    to: '+15550001111',
    body: 'Your sandbox is ready',
  });
  t.match(message.sid, /^SM[0-9a-f]{32}$/);
  t.equal(message.body, 'Your sandbox is ready');
  const fetched = await client.messages(message.sid).fetch();
  t.equal(fetched.to, '+15550001111');
  const sent = await client.messages.list({ to: '+15550001111' });
  t.same(
    sent.map((m) => m.sid),
    [message.sid],
  );

  // The SMS one-time-code loop, with the Verify service of TWILIO_VERIFY_SERVICE_SID.
  const verify = client.verify.v2.services(env.TWILIO_VERIFY_SERVICE_SID!);
  const verification = await verify.verifications.create({ to: '+15550002222', channel: 'sms' });
  t.equal(verification.status, 'pending');
  const wrong = await verify.verificationChecks.create({ to: '+15550002222', code: '000000' });
  t.equal(wrong.status, 'pending', 'a wrong code does not approve');
  const right = await verify.verificationChecks.create({ to: '+15550002222', code: '123456' });
  t.equal(right.status, 'approved');

  // An API key pair works as Twilio documents: twilio(apiKey, apiSecret, { accountSid }).
  const byKey = twilioClient(env, env.TWILIO_API_KEY, env.TWILIO_API_SECRET);
  t.equal((await byKey.messages.list()).length, 1);

  const missing = await restError(client.messages('SM' + '1'.repeat(32)).fetch());
  t.equal(missing.status, 404);

  const admin = new TwinAdminClient(entry.admin_url, 'admin');
  const log = JSON.stringify(await admin.requests());
  t.match(log, /Your sandbox is ready/);
  t.notOk(log.includes(env.TWILIO_AUTH_TOKEN!), 'the auth token is not logged');
  t.notOk(log.includes(env.TWILIO_API_SECRET!), 'nor the API secret');

  await admin.addFault({ rate_limit: true, count: 1 });
  t.match(await restError(client.messages.list()), { status: 429, code: 20429 });
});

t.test('twilio twin: wrong, unknown and public example credentials are 401 code 20003', async (t) => {
  const { host } = await tempHost(t);
  const env = (await host.start('sb', ['twilio'], { adminToken: 'admin' })).twilio!.env_vars;
  t.match(await restError(twilioClient(env, env.TWILIO_ACCOUNT_SID, 'f'.repeat(32)).messages.list()), {
    status: 401,
    code: 20003,
  });
  t.match(await restError(twilioClient(env, `AC${'1'.repeat(32)}`, env.TWILIO_AUTH_TOKEN).messages.list()), {
    status: 401,
    code: 20003,
  });
  // The engine's published defaults (its README) are not credentials of a twin.
  t.match(
    await restError(twilioClient(env, env.TWILIO_ACCOUNT_SID, 'twilio_test_auth_token').messages.list()),
    {
      status: 401,
    },
  );
  t.match(
    await restError(twilioClient(env, `SK${'0'.repeat(32)}`, 'twilio_test_api_secret').messages.list()),
    { status: 401 },
  );
  const anonymous = await fetch(
    `${env.TWILIO_BASE_URL}/2010-04-01/Accounts/${env.TWILIO_ACCOUNT_SID}/Messages.json`,
  );
  t.equal(anonymous.status, 401);
  t.match(await anonymous.json(), { code: 20003, message: 'Authenticate' });
});

t.test(
  'twilio twin: state survives a restart; reset returns to the seed; bad seeds are refused',
  async (t) => {
    const dataDir = await tempDir(t);
    const first = new TwinHost({ factories: twinFactories, dataDir, publicHost: '127.0.0.1' });
    const before = (await first.start('sb', ['twilio'], { adminToken: 'admin' })).twilio!;
    const message = await twilioClient(before.env_vars).messages.create({
      from: before.env_vars.TWILIO_PHONE_NUMBER!,
      to: '+15550003333',
      body: 'kept',
    });
    await first.close();

    const second = new TwinHost({ factories: twinFactories, dataDir, publicHost: '127.0.0.1' });
    t.teardown(() => second.close());
    await second.restore(['sb']);
    const after = second.get('sb')!.twilio!;
    t.equal(after.env_vars.TWILIO_AUTH_TOKEN, before.env_vars.TWILIO_AUTH_TOKEN, 'credentials survive');
    const client = twilioClient(after.env_vars);
    t.equal((await client.messages(message.sid).fetch()).body, 'kept');
    t.equal(
      (
        await restError(
          twilioClient(after.env_vars, `SK${'0'.repeat(32)}`, 'twilio_test_api_secret').messages.list(),
        )
      ).status,
      401,
      'the engine key stays gone after a restart',
    );

    const admin = new TwinAdminClient(after.admin_url, 'admin');
    await admin.seed({ phone_numbers: [{ phone_number: '+15005550009' }] });
    t.ok((await client.incomingPhoneNumbers.list()).some((n) => n.phoneNumber === '+15005550009'));
    await admin.reset();
    t.same(await client.messages.list(), [], 'reset drops sent messages');
    t.notOk((await client.incomingPhoneNumbers.list()).some((n) => n.phoneNumber === '+15005550009'));
    t.equal(
      (
        await restError(
          twilioClient(after.env_vars, `SK${'0'.repeat(32)}`, 'twilio_test_api_secret').messages.list(),
        )
      ).status,
      401,
      'nor after a reset',
    );
    t.ok(
      await twilioClient(
        after.env_vars,
        after.env_vars.TWILIO_API_KEY,
        after.env_vars.TWILIO_API_SECRET,
      ).messages.list(),
    );
    await t.rejects(
      admin.seed({ phone_numbers: [{ phone_number: '555-1234' }] }),
      /twilio seed: "phone_numbers\[0\]\.phone_number"/,
    );
  },
);

/**
 * An app's SMS and Verify flow, whichever twilio-node major builds `client`: the account, its numbers, a
 * message sent, fetched and listed by `to`, the one-time-code loop, an API key pair, and a 404's RestException.
 */
async function smsFlow(
  t: Test,
  env: Record<string, string>,
  sdk: TwilioModule,
  label: string,
): Promise<void> {
  const client = twilioClient(env, undefined, undefined, sdk);
  t.equal((await client.api.v2010.accounts(env.TWILIO_ACCOUNT_SID!).fetch()).sid, env.TWILIO_ACCOUNT_SID);
  t.ok((await client.incomingPhoneNumbers.list()).some((n) => n.phoneNumber === env.TWILIO_PHONE_NUMBER));
  const to = label === 'v5' ? '+15550005555' : '+15550006666';
  const message = await client.messages.create({
    from: env.TWILIO_PHONE_NUMBER!,
    to,
    body: `sent by ${label}`,
  });
  t.match(message.sid, /^SM[0-9a-f]{32}$/);
  t.equal((await client.messages(message.sid).fetch()).body, `sent by ${label}`);
  t.same(
    (await client.messages.list({ to })).map((m) => m.sid),
    [message.sid],
    `${label}: listed by its recipient`,
  );
  const verify = client.verify.v2.services(env.TWILIO_VERIFY_SERVICE_SID!);
  t.equal((await verify.verifications.create({ to, channel: 'sms' })).status, 'pending');
  t.equal((await verify.verificationChecks.create({ to, code: '000000' })).status, 'pending');
  t.equal((await verify.verificationChecks.create({ to, code: '123456' })).status, 'approved');
  const byKey = twilioClient(env, env.TWILIO_API_KEY, env.TWILIO_API_SECRET, sdk);
  t.ok(
    (await byKey.messages.list()).some((m) => m.sid === message.sid),
    `${label}: an API key pair reads it`,
  );
  const missing = await restError(client.messages('SM' + '1'.repeat(32)).fetch());
  t.match(missing, { status: 404, code: 20404 });
  t.equal(missing.constructor.name, 'RestException', `${label}: a 404 is twilio-node's RestException`);
}

t.test('twilio twin: one SMS and Verify flow with twilio-node 6 and with twilio-node 5', async (t) => {
  const { host } = await tempHost(t);
  const env = (await host.start('sb', ['twilio'], { adminToken: 'admin' })).twilio!.env_vars;
  await smsFlow(t, env, twilio, 'v6');
  const { default: twilioV5 } = await import('twilio-v5');
  // twilio-node 5 has the same calls; its type declarations are a copy of their own, so TypeScript keeps them apart.
  const before = checked.length;
  await smsFlow(t, env, twilioV5 as unknown as TwilioModule, 'v5');
  const results = checked.slice(before).filter((r) => r.twin === 'twilio');
  t.ok(
    results.length >= 10,
    `${results.length} answers to twilio-node 5 checked against Twilio's description`,
  );
});

// The twin keeps a GET's finished answer while the engine's store is unchanged (engine/kept-answers.ts):
// each kind of write in turn must be seen by the very next read of the same request.
t.test('twilio twin: a read after any write sees the write', async (t) => {
  const { host } = await tempHost(t);
  const entry = (await host.start('sb', ['twilio'], { adminToken: 'admin' })).twilio!;
  const env = entry.env_vars;
  const client = twilioClient(env);
  const account = () => client.api.v2010.accounts(env.TWILIO_ACCOUNT_SID!).fetch();
  const first = (await account()).friendlyName;
  t.equal((await account()).friendlyName, first, 'the same read again');

  const sent = async () => (await client.messages.list()).map((m) => m.body);
  t.same(await sent(), []);
  t.same(await sent(), [], 'the same list again');
  const message = await client.messages.create({
    from: env.TWILIO_PHONE_NUMBER!,
    to: '+15550001111',
    body: 'one',
  });
  t.same(await sent(), ['one'], 'a new message is listed at once');
  const second = await client.messages.create({
    from: env.TWILIO_PHONE_NUMBER!,
    to: '+15550001111',
    body: 'two',
  });
  t.same((await sent()).sort(), ['one', 'two'], 'and the next one');
  t.equal((await client.messages(message.sid).fetch()).body, 'one');
  t.equal((await client.messages(second.sid).fetch()).body, 'two');

  // Another caller's credentials make another request: an API key reads the same account.
  const byKey = twilioClient(env, env.TWILIO_API_KEY, env.TWILIO_API_SECRET);
  t.equal((await byKey.api.v2010.accounts(env.TWILIO_ACCOUNT_SID!).fetch()).friendlyName, first);
  t.same((await byKey.messages.list()).length, 2);

  const admin = new TwinAdminClient(entry.admin_url, 'admin');
  const numbers = async () => (await client.incomingPhoneNumbers.list()).map((n) => n.phoneNumber);
  t.notOk((await numbers()).includes('+15005550006'), 'not seeded yet');
  await admin.seed({ phone_numbers: [{ phone_number: '+15005550006', friendly_name: 'Alerts' }] });
  t.ok((await numbers()).includes('+15005550006'), 'a seed through the admin API is seen');
  await admin.reset();
  t.notOk((await numbers()).includes('+15005550006'), 'a reset is seen: the seeded number is gone');
  t.same(await sent(), [], 'and the messages');
  t.equal((await account()).friendlyName, first, 'the account is read as before');
});

t.test(
  "twilio twin: no GitHub rate limit (the engine's): the 5,001st call of an hour is answered",
  async (t) => {
    const { host } = await tempHost(t);
    const entries = await host.start('sb', ['twilio', 'github'], { adminToken: 'admin' });
    const env = entries.twilio!.env_vars;
    const auth = `Basic ${Buffer.from(`${env.TWILIO_ACCOUNT_SID}:${env.TWILIO_AUTH_TOKEN}`).toString('base64')}`;
    const account = `${env.TWILIO_BASE_URL}/2010-04-01/Accounts/${env.TWILIO_ACCOUNT_SID}.json`;
    // Each URL its own, so that every call reaches the engine (a repeated GET may be a kept answer).
    let answered = 0;
    for (let i = 0; i < 5000; i++) {
      const response = await fetch(`${account}?n=${i}`, { headers: { authorization: auth } });
      await response.arrayBuffer();
      if (response.status === 200) answered++;
    }
    t.equal(answered, 5000, '5,000 calls of one account within the hour, all answered');
    const response = await fetch(`${account}?n=last`, { headers: { authorization: auth } });
    t.equal(response.status, 200, 'the 5,001st too');
    t.equal(
      response.headers.get('x-ratelimit-limit'),
      null,
      "no GitHub's X-RateLimit-* headers (Twilio sends none)",
    );
    const client = twilioClient(env);
    t.equal((await client.api.v2010.accounts(env.TWILIO_ACCOUNT_SID!).fetch()).sid, env.TWILIO_ACCOUNT_SID);
    // GitHub's twin keeps them: GitHub does send them, on every answer.
    const github = entries.github!.env_vars;
    const user = await fetch(`${github.GITHUB_API_URL}/user`, {
      headers: { authorization: `Bearer ${github.GITHUB_TOKEN}` },
    });
    t.equal(user.status, 200);
    t.equal(user.headers.get('x-ratelimit-limit'), '5000', 'the GitHub twin still counts as GitHub does');
  },
);
