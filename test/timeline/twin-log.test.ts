import t from 'tap';
import { join } from 'node:path';
import { REQUEST_ID_HEADER as ROUTER_REQUEST_ID_HEADER } from '../../server/router/index.ts';
import { TwinAdminClient, TwinAdminError } from '../../server/twins/kit/admin-client.ts';
import { TwinHost } from '../../server/twins/runtime/host.ts';
import { twinSocketPath } from '../../server/twins/runtime/paths.ts';
import { REQUEST_ID_HEADER, RequestLog } from '../../server/twins/runtime/request-log.ts';
import { tempDir } from '../helpers/twinbox.ts';
import { twinFactories } from '../../server/twins/registry.ts';

/** A Stripe twin that also listens on a Unix socket, as it does in a sandbox's pod. */
async function stripeOnSocket(t: Parameters<typeof tempDir>[0]) {
  const dir = await tempDir(t, 'twinbox-twin-log-');
  const host = new TwinHost({
    factories: twinFactories,
    dataDir: join(dir, 'data'),
    publicHost: '127.0.0.1',
    socketDir: dir,
  });
  t.teardown(() => host.close());
  const entry = (await host.start('sb', ['stripe'], { adminToken: 'admin-token' })).stripe!;
  const socketPath = twinSocketPath(dir, 'stripe');
  const createCustomer = (email: string, headers: Record<string, string> = {}) =>
    fetch(`${entry.base_url}/v1/customers`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${entry.env_vars.STRIPE_SECRET_KEY}`,
        'content-type': 'application/x-www-form-urlencoded',
        ...headers,
      },
      body: new URLSearchParams({ email }).toString(),
    }).then((r) => r.status);
  return { entry, socketPath, createCustomer };
}

t.test('the twin and the router name the request id header alike', async (t) => {
  t.equal(REQUEST_ID_HEADER, ROUTER_REQUEST_ID_HEADER);
});

t.test('the request log keeps the forwarded request id and traceparent, nothing malformed', async (t) => {
  const { socketPath, createCustomer } = await stripeOnSocket(t);
  const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
  t.equal(await createCustomer('a@example.com', { [REQUEST_ID_HEADER]: 'req-1', traceparent }), 200);
  t.equal(await createCustomer('b@example.com'), 200);
  t.equal(await createCustomer('c@example.com', { [REQUEST_ID_HEADER]: 'has space <script>' }), 200);

  const admin = TwinAdminClient.overSocket(socketPath, 'admin-token');
  const log = await admin.requests();
  t.equal(log.length, 3);
  t.equal(log[0]!.request_id, 'req-1');
  t.equal(log[0]!.traceparent, traceparent);
  t.notOk('request_id' in log[1]!, 'no header, no field');
  t.notOk('request_id' in log[2]!, 'a value that is not a plain token is not kept');
  t.same(
    log.map((e) => e.id),
    [1, 2, 3],
  );
});

t.test('GET /requests pages with after, before and limit; bad values are a 400 with detail', async (t) => {
  const { socketPath, createCustomer } = await stripeOnSocket(t);
  for (let i = 1; i <= 5; i++) t.equal(await createCustomer(`user${i}@example.com`), 200);
  const admin = TwinAdminClient.overSocket(socketPath, 'admin-token');
  const ids = (page: { requests: Array<{ id: number }> }) => page.requests.map((e) => e.id);

  const newest = await admin.requestPage({ limit: 2 });
  t.same(ids(newest), [4, 5], 'without after: the newest, oldest first');
  t.equal(newest.has_more, true);
  t.equal(newest.last_id, 5);

  const following = await admin.requestPage({ after: 2, limit: 2 });
  t.same(ids(following), [3, 4]);
  t.equal(following.has_more, true);
  const rest = await admin.requestPage({ after: 4, limit: 2 });
  t.same(ids(rest), [5]);
  t.equal(rest.has_more, false);
  t.same(ids(await admin.requestPage({ after: 5 })), [], 'nothing new yet');

  const back = await admin.requestPage({ before: 4, limit: 2 });
  t.same(ids(back), [2, 3], 'paging back: the last ones below before');
  t.equal(back.has_more, true);
  t.same(ids(await admin.requestPage({ after: 1, before: 4 })), [2, 3], 'between the two');

  for (const query of ['limit=0', 'limit=abc', 'after=-1', 'before=0', 'after=1.5']) {
    const error = await admin
      .requestPage(Object.fromEntries([query.split('=')]) as never)
      .catch((e: unknown) => e);
    t.ok(error instanceof TwinAdminError, query);
    t.equal((error as TwinAdminError).status, 400, query);
    t.match((error as TwinAdminError).body, { detail: /must be an integer of at least/ }, query);
  }
  const refused = await TwinAdminClient.overSocket(socketPath, 'wrong-token')
    .requests()
    .catch((e: unknown) => e);
  t.equal((refused as TwinAdminError).status, 401, 'the admin token is checked over the socket too');
});

t.test('RequestLog.page keeps to its capacity and finds bounds past evicted entries', async (t) => {
  const log = new RequestLog(3);
  const entry = { at: '', method: 'GET', path: '/', status: 200, duration_ms: 1 };
  for (let i = 0; i < 5; i++) log.add({ ...entry, request_body: null, response_body: null });
  t.same(
    log.page({}).requests.map((e) => e.id),
    [3, 4, 5],
  );
  t.same(
    log.page({ after: 1 }).requests.map((e) => e.id),
    [3, 4, 5],
    'an id already evicted',
  );
  t.same(
    log.page({ before: 4, limit: 5 }).requests.map((e) => e.id),
    [3],
  );
  log.clear();
  t.same(log.page({}), { requests: [], has_more: false, last_id: 0 });
});
