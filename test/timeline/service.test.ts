import t from 'tap';
import { join } from 'node:path';
import type { IncomingMessage } from 'node:http';
import { attachRouter, sandboxHosts } from '../../server/router/index.ts';
import { SandboxService } from '../../server/sandboxes/service.ts';
import { ScenarioDirectory } from '../../server/scenarios/directory.ts';
import { AppRequestRecorder } from '../../server/timeline/app-requests.ts';
import { TimelineService } from '../../server/timeline/service.ts';
import { TwinLogs } from '../../server/timeline/twin-logs.ts';
import { localTwinReach } from '../../server/runners/twins.ts';
import { TwinAdminClient } from '../../server/twins/kit/admin-client.ts';
import { builtInCatalog } from '../../server/twins/catalog.ts';
import { TwinHost } from '../../server/twins/runtime/host.ts';
import { twinFactories } from '../../server/twins/registry.ts';
import { twinDescriptors } from '../../server/twins/descriptors.ts';
import { until } from '../helpers/deploy.ts';
import { createSandbox, createUser, startTestTwinbox, tempDir } from '../helpers/twinbox.ts';
import { EndpointTable, fetchVia, startBackend } from '../router/helpers.ts';

const REQUEST_ID = 'x-twinbox-request-id';

function drain(req: IncomingMessage): Promise<void> {
  return new Promise((resolve) => {
    req.resume();
    req.on('end', resolve);
  });
}

/**
 * A whole timeline without a deploy engine: a real router on a real Twinbox, a real app on a Unix socket
 * calling a real Stripe twin (which also listens on a socket, as in a pod), the real recorder, events
 * and twin log reader. Only the pod is missing, so this runs anywhere.
 */
