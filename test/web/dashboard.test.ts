import t from 'tap';
import { call, createSandbox, createUser, startTestTwinbox, type TestTwinbox } from '../helpers/twinbox.ts';
import { ATTACK, ATTACK_ESCAPED, browse, holdsNoMarkup, sessionOf } from './helpers.ts';

/** Sandboxes made through the API (they stay queued: these tests run without a deploy engine). */
async function sandboxes(tb: TestTwinbox, key: string, repo: string, n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const { status, body } = await createSandbox(tb, key, { repo, branch: `b${i}` });
    if (status !== 201) throw new Error(JSON.stringify(body));
    ids.push(body.sandbox_id);
  }
  return ids;
}

const rowsOf = (body: string) => [...body.matchAll(/<tr>\s*<td><span class="status/g)].length;

t.test('anonymous visitors are sent to sign in and brought back; the script endpoints say 401', async (t) => {
  const tb = await startTestTwinbox(t);
  const user = await createUser(tb);
  const [id] = await sandboxes(tb, user.key, 'acme/web', 1);
  for (const url of ['/dashboard', `/dashboard/sandboxes/${id}`, `/dashboard/sandboxes/${id}/twins/stripe`]) {
    const page = await browse(tb, 'GET', url);
    t.equal(page.status, 302, url);
    t.equal(page.location, `/login?next=${encodeURIComponent(url)}`, `${url} comes back after sign-in`);
  }
  const filtered = await browse(tb, 'GET', '/dashboard?status=ready&repo=acme%2Fweb');
  t.equal(filtered.location, `/login?next=${encodeURIComponent('/dashboard?status=ready&repo=acme%2Fweb')}`);
  const live = await browse(tb, 'GET', `/dashboard/sandboxes/${id}/live`);
  t.equal(live.status, 401);
  t.match(live.json().detail, /signed out/);
  // A form posted from a signed-out browser: sign in, then back to the sandbox page (a POST cannot replay).
  const post = await browse(tb, 'POST', `/dashboard/sandboxes/${id}/delete`, { form: { csrf: 'x' } });
  t.equal(post.status, 302);
  t.equal(post.location, `/login?next=${encodeURIComponent(`/dashboard/sandboxes/${id}`)}`);
  t.equal((await call(tb, { url: `/sandboxes/${id}`, token: user.key })).body.status, 'queued');
});

t.test('a browser opening the API gets the dashboard; API clients get the API as before', async (t) => {
  const tb = await startTestTwinbox(t);
  const user = await createUser(tb);
  const [id] = await sandboxes(tb, user.key, 'acme/web', 1);
  const html = { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' };
  let r = await call(tb, { url: '/sandboxes?status=ready', headers: html });
  t.equal(r.status, 302);
  t.equal(r.headers.location, '/dashboard?status=ready', 'filters carried over');
  r = await call(tb, { url: `/sandboxes/${id}`, headers: html });
  t.equal(r.headers.location, `/dashboard/sandboxes/${id}`);
  r = await call(tb, { url: '/sandboxes', headers: { accept: 'application/json' } });
  t.equal(r.status, 401, 'a JSON client still gets 401');
  t.match(r.body.detail, /./);
  r = await call(tb, { url: '/sandboxes', headers: { ...html, authorization: 'Bearer twinbox_sk_wrong' } });
  t.equal(r.status, 401, 'a client with a (bad) token gets the 401 it must see');
  r = await call(tb, { url: '/sandboxes' });
  t.equal(r.status, 401, 'no Accept: the API');
  r = await call(tb, { url: '/sandboxes', token: user.key, headers: html });
  t.equal(r.status, 200, 'a signed request is answered as usual');
  t.equal(r.body.sandboxes.length, 1);
  r = await call(tb, { method: 'POST', url: '/sandboxes', headers: html, payload: {} });
  t.equal(r.status, 401, 'only GETs are redirected');
});

t.test('the list: own sandboxes newest first, 20 a page, filters by status and repo, paging', async (t) => {
  const tb = await startTestTwinbox(t);
  const ann = await createUser(tb);
  const bob = await createUser(tb);
  const web = await sandboxes(tb, ann.key, 'acme/web', 15);
  const api = await sandboxes(tb, ann.key, 'acme/api', 10);
  const [bobs] = await sandboxes(tb, bob.key, 'bob/secret-repo', 1);
  await call(tb, { method: 'DELETE', url: `/sandboxes/${web[0]}`, token: ann.key });
  const session = await sessionOf(tb, ann.id);

  const first = await session.get('/dashboard');
  t.equal(first.status, 200);
  t.equal(first.headers['content-security-policy']?.toString().includes("script-src 'self'"), true);
  t.equal(rowsOf(first.body), 20, 'one page of 20');
  t.notMatch(first.body, 'bob/secret-repo', "another account's sandboxes are not listed");
  t.notMatch(first.body, bobs!);
  t.ok(
    first.body.indexOf(`/dashboard/sandboxes/${api[9]}`) <
      first.body.indexOf(`/dashboard/sandboxes/${api[0]}`),
    'newest first',
  );
  t.match(
    first.body,
    /<time datetime="\d{4}-\d\d-\d\dT[^"]+Z">\d{1,2} [A-Z][a-z]{2} \d{4}, \d\d:\d\d UTC<\/time>/,
  );
  t.match(first.body, '<code>b9</code>', 'the branch');
  const next = /href="(\/dashboard\?cursor=[^"]+)" rel="next"/.exec(first.body)?.[1];
  t.ok(next, 'a link to older sandboxes');
  const second = await session.get(next!.replace(/&amp;/g, '&'));
  t.equal(rowsOf(second.body), 5, 'the rest');
  t.notMatch(second.body, 'rel="next"', 'the last page');
  t.match(second.body, 'href="/dashboard">Newest</a>');

  const byRepo = await session.get('/dashboard?repo=ACME%2Fweb&status=');
  t.equal(rowsOf(byRepo.body), 15, 'repo filter (case-insensitive, empty status is no filter)');
  t.notMatch(byRepo.body, 'acme/api');
  t.match(byRepo.body, 'value="ACME/web"', 'the form keeps what was typed');
  const deleted = await session.get('/dashboard?status=deleted');
  t.equal(rowsOf(deleted.body), 1);
  t.match(deleted.body, `/dashboard/sandboxes/${web[0]}`);
  t.match(deleted.body, /<option\s+value="deleted"\s+selected/);
  const none = await session.get('/dashboard?status=ready');
  t.equal(rowsOf(none.body), 0);
  t.match(none.body, 'No sandbox matches these filters.');

  const hostile = await session.get(`/dashboard?repo=${encodeURIComponent(ATTACK)}`);
  t.equal(hostile.status, 400, 'a repo filter that is no repository name');
  t.match(hostile.body, /role="alert"[\s\S]*<p id="detail">[^<]*is not a repository name/);
  t.ok(holdsNoMarkup(hostile.body), 'the typed text is escaped');
  t.match(hostile.body, ATTACK_ESCAPED);
  const badStatus = await session.get('/dashboard?status=running');
  t.equal(badStatus.status, 400);
  t.match(badStatus.body, 'There is no status');
  const badCursor = await session.get('/dashboard?cursor=nonsense');
  t.equal(badCursor.status, 400);
  t.match(badCursor.body, /<p id="detail">[^<]*cursor/);

  const empty = await (await sessionOf(tb, (await createUser(tb)).id)).get('/dashboard');
  t.match(empty.body, 'No sandboxes yet');
});

