import t from 'tap';
import { createHmac } from 'node:crypto';
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import Stripe from 'stripe';
import { TwinAdminClient } from '../../server/twins/kit/admin-client.ts';
import { WebhookOutbox, type WebhookSigner } from '../../server/twins/runtime/webhooks.ts';
import { tempHost, type Teardown } from './helpers.ts';
import { githubClient, slackClient } from './vendor-schema.ts';

interface Hit {
  headers: IncomingHttpHeaders;
  body: string;
}

/**
 * A receiver that answers each request with the next of `answers` (a status, or 'hang' for no answer
 * at all), then 200. `hit(n)` resolves once n requests have arrived.
 */
async function scriptedReceiver(t: Teardown, answers: Array<number | 'hang'> = []) {
  const hits: Hit[] = [];
  const waiters: Array<() => void> = [];
  const hanging: ServerResponse[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      hits.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      const answer = answers.shift() ?? 200;
      if (answer === 'hang') hanging.push(res);
      else res.writeHead(answer, { 'content-type': 'text/plain' }).end(`answer ${answer}`);
      for (const wake of waiters.splice(0)) wake();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        for (const res of hanging) res.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    hits,
    async hit(count: number, timeoutMs = 60_000): Promise<Hit> {
      const deadline = Date.now() + timeoutMs;
      while (hits.length < count) {
        if (Date.now() > deadline) throw new Error(`only ${hits.length} of ${count} requests arrived`);
        await new Promise<void>((resolve) => {
          waiters.push(resolve);
          setTimeout(resolve, 200);
        });
      }
      return hits[count - 1]!;
    },
  };
}

