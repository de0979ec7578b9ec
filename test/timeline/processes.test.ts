/**
 * The timeline's app requests on several processes (docs/timeline.md): an API process and a runner, two
 * whole Twinboxes on one PostgreSQL schema (test/runners/pair.ts), the sandbox deployed on the runner.
 * A request to its app reaches the runner's router (through the API process's), which records it; the
 * timeline read from the API process shows it, as it does after the runner has stopped and from a new
 * API process started after that: it is in the store, not in the runner's memory.
 */
import t from 'tap';
import { randomUUID } from 'node:crypto';
import { call, createUser, startTestTwinbox, tempDir, type TestTwinbox } from '../helpers/twinbox.ts';
import { settle, until } from '../helpers/deploy.ts';
import { missingPart } from '../helpers/ci.ts';
import { postgresMissing } from '../helpers/postgres.ts';
import { requireHost } from '../security/isolation-fixtures.ts';
import { apiAndRunner } from '../runners/pair.ts';

const ADMIN_TOKEN = 'timeline-processes-admin-token-0123456789';

t.test(
  'app requests of a sandbox on a runner, in the timeline of an API process and after a restart',
  async (t) => {
    if (!requireHost(t, { bwrap: true, root: true })) return;
    const problem = await postgresMissing();
    if (problem) return missingPart(t, problem);
    const { api, runner } = await apiAndRunner(t, { adminToken: ADMIN_TOKEN, runnerId: 'runner-timeline' });
    const owner = await createUser(api);
    const created = await call(api, {
      method: 'POST',
      url: '/sandboxes',
      token: owner.key,
      payload: { repo: 'octocat/shop', branch: 'main' },
    });
    t.equal(created.status, 201);
    const id = created.body.sandbox_id as string;
    const ready = await settle(api, owner, id, 180_000);
    t.equal(ready.status, 'ready', ready.error ?? '');
    t.ok(runner.engine?.deployer.podOf(id), 'the pod is on the runner');
    t.equal(api.engine, undefined, 'the API process has none');

    // A request to the app through the API process's router, which passes it to the runner's.
    const probe = `/probe-${randomUUID()}`;
    const answer = await fetch(`http://${id}.localhost:${api.server.info.port}${probe}?token=secret-value`);
    await answer.arrayBuffer();
    t.ok(answer.status > 0, `the app answered ${answer.status}`);

    const appRequests = async (tb: TestTwinbox) => {
      const page = await call(tb, { url: `/sandboxes/${id}/timeline?limit=500`, token: owner.key });
      t.equal(page.status, 200, `the timeline: ${page.body?.detail ?? 'served'}`);
      return (page.body.entries as any[]).filter((e) => e.kind === 'app_request' && e.path === probe);
    };
    let seen: any[] = [];
    // Written off the request path within half a second; the bound only stops a hang.
    await until(
      async () => (seen = await appRequests(api)).length > 0,
      'the request in the API timeline',
      60_000,
    );
    t.equal(seen.length, 1, 'the API process shows the request once');
    t.match(seen[0], {
      kind: 'app_request',
      source: 'app',
      method: 'GET',
      path: probe,
      status: answer.status,
      detail: { query_keys: ['token'] },
    });
    t.notMatch(JSON.stringify(seen[0]), 'secret-value', 'no query value is kept');

    // The runner stops (its memory goes); the API process still shows the request.
    await runner.stop();
    t.same(
      (await appRequests(api)).map((e) => e.id),
      [seen[0].id],
      'the API process shows it with the runner stopped',
    );

    // A new API process on the same database (nothing in its memory): still there.
    await api.stop();
    const again = await startTestTwinbox(
      t,
      {
        TWINBOX_DATABASE_URL: api.config.databaseUrl!,
        TWINBOX_ADMIN_TOKEN: ADMIN_TOKEN,
        TWINBOX_ROLE: 'api',
        TWINBOX_RUNNER_STALE_SECONDS: '3600',
      },
      { dataDir: await tempDir(t) },
    );
    const afterRestart = await appRequests(again);
    t.same(
      afterRestart.map((e) => [e.id, e.status, e.method]),
      [[seen[0].id, answer.status, 'GET']],
      'a restarted API process shows it too',
    );
  },
);