t.test("another account's sandbox is a 404 everywhere, exactly like a missing one", async (t) => {
  const tb = await startTestTwinbox(t);
  const ann = await createUser(tb);
  const bob = await createUser(tb);
  const [bobs] = await sandboxes(tb, bob.key, 'bob/web', 1);
  const session = await sessionOf(tb, ann.id);
  const missing = '00000000-0000-4000-8000-000000000000';
  for (const id of [bobs!, missing]) {
    for (const path of ['', '/delete', '/timeline', '/twins/stripe']) {
      const page = await session.get(`/dashboard/sandboxes/${id}${path}`);
      t.equal(page.status, 404, `${path || 'page'} of ${id === missing ? 'a missing' : "bob's"} sandbox`);
      t.match(page.body, new RegExp(`<p id="detail">No sandbox ${id} in your account.</p>`));
    }
    t.equal((await session.get(`/dashboard/sandboxes/${id}/live`)).status, 404);
    for (const path of ['/delete', '/extend', '/variables', '/twins/stripe/reset']) {
      const post = await session.post(`/dashboard/sandboxes/${id}${path}`, { minutes: '30' });
      t.equal(post.status, 404, `POST ${path}`);
    }
  }
  const after = (await call(tb, { url: `/sandboxes/${bobs}`, token: bob.key })).body;
  t.equal(after.status, 'queued', "bob's sandbox untouched");
  t.equal((await session.get('/dashboard/sandboxes/..%2F..%2Fetc')).status, 404, 'an id that is no id');
});

