import t from 'tap';
import { AppRequestRecorder, type ForwardRecord } from '../../server/timeline/app-requests.ts';
import { decodeCursor, encodeCursor, mergeFeeds, START } from '../../server/timeline/cursor.ts';
import type { Feed, Positioned } from '../../server/timeline/entries.ts';
import { callFeed, callLogAfter, deliveryFeed, DELIVERY_WAIT_MS } from '../../server/timeline/feeds.ts';
import { originOfCall, requestOfDelivery } from '../../server/timeline/linking.ts';
import { twinDescriptors } from '../../server/twins/descriptors.ts';
import type { RequestLogEntry } from '../../server/twins/runtime/request-log.ts';
import type { WebhookDelivery } from '../../server/twins/runtime/webhooks.ts';

const T0 = Date.parse('2026-01-01T00:00:00.000Z');

function positioned(id: string, atMs: number, position: number): Positioned {
  return {
    atMs,
    position,
    entry: { id, at: new Date(atMs).toISOString(), kind: 'status', source: 'x', summary: id },
  };
}

t.test(
  'mergeFeeds: time order across feeds, each feed in its own order, positions past what was taken',
  async (t) => {
    const events: Feed = {
      key: 'events',
      entries: [positioned('e1', T0 + 1, 1), positioned('e2', T0 + 5, 2)],
    };
    const app: Feed = { key: 'app', entries: [positioned('a1', T0 + 2, 1), positioned('a2', T0 + 5, 2)] };
    const page = mergeFeeds([events, app], {}, 10);
    t.same(
      page.entries.map((p) => p.entry.id),
      ['e1', 'a1', 'e2', 'a2'],
      'a tie goes to the feed listed first',
    );
    t.same(page.positions, { events: 2, app: 2 });

    const small = mergeFeeds([events, app], { other: 7 }, 3);
    t.same(
      small.entries.map((p) => p.entry.id),
      ['e1', 'a1', 'e2'],
    );
    t.same(small.positions, { other: 7, events: 2, app: 1 }, 'feeds not read keep their position');

    // A feed whose own order is not time order (an app request known only once it ends) is still
    // taken in its own order, so nothing is skipped: the late one comes in a later page.
    const late: Feed = { key: 'app', entries: [positioned('slow-ended-second', T0, 3)] };
    const next = mergeFeeds([{ key: 'events', entries: [] }, late], small.positions, 10);
    t.same(
      next.entries.map((p) => p.entry.id),
      ['slow-ended-second'],
    );
    t.same(mergeFeeds([], { app: 1 }, 10), { entries: [], positions: { app: 1 } });
  },
);

t.test('cursors round-trip, name their sandbox and refuse what they did not write', async (t) => {
  const id = '0123abcd-0000-4000-8000-000000000000';
  const cursor = encodeCursor(id, { events: 3, app: START, 'calls:stripe': 14, 'hooks:stripe': 2 });
  t.same(decodeCursor(id, cursor), { events: 3, app: -1, 'calls:stripe': 14, 'hooks:stripe': 2 });
  t.throws(() => decodeCursor('ffffffff-0000-4000-8000-000000000000', cursor), /another sandbox/);
  t.throws(() => decodeCursor(id, 'e30'), /not a cursor/);
  t.throws(() => decodeCursor(id, '%%%'), /not a cursor/);
  t.throws(() => decodeCursor(id, encodeCursor(id, { 'calls:Bad Name': 1 })), /not a cursor/);
});

function record(over: Partial<ForwardRecord> & { request_id: string }): ForwardRecord {
  return {
    seq: 1,
    target: 'app',
    method: 'POST',
    path: '/signup',
    query_keys: [],
    started_at: T0,
    ended_at: T0 + 100,
    status: 200,
    ...over,
  };
}