/** A port nothing listens on: bound, noted, closed. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return typeof address === 'object' && address ? address.port : 0;
}

const calls: Array<{ attempt: number; retryReason?: string }> = [];
const signer: WebhookSigner = ({ body, secret, guid, attempt, retryReason }) => {
  calls.push({ attempt, retryReason });
  return {
    'x-test-guid': guid,
    'x-test-attempt': String(attempt),
    'x-test-signature': createHmac('sha256', secret).update(body).digest('hex'),
  };
};

function outbox(t: Teardown, url: string, options = {}) {
  const box = new WebhookOutbox(signer, { retryDelaysMs: [50, 100, 150], ...options });
  box.target = { url, secret: 's3cret', events: ['*'] };
  t.teardown(() => box.close());
  return box;
}

t.test('outbox: a 5xx, a 429 and no answer are retried with backoff until one succeeds', async (t) => {
  const receiver = await scriptedReceiver(t, [503, 429, 'hang']);
  calls.length = 0;
  // Long enough that the quick answers (503, 429, 200) never count as "no answer" on a loaded CI machine
  // (500 ms did, at a load average of 16): only the receiver that hangs runs into it.
  const box = outbox(t, receiver.url, { timeoutMs: 3000 });
  const first = await box.deliver('order.paid', { action: 'paid', id: 7 });
  t.match(first, { state: 'pending', status_code: 503, success: false, action: 'paid' });
  t.ok(first!.next_attempt_at, 'the next retry is scheduled');
  await box.idle();
  const [delivery] = box.list();
  t.equal(delivery!.state, 'delivered');
  t.equal(delivery!.success, true);
  t.equal(delivery!.status_code, 200);
  t.same(
    delivery!.attempts.map((a) => a.status_code),
    [503, 429, null, 200],
  );
  t.match(delivery!.attempts[2]!.error, /no answer within 3000 ms/);
  t.equal(delivery!.attempts[3]!.response, 'answer 200', 'what the receiver answered is kept');
  t.notOk(delivery!.next_attempt_at);
  t.equal(receiver.hits.length, 4);
  t.same(
    receiver.hits.map((h) => h.headers['x-test-attempt']),
    ['1', '2', '3', '4'],
    'each attempt is signed anew',
  );
  t.same(new Set(receiver.hits.map((h) => h.headers['x-test-guid'])).size, 1, 'one delivery, one GUID');
  t.same(
    calls.map((c) => c.retryReason),
    [undefined, 'http_error', 'http_error', 'http_timeout'],
  );
  const body = JSON.stringify({ action: 'paid', id: 7 });
  t.equal(receiver.hits[0]!.body, body);
  t.equal(
    receiver.hits[0]!.headers['x-test-signature'],
    createHmac('sha256', 's3cret').update(body).digest('hex'),
  );
  const timestamps = delivery!.attempts.map((a) => Date.parse(a.at));
  t.ok(
    timestamps.every((at, i) => i === 0 || at >= timestamps[i - 1]! + [50, 100, 150][i - 1]!),
    'each retry waits at least its delay',
  );
});

t.test('outbox: a receiver that is down gets every attempt, then the delivery fails', async (t) => {
  const port = await closedPort();
  calls.length = 0;
  const box = outbox(t, `http://127.0.0.1:${port}/hooks`);
  await box.deliver('ping', {});
  await box.idle();
  const [delivery] = box.list();
  t.equal(delivery!.state, 'failed');
  t.equal(delivery!.attempts.length, 4, 'the first attempt and three retries');
  t.ok(delivery!.attempts.every((a) => a.status_code === null && /ECONNREFUSED/.test(a.error ?? '')));
  t.match(delivery!.error, /ECONNREFUSED/);
  t.equal(calls.at(-1)!.retryReason, 'connection_failed');
});

t.test('outbox: a 4xx or a redirect is final, not retried', async (t) => {
  const receiver = await scriptedReceiver(t, [400, 302]);
  const box = outbox(t, receiver.url);
  const refused = await box.deliver('a', {});
  const redirected = await box.deliver('b', {});
  await box.idle();
  t.match(box.get(refused!.id), { state: 'failed', status_code: 400, attempts: [{ status_code: 400 }] });
  t.match(box.get(redirected!.id), { state: 'failed', status_code: 302 });
  t.equal(box.get(redirected!.id)!.attempts.length, 1);
  t.equal(receiver.hits.length, 2);
});

t.test('outbox: closing, resetting or changing the target cancels retries not yet made', async (t) => {
  const receiver = await scriptedReceiver(t, [500, 500, 500, 500, 500, 500]);
  const slow = { retryDelaysMs: [60_000] };

  const closing = outbox(t, receiver.url, slow);
  await closing.deliver('a', {});
  t.equal(closing.list()[0]!.state, 'pending');
  await closing.close();
  t.match(closing.list()[0], { state: 'failed', error: 'the twin stopped before the retry was due' });
  t.equal(await closing.deliver('b', {}), undefined, 'a closed outbox sends nothing');

  const reset = outbox(t, receiver.url, slow);
  await reset.deliver('a', {});
  reset.clear();
  t.same(reset.list(), []);
  await reset.idle();

  const moved = outbox(t, receiver.url, { retryDelaysMs: [50] });
  await moved.deliver('a', {});
  moved.target = { url: `${receiver.url}/elsewhere`, secret: 'x', events: ['*'] };
  await moved.idle();
  t.match(moved.list()[0], {
    state: 'failed',
    error: 'the webhook target changed before the retry was due',
  });
  t.equal(receiver.hits.length, 3, 'no retry was sent anywhere');
});

t.test('twins: each delivers signed the vendor way, with retries, listed in the admin API', async (t) => {
  const { host } = await tempHost(t);
  const entries = await host.start('sb-hooks', ['github', 'stripe', 'slack'], { adminToken: 'admin' });
  const admin = (name: string) => new TwinAdminClient(entries[name]!.admin_url, 'admin');

  t.test(
    'slack: an Events API envelope, v0 signature with SLACK_SIGNING_SECRET, Slack retry headers',
    async (t) => {
      const receiver = await scriptedReceiver(t, [500]);
      const env = entries.slack!.env_vars;
      // No secret given: the twin signs with the one the app has, SLACK_SIGNING_SECRET.
      await admin('slack').setWebhookTarget({ url: receiver.url });
      const slack = slackClient(env.SLACK_BOT_TOKEN, { slackApiUrl: env.SLACK_API_URL });
      const posted = await slack.chat.postMessage({ channel: 'general', text: 'Deploy finished' });
      const first = await receiver.hit(1);
      const retry = await receiver.hit(2);
      for (const hit of [first, retry]) {
        const ts = hit.headers['x-slack-request-timestamp'] as string;
        const expected = `v0=${createHmac('sha256', env.SLACK_SIGNING_SECRET!).update(`v0:${ts}:${hit.body}`).digest('hex')}`;
        t.equal(hit.headers['x-slack-signature'], expected, 'verifies with SLACK_SIGNING_SECRET');
        t.ok(Math.abs(Date.now() / 1000 - Number(ts)) < 300, 'a timestamp Bolt accepts');
      }
      const envelope = JSON.parse(first.body);
      t.match(envelope, {
        type: 'event_callback',
        team_id: /^T/,
        event_id: /^Ev/,
        event: { type: 'message', text: 'Deploy finished', channel: posted.channel, ts: posted.ts },
      });
      t.notOk(first.headers['x-slack-retry-num'], 'the first attempt is no retry');
      t.equal(retry.headers['x-slack-retry-num'], '1');
      t.equal(retry.headers['x-slack-retry-reason'], 'http_error');
      t.equal(retry.body, first.body);
      const listing = await admin('slack').webhooks();
      t.same(listing.target, { url: receiver.url, events: ['*'] }, 'the secret is never shown');
      t.match(listing.deliveries, [
        { event: 'message', state: 'delivered', attempts: [{ status_code: 500 }, { status_code: 200 }] },
      ]);
    },
  );

  t.test('github: issues.opened with X-Hub-Signature-256 over GITHUB_WEBHOOK_SECRET', async (t) => {
    const receiver = await scriptedReceiver(t);
    const env = entries.github!.env_vars;
    await admin('github').setWebhookTarget({ url: receiver.url });
    const octokit = githubClient({ baseUrl: env.GITHUB_API_URL, auth: env.GITHUB_TOKEN });
    const me = await octokit.rest.users.getAuthenticated();
    await octokit.rest.repos.createForAuthenticatedUser({ name: 'hooks' });
    const issue = await octokit.rest.issues.create({ owner: me.data.login, repo: 'hooks', title: 'Broken' });
    let hit = await receiver.hit(1);
    for (let n = 2; hit.headers['x-github-event'] !== 'issues'; n++) hit = await receiver.hit(n);
    t.equal(
      hit.headers['x-hub-signature-256'],
      `sha256=${createHmac('sha256', env.GITHUB_WEBHOOK_SECRET!).update(hit.body).digest('hex')}`,
    );
    t.match(hit.headers['x-github-delivery'], /^[0-9a-f-]{36}$/);
    t.match(JSON.parse(hit.body), {
      action: 'opened',
      issue: { number: issue.data.number, title: 'Broken' },
    });
  });

  t.test('stripe: every attempt carries a fresh Stripe-Signature that constructEvent accepts', async (t) => {
    const receiver = await scriptedReceiver(t, [502]);
    const env = entries.stripe!.env_vars;
    await admin('stripe').setWebhookTarget({ url: receiver.url });
    const stripe = new Stripe(env.STRIPE_SECRET_KEY!, {
      host: env.STRIPE_API_HOST,
      port: Number(env.STRIPE_API_PORT),
      protocol: 'http',
      maxNetworkRetries: 0,
    });
    const customer = await stripe.customers.create({ email: 'ada@example.com' });
    await receiver.hit(2);
    for (const hit of receiver.hits) {
      const event = stripe.webhooks.constructEvent(
        hit.body,
        hit.headers['stripe-signature'] as string,
        env.STRIPE_WEBHOOK_SECRET!,
      );
      t.equal(event.type, 'customer.created');
      t.equal((event.data.object as Stripe.Customer).id, customer.id);
    }
    const [delivery] = (await admin('stripe').deliveries()).filter((d) => d.event === 'customer.created');
    t.match(delivery, { state: 'delivered', attempts: [{ status_code: 502 }, { status_code: 200 }] });
  });
});