t.test('delete and extend need the form token and a same-site post; with them they work', async (t) => {
  const tb = await startTestTwinbox(t);
  const user = await createUser(tb, 'pro');
  const [id] = await sandboxes(tb, user.key, 'acme/web', 1);
  const session = await sessionOf(tb, user.id);
  const page = `/dashboard/sandboxes/${id}`;
  const before = (await call(tb, { url: `/sandboxes/${id}`, token: user.key })).body;

  const refusals: Array<[string, Record<string, string>, Record<string, string>?]> = [
    ['no token', { csrf: '' }],
    ['a wrong token', { csrf: 'AAAA' }],
    ['another site', {}, { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' }],
    ['a sandbox app next door', {}, { origin: 'http://x.twinbox.test', 'sec-fetch-site': 'same-site' }],
  ];
  for (const [what, form, headers] of refusals) {
    for (const action of ['delete', 'extend']) {
      const r = await session.post(`${page}/${action}`, { minutes: '30', ...form }, headers);
      t.equal(r.status, 403, `${action} from ${what}`);
      t.match(r.body, /role="alert"[\s\S]*<p id="detail">[^<]+<\/p>/, 'says why');
    }
  }
  const unchanged = (await call(tb, { url: `/sandboxes/${id}`, token: user.key })).body;
  t.equal(unchanged.status, 'queued');
  t.equal(unchanged.expires_at, before.expires_at);

  const extended = await session.post(`${page}/extend`, { minutes: '60' });
  t.equal(extended.status, 302);
  t.equal(extended.location, `${page}?done=extended`);
  const after = (await call(tb, { url: `/sandboxes/${id}`, token: user.key })).body;
  t.equal(Date.parse(after.expires_at) - Date.parse(before.expires_at) >= 59 * 60_000, true, 'an hour later');
  t.match((await session.get(extended.location!)).body, 'Extended: the new expiry is shown above.');
  const odd = await session.post(`${page}/extend`, { minutes: '7' });
  t.equal(odd.status, 400);
  t.match(odd.body, 'Extend by one of 15, 30, 60, 120 minutes.');

  const confirm = await session.get(`${page}/delete`);
  t.equal(confirm.status, 200);
  t.match(confirm.body, 'Delete this sandbox?');
  t.match(confirm.body, `action="${page}/delete"`);
  t.equal(
    (await call(tb, { url: `/sandboxes/${id}`, token: user.key })).body.status,
    'queued',
    'asking deletes nothing',
  );
  const deleted = await session.post(`${page}/delete`);
  t.equal(deleted.location, `${page}?done=deleted`);
  t.equal((await call(tb, { url: `/sandboxes/${id}`, token: user.key })).body.status, 'deleted');
  const gone = await session.get(deleted.location!);
  t.match(gone.body, 'data-status="deleted"');
  t.notMatch(gone.body, `action="${page}/extend"`, 'an ended sandbox offers no extend');
  const late = await session.post(`${page}/extend`, { minutes: '30' });
  t.equal(late.status, 409, 'extending an ended sandbox says why');
  t.match(late.body, /<p id="detail">Sandbox [^<]* is deleted/);
});

t.test('a free plan extension past its cap is shown on the page with the reason', async (t) => {
  const tb = await startTestTwinbox(t, { TWINBOX_FREE_TTL_CAP_MINUTES: '60' });
  const user = await createUser(tb, 'free');
  const { body } = await createSandbox(tb, user.key, { repo: 'acme/web', branch: 'main', ttl_minutes: 50 });
  const session = await sessionOf(tb, user.id);
  const r = await session.post(`/dashboard/sandboxes/${body.sandbox_id}/extend`, { minutes: '30' });
  t.equal(r.status, 403);
  t.match(
    r.body,
    /<p id="detail">Extending by 30 minutes would make the sandbox live \d+ minutes, above the free plan/,
  );
  t.match(r.body, 'data-status="queued"', 'on the sandbox page');
});

t.test('the sandbox page escapes what the sandbox holds, and keeps variable values out of it', async (t) => {
  const tb = await startTestTwinbox(t);
  const user = await createUser(tb);
  const [id] = await sandboxes(tb, user.key, 'acme/web', 1);
  // What a deploy writes on the record, made hostile: a branch, an error, variables, notes, blocked hosts.
  await tb.store.sandboxes.update(id!, (s) => ({
    ...s,
    status: 'failed',
    branch: ATTACK,
    pr_url: 'javascript:alert(3)',
    error: `npm ERR! ${ATTACK}`,
    env_vars: { SECRET_VALUE_NAME: 'sk_test_supersecret', [ATTACK]: 'x' },
    twin_names: ['stripe'],
    seed_notes: [`could not read ${ATTACK}`],
    blocked_egress: [{ host: ATTACK, port: 443, count: 2, first_seen: new Date().toISOString() }],
  }));
  const session = await sessionOf(tb, user.id);
  const page = await session.get(`/dashboard/sandboxes/${id}`);
  t.equal(page.status, 200);
  t.ok(holdsNoMarkup(page.body), 'no markup from the record');
  t.equal(
    page.body.split(ATTACK_ESCAPED).length - 1 >= 3,
    true,
    'shown escaped (error, variable, notes, host)',
  );
  t.notMatch(page.body, 'href="javascript:', 'a stored URL that is not http(s) is never a link');
  t.match(page.body, /<pre class="plain" id="sandbox-error">npm ERR! &lt;script&gt;/);
  t.match(page.body, '<code>SECRET_VALUE_NAME</code>', 'variable names are shown');
  t.notMatch(page.body, 'sk_test_supersecret', 'values are not in the page');
  t.notMatch(page.body, new RegExp(tb.store ? 'twinadm_' : 'x'), 'nor the twin admin token');

  const noToken = await browse(tb, 'POST', `/dashboard/sandboxes/${id}/variables`, {
    cookie: session.cookie,
    headers: { accept: 'application/json' },
    form: {},
  });
  t.equal(noToken.status, 403, 'revealing needs the form token');
  const revealed = await session.post(
    `/dashboard/sandboxes/${id}/variables`,
    {},
    { accept: 'application/json' },
  );
  t.equal(revealed.status, 200);
  t.equal(revealed.json().env_vars.SECRET_VALUE_NAME, 'sk_test_supersecret');
  t.equal(revealed.headers['cache-control'], 'no-store');
  const withoutScript = await session.post(`/dashboard/sandboxes/${id}/variables`);
  t.match(withoutScript.body, '<code>sk_test_supersecret</code>', 'a page of the values without script');
  t.ok(holdsNoMarkup(withoutScript.body));
});

t.test(
  'the live endpoint: status and re-rendered parts when the sandbox changed, the log after an offset',
  async (t) => {
    const tb = await startTestTwinbox(t);
    const user = await createUser(tb);
    const [id] = await sandboxes(tb, user.key, 'acme/web', 1);
    const session = await sessionOf(tb, user.id);
    const page = await session.get(`/dashboard/sandboxes/${id}`);
    const since = /data-updated="([^"]+)"/.exec(page.body)![1]!;
    t.match(page.body, 'data-live="/dashboard/sandboxes/');
    t.match(page.body, '<script src="/assets/dashboard.js" defer></script>');
    let live = await session.get(
      `/dashboard/sandboxes/${id}/live?offset=0&since=${encodeURIComponent(since)}`,
    );
    t.equal(live.status, 200);
    t.same(live.json().log, { text: '', start: 0, end: 0, complete: false });
    t.equal(live.json().status, 'queued');
    t.equal(live.json().head, undefined, 'nothing re-rendered when nothing changed');
    await tb.store.sandboxes.update(id!, (s) => ({
      ...s,
      error: ATTACK,
      updated_at: new Date(Date.now() + 1000).toISOString(),
    }));
    live = await session.get(`/dashboard/sandboxes/${id}/live?offset=0&since=${encodeURIComponent(since)}`);
    t.match(live.json().head, 'data-status="queued"');
    t.match(live.json().status_html, ATTACK_ESCAPED, 'fragments are escaped like the page');
    t.ok(holdsNoMarkup(live.json().status_html + live.json().details));
    t.match(live.json().details, 'Twins');
    const bad = await session.get(`/dashboard/sandboxes/${id}/live?offset=-1`);
    t.equal(bad.status, 400);
    t.match(bad.json().detail, '"offset" must be a whole number');
  },
);

