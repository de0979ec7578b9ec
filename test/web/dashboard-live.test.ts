import t from 'tap';
import { call, createUser } from '../helpers/twinbox.ts';
import { deployingTwinbox, deploySandbox, githubToDeployFrom, until } from '../helpers/deploy.ts';
import { requireHost } from '../security/isolation-fixtures.ts';
import { ATTACK, ATTACK_ESCAPED, holdsNoMarkup, sessionOf } from './helpers.ts';

/**
 * A zero-dependency app that prints a hostile line, and on POST /customers creates a Stripe customer with
 * a hostile name through its twin, passing on the router's request id (so the timeline ties the call to
 * the request by header). Any other POST (the twin's webhooks) gets 200.
 */
const APP = `import { createServer } from 'node:http';
const env = process.env;
console.log(${JSON.stringify(`boot ${ATTACK}`)});
createServer(async (req, res) => {
  if (req.method === 'POST' && req.url === '/customers') {
    const headers = { authorization: 'Bearer ' + env.STRIPE_SECRET_KEY, 'content-type': 'application/x-www-form-urlencoded' };
    if (req.headers['x-twinbox-request-id']) headers['x-twinbox-request-id'] = req.headers['x-twinbox-request-id'];
    const answer = await fetch(env.STRIPE_API_BASE + '/v1/customers', {
      method: 'POST', headers, body: new URLSearchParams({ email: 'eve@example.com', name: ${JSON.stringify(ATTACK)} }),
    });
    res.writeHead(answer.status, { 'content-type': 'application/json' });
    return res.end(await answer.text());
  }
  res.end(req.method === 'POST' ? 'ok' : 'hello');
}).listen(Number(env.PORT), '127.0.0.1');
`;

