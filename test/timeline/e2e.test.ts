import t from 'tap';
import { call, createUser, type TestTwinbox, type TestUser } from '../helpers/twinbox.ts';
import { deployingTwinbox, deploySandbox, githubToDeployFrom, until } from '../helpers/deploy.ts';
import { requireHost } from '../security/isolation-fixtures.ts';

/**
 * An app that signs people up as Stripe customers through its twin (STRIPE_API_BASE, STRIPE_SECRET_KEY).
 * With `?forward=1` it passes the router's request id on to Stripe, as an app that wants exact links
 * does; without, the timeline has to infer. `/die` crashes it.
 */
const SHOP = {
  'package.json': JSON.stringify({ name: 'shop', private: true, scripts: { start: 'node server.js' } }),
  'server.js': `
const http = require('node:http');
http.createServer(async (req, res) => {
  const url = new URL(req.url, 'http://app');
  if (url.pathname === '/die') process.exit(7);
  if (url.pathname !== '/signup') return res.end('shop');
  const headers = {
    authorization: 'Bearer ' + process.env.STRIPE_SECRET_KEY,
    'content-type': 'application/x-www-form-urlencoded',
  };
  if (url.searchParams.has('forward')) headers['x-twinbox-request-id'] = req.headers['x-twinbox-request-id'];
  const made = await fetch(process.env.STRIPE_API_BASE + '/v1/customers', {
    method: 'POST',
    headers,
    body: 'email=' + encodeURIComponent(url.searchParams.get('email')),
  });
  res.writeHead(made.status, { 'content-type': 'application/json' });
  res.end(await made.text());
}).listen(Number(process.env.PORT), '127.0.0.1');
`,
};

async function readAll(tb: TestTwinbox, user: TestUser, id: string): Promise<any[]> {
  const entries: any[] = [];
  let cursor = '';
  for (let i = 0; i < 50; i++) {
    const res = await call(tb, {
      url: `/sandboxes/${id}/timeline?limit=7${cursor ? `&cursor=${cursor}` : ''}`,
      token: user.key,
    });
    if (res.status !== 200) throw new Error(`timeline: ${res.status} ${JSON.stringify(res.body)}`);
    entries.push(...res.body.entries);
    cursor = res.body.next_cursor;
    if (res.body.entries.length === 0) break;
  }
  return entries;
}

t.test('a deployed app signs up a customer: request, twin call, state change and deploy steps', async (t) => {
  if (!requireHost(t, { bwrap: true })) return;
  const gh = await githubToDeployFrom(t);
  await gh.createRepo({ owner: 'octocat', name: 'shop', files: SHOP });
  const tb = await deployingTwinbox(t, gh);
  const user = await createUser(tb);
  const sandbox = await deploySandbox(tb, user, { repo: 'octocat/shop', branch: 'main', twins: ['stripe'] });
  if (sandbox.status !== 'ready')
    t.comment((await call(tb, { url: `/sandboxes/${sandbox.sandbox_id}/logs`, token: user.key })).body);
  t.equal(sandbox.status, 'ready', sandbox.error ?? '');
  const id: string = sandbox.sandbox_id;

  const exact = await fetch(`${sandbox.app_url}/signup?forward=1&email=ada%40example.com`, {
    method: 'POST',
  });
  t.equal(exact.status, 200);
  const requestId = exact.headers.get('x-twinbox-request-id');
  const customer = (await exact.json()) as { id: string };
  t.match(customer.id, /^cus_/);
  const guessed = await fetch(`${sandbox.app_url}/signup?email=grace%40example.com`, { method: 'POST' });
  t.equal(guessed.status, 200);
  const guessedId = guessed.headers.get('x-twinbox-request-id');

  let entries: any[] = [];
  await until(
    async () => {
      entries = await readAll(tb, user, id);
      return entries.filter((e) => e.kind === 'state_change').length === 2;
    },
    'both sign-ups in the timeline',
    60_000,
  );

  // The app request, the twin call it made (linked by the forwarded id), the change it caused.
  const request = entries.find((e) => e.id === `app:${requestId}`);
  t.match(request, {
    kind: 'app_request',
    source: 'app',
    method: 'POST',
    path: '/signup',
    status: 200,
    request_id: requestId,
    summary: 'POST /signup → 200',
  });
  t.notMatch(JSON.stringify(request), 'ada%40', 'no query values');
  const twinCall = entries.find((e) => e.kind === 'twin_call' && e.caused_by === request.id);
  t.match(twinCall, {
    source: 'twin:stripe',
    method: 'POST',
    path: '/v1/customers',
    status: 200,
    link: 'header',
    request_id: requestId,
  });
  const change = entries.find((e) => e.kind === 'state_change' && e.caused_by === twinCall.id);
  t.match(change, {
    source: 'twin:stripe',
    summary: `customer ${customer.id} created (ada@example.com)`,
    link: 'direct',
    request_id: requestId,
  });
  t.ok(
    entries.indexOf(request) < entries.indexOf(twinCall) &&
      entries.indexOf(twinCall) < entries.indexOf(change),
    'in that order',
  );
  // Without the header, the one request in flight.
  const inferred = entries.find((e) => e.kind === 'twin_call' && e.caused_by === `app:${guessedId}`);
  t.match(inferred, { link: 'inferred', request_id: guessedId });

  // Twinbox's own part: created, deploying, every step started and done, ready.
  const steps = entries.filter((e) => e.kind === 'deploy_step');
  for (const step of ['source', 'profile', 'twins', 'install', 'build', 'start']) {
    t.ok(
      steps.some((e) => e.detail.step === step && e.detail.phase === 'started'),
      `${step} started`,
    );
    t.ok(
      steps.some((e) => e.detail.step === step && e.detail.phase === 'finished' && e.duration_ms >= 0),
      `${step} done`,
    );
  }
  t.same(
    entries.filter((e) => e.kind === 'status').map((e) => e.detail.to),
    ['queued', 'building', 'ready'],
  );
  t.match(entries.find((e) => e.detail?.to === 'ready').summary, `Ready at ${sandbox.app_url}`);
  const times = entries.filter((e) => e.source === 'twinbox').map((e) => Date.parse(e.at));
  t.same(
    times,
    [...times].sort((a, b) => a - b),
    "Twinbox's events in time order",
  );

  // A crash: recorded, and the twin's log outlives its pod (copied as the sandbox failed).
  await fetch(`${sandbox.app_url}/die`).catch(() => {});
  await until(
    async () => (await readAll(tb, user, id)).some((e) => e.kind === 'status' && e.detail.to === 'failed'),
    'the crash in the timeline',
    60_000,
  );
  // The failed sandbox's resources go after its status changed.
  await until(() => tb.engine!.deployer.podOf(id) === undefined, 'the pod to go', 60_000);
  const afterCrash = await readAll(tb, user, id);
  t.match(
    afterCrash.find((e) => e.kind === 'crash'),
    { source: 'twinbox', summary: /^App crashed: the app exited with code 7/ },
  );
  t.equal(
    afterCrash.filter((e) => e.kind === 'state_change').length,
    2,
    "the twin's calls and changes are still there",
  );
  const again = await call(tb, { url: `/sandboxes/${id}/timeline`, token: user.key });
  t.match(again.body.notes, [/stripe twin has stopped; its log is the copy kept when it did/]);

  const other = await createUser(tb);
  t.equal((await call(tb, { url: `/sandboxes/${id}/timeline`, token: other.key })).status, 404);
});