t.test(
  'the twin inspector of a sandbox whose twins do not run says so; an unknown twin is a 404',
  async (t) => {
    const tb = await startTestTwinbox(t);
    const user = await createUser(tb);
    const { body } = await createSandbox(tb, user.key, {
      repo: 'acme/web',
      branch: 'main',
      twins: ['stripe'],
    });
    const session = await sessionOf(tb, user.id);
    const page = await session.get(`/dashboard/sandboxes/${body.sandbox_id}/twins/stripe`);
    t.equal(page.status, 200);
    t.match(page.body, 'The stripe twin starts with the app: this sandbox is queued.');
    t.match(page.body, 'aria-current="page">Twin: stripe</a>');
    const unknown = await session.get(
      `/dashboard/sandboxes/${body.sandbox_id}/twins/${encodeURIComponent(ATTACK)}`,
    );
    t.equal(unknown.status, 404);
    t.ok(holdsNoMarkup(unknown.body));
    const reset = await session.post(`/dashboard/sandboxes/${body.sandbox_id}/twins/stripe/reset`);
    t.equal(reset.status, 409, 'an action on a twin that does not run');
    t.match(reset.body, /<p id="detail">The stripe twin starts with the app/);
    const follow = await session.get(`/dashboard/sandboxes/${body.sandbox_id}/twins/stripe/requests?after=0`);
    t.equal(follow.status, 409);
    t.match(follow.json().detail, 'starts with the app');
  },
);