// A real deploy with full isolation (root, bubblewrap): the twins run in the sandbox's pod and the
// inspector reaches them over its Unix sockets.
t.test(
  'a live sandbox through the pages: its log, its twin inspector and its timeline, all escaped',
  async (t) => {
    if (!requireHost(t, { bwrap: true, root: true })) return;
    const gh = await githubToDeployFrom(t);
    await gh.createRepo({
      owner: 'octocat',
      name: 'hostile',
      files: {
        'package.json': JSON.stringify({
          name: 'hostile',
          private: true,
          type: 'module',
          scripts: { start: 'node server.js' },
        }),
        'server.js': APP,
      },
    });
    const tb = await deployingTwinbox(t, gh);
    const user = await createUser(tb);
    const other = await createUser(tb);
    const sandbox = await deploySandbox(
      tb,
      user,
      { repo: 'octocat/hostile', branch: 'main', twins: ['stripe'] },
      180_000,
    );
    if (sandbox.status !== 'ready')
      t.comment((await call(tb, { url: `/sandboxes/${sandbox.sandbox_id}/logs`, token: user.key })).body);
    t.equal(sandbox.status, 'ready', sandbox.error ?? '');
    const id: string = sandbox.sandbox_id;
    const session = await sessionOf(tb, user.id);
    const base = `/dashboard/sandboxes/${id}`;

    // The log: the hostile line is text, on the page and in the live endpoint.
    await until(
      async () => (await session.get(base)).body.includes('boot &lt;script&gt;'),
      'the app line in the log',
      30_000,
    );
    const page = await session.get(base);
    t.ok(holdsNoMarkup(page.body), 'no markup from the log');
    t.match(page.body, `boot ${ATTACK_ESCAPED}`);
    t.match(page.body, `<a href="${sandbox.app_url}">`, 'the app link');
    t.match(page.body, `<code>${sandbox.twins.stripe.base_url}</code>`);
    const offset = Number(/data-offset="(\d+)"/.exec(page.body)![1]);
    t.ok(offset > 0);
    const live = (await session.get(`${base}/live?offset=0`)).json();
    t.match(live.log.text, `boot ${ATTACK}`, 'JSON carries the raw text; the script inserts it as text');
    t.equal(live.log.end, offset);
    t.equal(live.log.complete, false);

    // One app request that creates a customer, through the router.
    const created = await fetch(`${sandbox.app_url}/customers`, { method: 'POST' });
    t.equal(created.status, 200);
    const customer = (await created.json()) as { id: string };

    // The inspector: the call with its (escaped) bodies, the state summary, the delivery of customer.created.
    const twin = `${base}/twins/stripe`;
    let inspector = await session.get(twin);
    t.equal(inspector.status, 200);
    t.ok(holdsNoMarkup(inspector.body), 'no markup from request bodies or state');
    t.match(inspector.body, '<code>/v1/customers</code>');
    t.match(inspector.body, `name=${ATTACK_ESCAPED}`, 'the request body is shown, escaped');
    t.notMatch(inspector.body, sandbox.env_vars.STRIPE_SECRET_KEY, 'the key is masked in bodies');
    t.match(inspector.body, `<td>${customer.id}</td>`, 'the customer in the state summary');
    await until(
      async () => (await session.get(twin)).body.includes('customer.created'),
      'the webhook delivery',
      30_000,
    );
    inspector = await session.get(twin);
    const delivery = /action="[^"]+\/deliveries\/(\d+)\/redeliver"/.exec(inspector.body)?.[1];
    t.ok(delivery, 'a redeliver button');

    // The request log is followed: what comes after the page's last id.
    const lastId = Number(/data-last-id="(\d+)"/.exec(inspector.body)![1]);
    await fetch(`${sandbox.app_url}/customers`, { method: 'POST' });
    const follow = (await session.get(`${twin}/requests?after=${lastId}`)).json();
    t.equal(follow.rows.length, 1, 'one new request');
    t.match(follow.rows[0], '/v1/customers');
    t.ok(holdsNoMarkup(follow.rows.join('')));

    // Faults: add one, the app's next call gets it; clear it.
    let r = await session.post(`${twin}/faults`, {
      kind: 'status',
      status: '503',
      count: '1',
      path_prefix: '/v1/customers',
    });
    t.equal(r.status, 302);
    t.equal(r.location, `${twin}?done=fault`);
    t.match((await session.get(r.location!)).body, 'next 1');
    t.equal(
      (await fetch(`${sandbox.app_url}/customers`, { method: 'POST' })).status,
      503,
      'the fault reached the app',
    );
    r = await session.post(`${twin}/faults`, { kind: 'status', status: '700' });
    t.equal(r.status, 400, 'a rule the twin refuses');
    t.match(r.body, /<p id="detail">The twin refused: [^<]*status/);
    await session.post(`${twin}/faults`, { kind: 'latency', latency_ms: '1' });
    r = await session.post(`${twin}/faults/clear`);
    t.equal(r.location, `${twin}?done=cleared`);
    t.match((await session.get(r.location!)).body, 'No faults: every request is served normally.');

    // The timeline: the app request, the twin call under it (tied by the forwarded id), the change under that.
    const timeline = await session.get(`${base}/timeline`);
    t.equal(timeline.status, 200);
    t.ok(holdsNoMarkup(timeline.body));
    t.match(
      timeline.body,
      /class="tl tl-app_request"[\s\S]*?POST \/customers → 200[\s\S]*?<ul class="tl-children">[\s\S]*?class="tl tl-twin_call"[\s\S]*?POST \/v1\/customers → 200[\s\S]*?tied by the request id[\s\S]*?<ul class="tl-children">[\s\S]*?class="tl tl-state_change"[\s\S]*?customer/,
    );
    t.match(timeline.body, /class="tl tl-deploy_step"/);
    const entries = (await session.get(`${base}/timeline/entries`)).json();
    t.ok(entries.entries.length > 3);
    t.ok(entries.entries.every((e: { html: string }) => holdsNoMarkup(e.html)));
    const next = (
      await session.get(`${base}/timeline/entries?cursor=${encodeURIComponent(entries.next_cursor)}`)
    ).json();
    t.ok(Array.isArray(next.entries), 'a cursor continues');
    const bad = await session.get(`${base}/timeline/entries?cursor=garbage`);
    t.equal(bad.status, 400);
    t.match(bad.json().detail, /./);

    // Redeliver, then reset.
    r = await session.post(`${twin}/deliveries/${delivery}/redeliver`);
    t.equal(r.location, `${twin}?done=redelivered`);
    t.match((await session.get(r.location!)).body, `(of ${delivery})`);
    t.equal((await session.post(`${twin}/deliveries/99999/redeliver`)).status, 404, 'an unknown delivery');
    r = await session.post(`${twin}/reset`);
    t.equal(r.location, `${twin}?done=reset`);
    t.notMatch((await session.get(r.location!)).body, `<td>${customer.id}</td>`, 'the customer is gone');

    // Another account cannot reach any of it.
    const stranger = await sessionOf(tb, other.id);
    t.equal((await stranger.get(twin)).status, 404);
    t.equal((await stranger.post(`${twin}/reset`)).status, 404);
    t.equal((await stranger.get(`${twin}/requests?after=0`)).status, 404);
    t.equal((await stranger.get(`${base}/timeline/entries`)).status, 404);

    // Deleted: the twins stop, the inspector says so.
    await session.post(`${base}/delete`);
    await until(
      async () => (await session.get(twin)).body.includes('is not running'),
      'the twin to stop',
      30_000,
    );
    t.match((await session.get(twin)).body, 'The stripe twin is not running: this sandbox is deleted.');
  },
);
