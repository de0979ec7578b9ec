/**
 * The twin inspector and the timeline's twin logs on an API process, for a sandbox whose twins run in a
 * pod on a runner (docs/scaling.md): two whole Twinboxes on one PostgreSQL schema, an API process and a
 * runner. Every read and action goes from the API process through the runner's internal twin admin
 * route (server/runners/twins.ts), which wants the admin token and passes calls on to the twin.
 */
import t from 'tap';
import { call, createUser } from '../helpers/twinbox.ts';
import { settle, until } from '../helpers/deploy.ts';
import { postgresSkip } from '../helpers/postgres.ts';
import { apiAndRunner } from './pair.ts';
import { sessionOf } from '../web/helpers.ts';

const ADMIN_TOKEN = 'twin-reach-test-admin-token-0123456789abcdef';

t.test(
  'the inspector and the timeline on an API process read twins on a runner',
  {
    skip: await postgresSkip(),
  },
  async (t) => {
    const { api, runner } = await apiAndRunner(t, { adminToken: ADMIN_TOKEN, runnerId: 'runner-twins' });
    t.equal(api.engine, undefined, 'the API process has no pod of any sandbox');
    const owner = await createUser(api);
    const stranger = await createUser(api);

    const created = await call(api, {
      method: 'POST',
      url: '/sandboxes',
      token: owner.key,
      payload: { repo: 'octocat/shop', branch: 'main', twins: ['stripe'] },
    });
    t.equal(created.status, 201);
    const id = created.body.sandbox_id as string;
    const ready = await settle(api, owner, id, 180_000);
    t.equal(ready.status, 'ready', ready.error ?? '');
    t.ok(runner.engine?.deployer.podOf(id), 'the pod is on the runner');

    // A call to the twin (through the API process's router, so through the runner) that changes its state.
    const apiPort = Number(api.server.info.port);
    const stripe = `http://${id}--stripe.localhost:${apiPort}`;
    const secret = ready.twins.stripe.env_vars.STRIPE_SECRET_KEY as string;
    const made = await fetch(`${stripe}/v1/customers`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: 'email=ada%40example.com&name=Ada',
    });
    t.equal(made.status, 200, 'the twin made the customer');
    const customer = (await made.json()) as { id: string };

    // The inspector, served by the API process: the twin's request log and its state.
    const session = await sessionOf(api, owner.id);
    const twin = `/dashboard/sandboxes/${id}/twins/stripe`;
    let inspector = await session.get(twin);
    t.equal(inspector.status, 200);
    t.notMatch(inspector.body, 'cannot be reached', 'the twin is reached');
    t.match(inspector.body, '<code>/v1/customers</code>', 'the call in the request log');
    t.match(inspector.body, `<td>${customer.id}</td>`, 'the customer in the state summary');
    const follow = (await session.get(`${twin}/requests?after=0`)).json();
    t.ok(
      follow.rows.some((row: string) => row.includes('/v1/customers')),
      'the live follow reads the log too',
    );

    // Actions with a body and without, and a refusal of the twin's, all through the runner.
    let r = await session.post(`${twin}/faults`, {
      kind: 'status',
      status: '503',
      count: '1',
      path_prefix: '/v1/customers',
    });
    t.equal(r.status, 302, r.body);
    t.equal(r.location, `${twin}?done=fault`);
    const faulted = await fetch(`${stripe}/v1/customers`, { headers: { authorization: `Bearer ${secret}` } });
    t.equal(faulted.status, 503, 'the fault added on the API process reached the twin');
    r = await session.post(`${twin}/faults`, { kind: 'status', status: '700' });
    t.equal(r.status, 400, 'a rule the twin refuses');
    t.match(r.body, /<p id="detail">The twin refused: [^<]*status/, "the twin's own detail");

    // The timeline, API and page, served by the API process: the call and the change it made.
    await until(async () => {
      const page = await call(api, { url: `/sandboxes/${id}/timeline?limit=500`, token: owner.key });
      return page.body.entries?.some((entry: { kind: string }) => entry.kind === 'state_change');
    }, "the twin's state change in the timeline");
    const timeline = await call(api, { url: `/sandboxes/${id}/timeline?limit=500`, token: owner.key });
    t.equal(timeline.status, 200);
    const entries = timeline.body.entries as Array<{
      kind: string;
      source: string;
      method?: string;
      path?: string;
    }>;
    t.ok(
      entries.some(
        (e) =>
          e.kind === 'twin_call' &&
          e.source === 'twin:stripe' &&
          e.method === 'POST' &&
          e.path === '/v1/customers',
      ),
      'the twin call in the timeline',
    );
    t.notOk(
      (timeline.body.notes as string[]).some((note) => /stripe/i.test(note)),
      'no note that the twin could not be read',
    );
    const timelinePage = await session.get(`/dashboard/sandboxes/${id}/timeline`);
    t.equal(timelinePage.status, 200);
    t.match(timelinePage.body, /class="tl tl-twin_call"[\s\S]*?POST \/v1\/customers → 200/);

    // Reset, then the state is empty again: read through the runner once more.
    r = await session.post(`${twin}/reset`);
    t.equal(r.location, `${twin}?done=reset`);
    inspector = await session.get(r.location!);
    t.notMatch(inspector.body, `<td>${customer.id}</td>`, 'the customer is gone');

    // Another owner's sandbox stays a 404, on the page, its follow and its timeline.
    const other = await sessionOf(api, stranger.id);
    t.equal((await other.get(twin)).status, 404);
    t.equal((await other.get(`${twin}/requests?after=0`)).status, 404);
    t.equal((await other.post(`${twin}/reset`)).status, 404);
    t.equal((await call(api, { url: `/sandboxes/${id}/timeline`, token: stranger.key })).status, 404);

    // The runner's route: the admin token only; neither the owner's key nor the twin's own token.
    const route = `http://127.0.0.1:${Number(runner.server.info.port)}/runner/sandboxes/${id}/twins/stripe/_twinbox/state`;
    t.equal((await fetch(route)).status, 401, 'no credentials');
    for (const [who, token] of [
      ["the owner's API key", owner.key],
      ["the twin's admin token", created.body.twin_admin_token as string],
    ]) {
      const refused = await fetch(route, { headers: { authorization: `Bearer ${token}` } });
      t.equal(refused.status, 401, `${who} is refused`);
      t.match(((await refused.json()) as { detail: string }).detail, /./);
    }
    const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
    const state = await fetch(route, { headers: admin });
    t.equal(state.status, 200, 'the admin token passes');
    t.match(await state.json(), { twin: 'stripe' });
    const badTwin = await fetch(route.replace('/twins/stripe/', '/twins/Not_A_Twin/'), { headers: admin });
    t.equal(badTwin.status, 400, 'a twin name the router would not route is refused');
    t.match(((await badTwin.json()) as { detail: string }).detail, /twin/);
    const noTwin = await fetch(route.replace('/twins/stripe/', '/twins/slack/'), { headers: admin });
    t.equal(noTwin.status, 404, 'a twin the sandbox does not have');
    const noSandbox = await fetch(route.replace(id, '00000000-0000-4000-8000-000000000000'), {
      headers: admin,
    });
    t.equal(noSandbox.status, 404, 'no such sandbox');
    t.equal(
      (
        await fetch(`http://127.0.0.1:${apiPort}/runner/sandboxes/${id}/twins/stripe/_twinbox/state`, {
          headers: admin,
        })
      ).status,
      404,
      'an API process serves no runner route',
    );

    // Deleted on the API process: the runner releases the pod, and says the twin is not here any more.
    await call(api, { method: 'DELETE', url: `/sandboxes/${id}`, token: owner.key });
    await until(() => !runner.engine?.deployer.podOf(id), 'the runner to release the pod', 30_000);
    const gone = await fetch(route, { headers: admin });
    t.equal(gone.status, 503, 'no pod here any more');
    t.match(((await gone.json()) as { detail: string }).detail, 'is not running on this runner');
    t.match((await session.get(twin)).body, 'The stripe twin is not running: this sandbox is deleted.');
  },
);