t.test('app requests, the twin calls they made, the changes, webhooks, linked; pages add up', async (t) => {
  const tb = await startTestTwinbox(t);
  const dir = await tempDir(t, 'twinbox-timeline-service-');
  const table = new EndpointTable();
  const requests = new AppRequestRecorder();
  const router = attachRouter(tb.server, {
    domain: 'localhost',
    endpoints: table,
    logger: tb.logger,
    observe: requests.observe,
  });
  t.teardown(() => router.close());
  await tb.server.start();
  const hosts = sandboxHosts('localhost', new URL(`http://localhost:${tb.server.info.port}`));

  const user = await createUser(tb);
  const { body: created } = await createSandbox(tb, user.key, {
    repo: 'octo/shop',
    branch: 'main',
    twins: ['stripe'],
  });
  const id: string = created.sandbox_id;
  const token: string = created.twin_admin_token;
  const twinHost = new TwinHost({
    factories: twinFactories,
    dataDir: join(dir, 'twins'),
    publicHost: '127.0.0.1',
    socketDir: dir,
  });
  t.teardown(() => twinHost.close());
  const stripe = (await twinHost.start(id, ['stripe'], { adminToken: token })).stripe!;
  const key = stripe.env_vars.STRIPE_SECRET_KEY!;

  // Two requests that wait for each other, so both are in flight when each calls Stripe.
  let waiting: Array<() => void> = [];
  const app = await startBackend(t, dir, 'app', async (req, res) => {
    const url = new URL(req.url!, 'http://app');
    await drain(req);
    if (url.pathname === '/hooks') return void res.end('thanks');
    if (url.searchParams.has('together')) {
      await new Promise<void>((resolve) => {
        waiting.push(resolve);
        if (waiting.length === 2) for (const go of waiting.splice(0)) go();
      });
    }
    const headers: Record<string, string> = {
      authorization: `Bearer ${key}`,
      'content-type': 'application/x-www-form-urlencoded',
    };
    // An app that passes the router's request id on to the twins it calls.
    if (url.searchParams.has('forward')) headers[REQUEST_ID] = String(req.headers[REQUEST_ID]);
    const made = await fetch(`${stripe.base_url}/v1/customers`, {
      method: 'POST',
      headers,
      body: `email=${encodeURIComponent(url.searchParams.get('email') ?? 'x@example.com')}`,
    });
    res.statusCode = made.status;
    res.end(await made.text());
  });
  const twinSocket = join(dir, 'twin-stripe.sock');
  table.live(id, { app: app.socketPath, twins: { stripe: twinSocket } });

  const twinLogs = new TwinLogs({
    reach: localTwinReach((sandboxId, twin) => table.socketFor(sandboxId, { kind: 'twin', name: twin })),
    twinNames: [...twinFactories.keys()],
    logger: tb.logger,
  });
  const sandboxes = new SandboxService(
    tb.store,
    tb.accounts,
    builtInCatalog,
    new ScenarioDirectory(tb.store),
    tb.lifecycle,
    {
      production: false,
      freeTtlCapMinutes: 60,
      githubWebHosts: ['github.com'],
      sandboxQuota: { free: 10, pro: 10 },
    },
  );
  const timeline = new TimelineService({
    sandboxes,
    events: tb.timeline.events,
    requests,
    twinLogs,
    descriptors: twinDescriptors,
  });
  const account = (await tb.store.accounts.get(user.id))!;

  const post = (path: string) => fetchVia(`${hosts.appUrl(id)}${path}`, { method: 'POST' });
  t.equal((await post('/signup?forward=1&email=ada%40example.com')).status, 200);
  t.equal((await post('/signup?email=grace%40example.com')).status, 200);
  const together = await Promise.all([post('/signup?together=1'), post('/signup?together=1')]);
  t.same(
    together.map((r) => r.status),
    [200, 200],
  );
  // Someone outside the sandbox calls the twin through the router.
  const outside = await fetchVia(`${hosts.twinUrl(id, 'stripe')}/v1/customers`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/x-www-form-urlencoded' },
    body: 'email=outside%40example.com',
  });
  t.equal(outside.status, 200);
  // Stripe's webhooks reach the app through the router; a customer made straight on the twin sends one.
  const admin = new TwinAdminClient(stripe.admin_url, token);
  await admin.setWebhookTarget({ url: `${hosts.appUrl(id)}/hooks`, events: ['customer.created'] });
  await fetch(`${stripe.base_url}/v1/customers`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/x-www-form-urlencoded' },
    body: 'email=hooked%40example.com',
  });
  await until(
    async () => (await admin.deliveries()).some((d) => d.state === 'delivered'),
    'the webhook delivery',
    30_000,
  );
  await until(
    async () => (await requests.ended(id)).some((r) => r.path === '/hooks' && r.ended_at),
    'the /hooks request',
  );

  const full = await timeline.page(account, id, { limit: 500 });
  t.same(full.notes, []);
  const byId = new Map(full.entries.map((e) => [e.id, e]));
  t.equal(byId.size, full.entries.length, 'ids are unique');
  for (const entry of full.entries)
    if (entry.caused_by) t.ok(byId.has(entry.caused_by), `${entry.id} names an entry that is there`);
  const kinds = full.entries.map((e) => e.kind);
  t.equal(kinds.filter((k) => k === 'app_request').length, 5, 'four signups and one webhook');
  t.equal(kinds.filter((k) => k === 'twin_call').length, 6);
  t.equal(kinds.filter((k) => k === 'state_change').length, 6);
  t.equal(kinds.filter((k) => k === 'webhook').length, 1);
  t.same(full.entries[0]!.summary, 'Created for octo/shop branch main');

  const calls = full.entries.filter((e) => e.kind === 'twin_call');
  const appRequests = full.entries.filter((e) => e.kind === 'app_request');
  const signups = appRequests.filter((e) => e.path === '/signup');

  // 1. Forwarded id: exact.
  const forwarded = calls[0]!;
  t.match(forwarded, {
    source: 'twin:stripe',
    summary: 'POST /v1/customers → 200',
    method: 'POST',
    status: 200,
    request_id: signups[0]!.request_id,
    caused_by: signups[0]!.id,
    link: 'header',
  });
  const change = full.entries.find((e) => e.caused_by === forwarded.id)!;
  t.match(change, {
    kind: 'state_change',
    source: 'twin:stripe',
    summary: /^customer cus_\w+ created \(ada@example\.com\)$/,
    link: 'direct',
    request_id: signups[0]!.request_id,
  });
  // 2. Not forwarded, the only request in flight: inferred.
  t.match(calls[1], { caused_by: signups[1]!.id, link: 'inferred', request_id: signups[1]!.request_id });
  // 3. Two in flight: no guess.
  for (const call of calls.slice(2, 4)) {
    t.notOk(call.caused_by, 'two requests in flight: not linked');
    t.notOk(call.link);
  }
  // 4. From outside, through the router: marked, never tied to the app.
  t.match(calls[4], {
    summary: 'POST /v1/customers → 200, sent from outside the sandbox',
    detail: { from: 'outside' },
  });
  t.notOk(calls[4]!.caused_by);
  // 5. The webhook and the app request it became.
  const webhook = full.entries.find((e) => e.kind === 'webhook')!;
  t.match(webhook, { summary: 'customer.created webhook → app: 200', path: '/hooks', status: 200 });
  const hookRequest = appRequests.find((e) => e.path === '/hooks')!;
  t.match(hookRequest, { caused_by: webhook.id, link: 'inferred', status: 200 });
  t.notOk(calls[5]!.caused_by, 'the call made straight on the twin had no app request in flight');

  // Paging three at a time gives the same entries, each once.
  const paged: string[] = [];
  let cursor: string | undefined;
  for (let i = 0; i < 100; i++) {
    const page = await timeline.page(account, id, { limit: 3, cursor });
    paged.push(...page.entries.map((e) => e.id));
    cursor = page.next_cursor;
    if (page.entries.length === 0) break;
  }
  t.same([...paged].sort(), [...byId.keys()].sort(), 'pages add up to the whole');

  // A new call shows on the next poll with the last cursor (no webhook this time).
  await admin.clearWebhookTarget();
  t.equal((await post('/signup?forward=1&email=late%40example.com')).status, 200);
  const polled: string[] = [];
  await until(async () => {
    const page = await timeline.page(account, id, { cursor });
    cursor = page.next_cursor;
    polled.push(...page.entries.map((e) => e.kind));
    return polled.includes('state_change');
  }, 'the late signup in the timeline');
  t.same(polled.sort(), ['app_request', 'state_change', 'twin_call']);

  // When the sandbox ends its twins stop: the copy taken then is what is read afterwards.
  twinLogs.archive({ id, twin_admin_token: token });
  await until(async () => (await twinLogs.archivedNames(id)).includes('stripe'), 'the archive');
  await twinHost.stop(id);
  const after = await timeline.page(account, id, { limit: 500 });
  t.same(
    after.entries.map((e) => e.id),
    (await timeline.page(account, id, { limit: 500 })).entries.map((e) => e.id),
  );
  t.equal(after.entries.filter((e) => e.kind === 'state_change').length, 7, 'the twin log is still there');
  t.match(after.notes, [/the stripe twin has stopped; its log is the copy kept when it did/i]);

  // Without a copy, a stopped twin is a note, not an error.
  const fresh = new TimelineService({
    sandboxes,
    events: tb.timeline.events,
    requests,
    twinLogs: new TwinLogs({ reach: async () => undefined, twinNames: ['stripe'], logger: tb.logger }),
    descriptors: twinDescriptors,
  });
  const noTwin = await fresh.page(account, id, {});
  t.match(noTwin.notes, [/The stripe twin is not running yet/]);
  t.ok(
    noTwin.entries.some((e) => e.kind === 'app_request'),
    'the rest is there',
  );
  waiting = [];
});