t.test('originOfCall: the forwarded id, the trace, or the one request in flight', async (t) => {
  const signup = record({ request_id: 'r-signup', trace_id: '4bf92f3577b34da6a3ce929d0e0e4736' });
  const other = record({ request_id: 'r-other', started_at: T0 + 200, ended_at: T0 + 300 });
  const outside = record({
    request_id: 'r-outside',
    target: 'stripe',
    started_at: T0 + 10,
    ended_at: T0 + 20,
  });
  const requests = [signup, other, outside];
  const during = (startMs: number, extra = {}) => ({ startMs, endMs: startMs + 5, ...extra });

  t.match(originOfCall(during(T0 + 250, { request_id: 'r-signup' }), requests), {
    kind: 'app',
    link: 'header',
    request: { request_id: 'r-signup' },
  });
  t.match(originOfCall(during(T0 + 10, { request_id: 'r-outside' }), requests), {
    kind: 'outside',
    request: { request_id: 'r-outside' },
  });
  t.equal(
    originOfCall(during(T0 + 50, { request_id: 'r-forgotten' }), requests),
    undefined,
    'an id no longer held links nothing, not even by inference',
  );
  t.match(
    originOfCall(
      during(T0 + 250, { traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01' }),
      requests,
    ),
    { kind: 'app', link: 'header', request: { request_id: 'r-signup' } },
    'the trace of a request that came with a traceparent',
  );
  t.match(originOfCall(during(T0 + 50), requests), {
    kind: 'app',
    link: 'inferred',
    request: { request_id: 'r-signup' },
  });
  t.match(originOfCall(during(T0 + 250), requests), { link: 'inferred', request: { request_id: 'r-other' } });
  t.match(
    originOfCall(during(T0 + 99), requests),
    { link: 'inferred', request: { request_id: 'r-signup' } },
    'within the clock slack of its end',
  );
  t.equal(originOfCall(during(T0 + 150), requests), undefined, 'nothing in flight');
  const overlapping = [
    signup,
    record({ request_id: 'r-parallel', started_at: T0 + 40, ended_at: undefined }),
  ];
  t.equal(originOfCall(during(T0 + 50), overlapping), undefined, 'two in flight: no guess');
  t.match(
    originOfCall(during(T0 + 150), overlapping),
    { link: 'inferred', request: { request_id: 'r-parallel' } },
    'a request still in flight counts',
  );
});

t.test(
  'requestOfDelivery: the one POST to the delivery path that started while it was delivered',
  async (t) => {
    const hook = record({ request_id: 'r-hook', path: '/hooks', started_at: T0 + 3 });
    const page = record({ request_id: 'r-page', method: 'GET', path: '/hooks', started_at: T0 + 3 });
    const delivery = {
      attempts: [
        { startMs: T0 - 5_000, endMs: T0 - 4_000 },
        { startMs: T0, endMs: T0 + 10 },
      ],
      path: '/hooks',
    };
    t.equal(requestOfDelivery(delivery, [hook, page])?.request_id, 'r-hook');
    t.equal(requestOfDelivery({ ...delivery, path: '/other' }, [hook]), undefined);
    t.equal(
      requestOfDelivery(delivery, [hook, { ...hook, request_id: 'r-twin' }]),
      undefined,
      'two: no guess',
    );
  },
);

function logEntry(id: number, over: Partial<RequestLogEntry> = {}): RequestLogEntry {
  return {
    id,
    at: new Date(T0 + id * 1000).toISOString(),
    method: 'POST',
    path: '/v1/customers?expand[]=x',
    status: 200,
    duration_ms: 10,
    request_body: 'email=a@example.com',
    response_body: { id: `cus_${id}`, object: 'customer' },
    ...over,
  };
}

t.test(
  'callFeed: a call and its state change are two positions, so a page can end between them',
  async (t) => {
    const traffic = {
      twin: 'stripe',
      descriptor: twinDescriptors.get('stripe'),
      calls: [logEntry(1), logEntry(2, { method: 'GET', response_body: { object: 'list' } })],
      deliveries: [],
    };
    const feed = callFeed(traffic, START, []);
    t.same(
      feed.entries.map((p) => [p.position, p.entry.kind, p.entry.summary]),
      [
        [2, 'twin_call', 'POST /v1/customers → 200'],
        [3, 'state_change', 'customer cus_1 created'],
        [4, 'twin_call', 'GET /v1/customers → 200'],
      ],
    );
    t.equal(feed.key, 'calls:stripe');
    t.same(feed.entries[1]!.entry.caused_by, 'twin:stripe:call:1');
    t.equal(feed.entries[1]!.entry.link, 'direct');
    t.equal(feed.entries[0]!.entry.path, '/v1/customers', 'no query');
    t.equal(
      feed.entries[0]!.entry.at,
      new Date(T0 + 1000 - 10).toISOString(),
      'a call is placed at its start',
    );

    t.equal(callLogAfter(START), 0);
    t.equal(callLogAfter(2), 0, 'after the call: its change may still be due');
    t.equal(callLogAfter(3), 1);
    const rest = callFeed(traffic, 2, []);
    t.same(
      rest.entries.map((p) => p.position),
      [3, 4],
    );
  },
);

function delivery(id: number, agoMs: number, now: number, attempts = 1): WebhookDelivery {
  const at = new Date(now - agoMs).toISOString();
  return {
    id,
    guid: `g${id}`,
    event: 'customer.created',
    url: 'http://app.example/hooks?secret=x',
    delivered_at: at,
    status_code: attempts ? 200 : null,
    duration_ms: 3,
    success: attempts > 0,
    state: attempts ? 'delivered' : 'pending',
    attempts: Array.from({ length: attempts }, (_, i) => ({
      attempt: i + 1,
      at,
      status_code: 200,
      duration_ms: 3,
    })),
    payload: {},
  };
}

t.test('deliveryFeed waits for a first attempt still on the wire, not for one that hung', async (t) => {
  const now = T0 + 60_000;
  const traffic = (deliveries: WebhookDelivery[]) => ({
    twin: 'stripe',
    descriptor: undefined,
    calls: [],
    deliveries,
  });
  const onTheWire = traffic([delivery(1, 100, now), delivery(2, 60, now, 0), delivery(3, 50, now)]);
  t.same(
    deliveryFeed(onTheWire, START, now).entries.map((p) => p.position),
    [1],
    '2 is being sent: 3 waits behind it',
  );
  const hung = traffic([
    delivery(1, 100, now),
    delivery(2, DELIVERY_WAIT_MS + 1_000, now, 0),
    delivery(3, 50, now),
  ]);
  t.same(
    deliveryFeed(hung, START, now).entries.map((p) => p.position),
    [1, 3],
  );
  const gone = traffic([delivery(3, 50, now), delivery(5, 40, now)]);
  t.same(
    deliveryFeed(gone, 1, now).entries.map((p) => p.position),
    [3, 5],
    'ids no longer listed (a reset, the oldest dropped) are not waited for',
  );
  const retrying = { ...delivery(6, 40, now, 2), status_code: 503, state: 'pending' as const };
  t.equal(
    deliveryFeed(traffic([retrying]), 5, now).entries[0]!.entry.summary,
    'customer.created webhook → app: 503 after 2 attempts, will retry',
  );
  const entry = deliveryFeed(gone, START, now).entries[0]!.entry;
  t.match(entry, {
    id: 'twin:stripe:webhook:3',
    kind: 'webhook',
    source: 'twin:stripe',
    summary: 'customer.created webhook → app: 200',
    status: 200,
    path: '/hooks',
    detail: { target: 'http://app.example/hooks', state: 'delivered', attempts: 1 },
  });
  t.notMatch(JSON.stringify(entry), 'secret=x', 'no query string of the target');
});

t.test('AppRequestRecorder keeps a bounded number of requests and sandboxes', async (t) => {
  const recorder = new AppRequestRecorder({ perSandbox: 3, sandboxes: 2 });
  const forward = (sandboxId: string, requestId: string, url = '/x') =>
    recorder.observe({
      sandboxId,
      target: { kind: 'app' },
      requestId,
      method: 'GET',
      url,
      headers: {},
      startedAt: T0,
    });
  const after = async (sandboxId: string, seq: number) =>
    (await recorder.ended(sandboxId)).filter((r) => r.seq > seq);
  const slow = forward('a', 'slow');
  for (let i = 1; i <= 4; i++) forward('a', `r${i}`, `/p${i}?k=v&k=w`)({ status: 200, endedAt: T0 + i });
  t.same(
    (await after('a', 0)).map((r) => [r.seq, r.request_id]),
    [
      [2, 'r2'],
      [3, 'r3'],
      [4, 'r4'],
    ],
    'the oldest ended request went',
  );
  t.same(
    (await after('a', 3)).map((r) => r.request_id),
    ['r4'],
  );
  t.equal(recorder.find('a', 'r1'), undefined);
  t.same(recorder.find('a', 'r4')?.query_keys, ['k']);
  t.equal(recorder.find('a', 'slow')?.ended_at, undefined, 'in flight');
  t.same(
    recorder.inFlight('a').map((r) => r.request_id),
    ['slow'],
  );
  slow({ status: undefined, endedAt: T0 + 10 });
  t.same(
    (await after('a', 4)).map((r) => [r.request_id, r.status]),
    [['slow', undefined]],
  );
  t.equal((await recorder.ended('a')).at(-1)?.seq, 5);
  t.same(recorder.inFlight('a'), [], 'nothing in flight any more');

  forward('b', 'b1')({ status: 200, endedAt: T0 });
  forward('c', 'c1')({ status: 200, endedAt: T0 });
  t.same(await recorder.ended('a'), [], 'the sandbox written to least recently was forgotten');
  t.equal((await recorder.ended('c')).at(-1)?.seq, 1);
  t.notOk(recorder.durable, 'without a store, kept in memory only');
});
