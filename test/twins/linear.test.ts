import t, { type Test } from 'tap';
import { LinearClient, type Issue } from '@linear/sdk';
import { LinearWebhookClient } from '@linear/sdk/webhooks';
import { TwinAdminClient } from '../../server/twins/kit/admin-client.ts';
import { TwinHost } from '../../server/twins/runtime/host.ts';
import { PRESETS } from '../../server/scenarios/presets.ts';
import { tempDir, tempHost, webhookReceiver } from './helpers.ts';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { readVendorSchemaJson } from './vendor-schema-dir.ts';
import { checkLinearAnswer, checkLinearFetch, checkedOperations } from './linear-schema.ts';
import { twinFactories } from '../../server/twins/registry.ts';

// Every GraphQL answer in this file is checked against Linear's own schema (issue 13).
checkLinearFetch(t);

const seed = {
  organization: { name: 'Acme', url_key: 'acme' },
  users: [
    { email: 'ada@acme.dev', name: 'Ada Lovelace', admin: true },
    { email: 'grace@acme.dev', name: 'Grace Hopper' },
  ],
  teams: [{ key: 'WEB', name: 'Web' }],
  labels: [{ name: 'Regression', color: '#d92d20', team: 'WEB' }],
  issues: [
    {
      team: 'WEB',
      title: 'Checkout button does nothing',
      state: 'Todo',
      assignee: 'grace@acme.dev',
      labels: ['Regression'],
      priority: 2,
    },
  ],
  comments: [{ issue: 'WEB-1', body: 'Seen on Safari only', user: 'ada@acme.dev' }],
};

/** @linear/sdk as an app builds it from the twin's variables: the key, and LINEAR_API_URL as `apiUrl`. */
/** The @linear/sdk error type a call fails with (`AuthenticationError`, `Ratelimited`, ...). */
async function errorType(call: Promise<unknown>): Promise<string | undefined> {
  try {
    await call;
    return 'resolved';
  } catch (error) {
    return (error as { type?: string }).type;
  }
}

const linearClient = (env: Record<string, string>, apiKey = env.LINEAR_API_KEY!) =>
  new LinearClient({ apiKey, apiUrl: env.LINEAR_API_URL });

/**
 * An app's flow with @linear/sdk, whichever major built `linear`: the viewer and organization, a team's
 * workflow states and issues with their assignee, state, labels and comments, an issue created, moved to
 * Done and commented on, a label created.
 */
async function issueFlow(t: Test, linear: LinearClient): Promise<{ issue: Issue }> {
  const viewer = await linear.viewer;
  t.equal(viewer.email, 'ada@acme.dev', "the key is the seeded admin's");
  t.equal((await linear.organization).name, 'Acme');

  const teams = await linear.teams();
  const web = teams.nodes.find((team) => team.key === 'WEB')!;
  t.ok(web, 'the seeded team');
  const states = await web.states();
  t.ok(
    ['Backlog', 'Todo', 'In Progress', 'Done'].every((name) => states.nodes.some((s) => s.name === name)),
    'a team gets the default workflow',
  );

  const seeded = (await web.issues()).nodes.find((i) => i.identifier === 'WEB-1')!;
  t.equal(seeded.title, 'Checkout button does nothing');
  t.equal((await seeded.assignee)?.email, 'grace@acme.dev');
  t.equal((await seeded.state)?.name, 'Todo');
  t.same(
    (await seeded.labels()).nodes.map((l) => l.name),
    ['Regression'],
  );
  t.same(
    (await seeded.comments()).nodes.map((c) => c.body),
    ['Seen on Safari only'],
  );

  const grace = (await linear.users()).nodes.find((u) => u.email === 'grace@acme.dev')!;
  const created = await linear.createIssue({
    teamId: web.id,
    title: 'Payment page times out',
    description: 'Stripe redirect never returns',
    assigneeId: grace.id,
    priority: 1,
  });
  t.equal(created.success, true);
  const issue = (await created.issue)!;
  t.equal(issue.identifier, 'WEB-2');
  t.equal(issue.priorityLabel, 'Urgent');

  const done = states.nodes.find((s) => s.name === 'Done')!;
  // The same request again after the change (the twin keeps a request's shaped answer while the engine's
  // answer to it stays the same): it must answer the new state.
  t.not((await (await linear.issue(issue.id)).state)?.name, 'Done');
  t.equal((await linear.updateIssue(issue.id, { stateId: done.id })).success, true);
  t.equal((await (await linear.issue(issue.id)).state)?.name, 'Done');
  const comment = await linear.createComment({ issueId: issue.id, body: 'Fixed in #42' });
  t.equal((await comment.comment)?.body, 'Fixed in #42');
  const label = await linear.createIssueLabel({ name: 'Payments', teamId: web.id, color: '#2563eb' });
  t.equal(label.success, true);
  return { issue };
}

t.test('linear twin: issues, comments, labels and signed webhooks through @linear/sdk', async (t) => {
  const { host } = await tempHost(t);
  const receiver = await webhookReceiver(t);
  const entry = (
    await host.start('sb', ['linear'], {
      adminToken: 'admin',
      seeds: { linear: { ...seed, webhook: { url: receiver.url } } },
    })
  ).linear!;
  t.match(entry.env_vars.LINEAR_API_KEY, /^lin_api_/);
  t.equal(entry.env_vars.LINEAR_API_URL, `${entry.base_url}/graphql`);
  const linear = linearClient(entry.env_vars);

  const { issue } = await issueFlow(t, linear);

  // The signed webhook, verified the way @linear/sdk documents it.
  const event = await receiver.next(10_000);
  const webhooks = new LinearWebhookClient(entry.env_vars.LINEAR_WEBHOOK_SECRET!);
  const payload = webhooks.parseData(Buffer.from(event.body), String(event.headers['linear-signature'])) as {
    type: string;
    action: string;
    data: { id: string; title: string };
  };
  t.match(payload, {
    type: 'Issue',
    action: 'create',
    data: { id: issue.id, title: 'Payment page times out' },
  });
  t.equal(event.headers['linear-event'], 'Issue');
  t.throws(
    () =>
      webhooks.parseData(
        Buffer.from(event.body.replace('Payment page', 'Refund page')),
        String(event.headers['linear-signature']),
      ),
    'a changed body does not verify',
  );

  // The request log keeps the calls and hides the key.
  const admin = new TwinAdminClient(entry.admin_url, 'admin');
  const log = JSON.stringify(await admin.requests());
  t.match(log, /Payment page times out/);
  t.notOk(log.includes(entry.env_vars.LINEAR_API_KEY!), 'the API key is redacted');
  t.notOk(log.includes(entry.env_vars.LINEAR_WEBHOOK_SECRET!), 'the webhook secret is redacted');
  const deliveries = await admin.deliveries();
  t.ok(deliveries.some((d) => d.event === 'Issue' && d.success));
  t.ok(deliveries.some((d) => d.event === 'Comment' && d.success));

  await admin.addFault({ rate_limit: true, count: 1 });
  t.equal(await errorType(linear.viewer), 'Ratelimited');
});

t.test('linear twin: unknown, missing and published keys fail as Linear fails them', async (t) => {
  const { host } = await tempHost(t);
  const entry = (await host.start('sb', ['linear'], { adminToken: 'admin' })).linear!;
  for (const key of ['lin_api_0000000000000000000000000000000000000000', 'lin_test_admin']) {
    t.equal(await errorType(linearClient(entry.env_vars, key).viewer), 'AuthenticationError', key);
  }
  const anonymous = await fetch(entry.env_vars.LINEAR_API_URL!, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query: '{ viewer { id } }' }),
  });
  t.equal(anonymous.status, 400);
  t.match(await anonymous.json(), { errors: [{ extensions: { type: 'authentication error' } }] });
  const inspector = await fetch(`${entry.base_url}/`, {
    headers: { authorization: entry.env_vars.LINEAR_API_KEY! },
  });
  t.equal(inspector.status, 404, "the engine's inspector (which shows tokens) is not served");
  await inspector.body?.cancel();
  const malformed = await fetch(entry.env_vars.LINEAR_API_URL!, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: entry.env_vars.LINEAR_API_KEY! },
    body: '{"query": ',
  });
  t.equal(malformed.status, 400);
  t.match(await malformed.json(), { errors: [{ extensions: { type: 'invalid input' } }] });
});

t.test('linear twin: state survives a restart; reset returns to the seed; POST /seed adds', async (t) => {
  const dataDir = await tempDir(t);
  const first = new TwinHost({ factories: twinFactories, dataDir, publicHost: '127.0.0.1' });
  const before = (await first.start('sb', ['linear'], { adminToken: 'admin', seeds: { linear: seed } }))
    .linear!;
  const web = (await linearClient(before.env_vars).teams()).nodes.find((team) => team.key === 'WEB')!;
  const kept = await (
    await linearClient(before.env_vars).createIssue({ teamId: web.id, title: 'kept' })
  ).issue;
  await first.close();

  const second = new TwinHost({ factories: twinFactories, dataDir, publicHost: '127.0.0.1' });
  t.teardown(() => second.close());
  await second.restore(['sb']);
  const after = second.get('sb')!.linear!;
  t.equal(after.env_vars.LINEAR_API_KEY, before.env_vars.LINEAR_API_KEY, 'credentials survive');
  t.equal(after.env_vars.LINEAR_WEBHOOK_SECRET, before.env_vars.LINEAR_WEBHOOK_SECRET);
  const linear = linearClient(after.env_vars);
  t.equal((await linear.issue(kept!.id)).title, 'kept', 'the created issue survives');
  t.equal(await errorType(linearClient(after.env_vars, 'lin_test_admin').viewer), 'AuthenticationError');

  const admin = new TwinAdminClient(after.admin_url, 'admin');
  await admin.seed({ issues: [{ team: 'WEB', title: 'seeded later' }] });
  const titles = async () => (await linear.issues()).nodes.map((i) => i.title).sort();
  t.ok((await titles()).includes('seeded later'));
  await admin.reset();
  const afterReset = await titles();
  t.notOk(afterReset.includes('kept'), 'reset drops what the app made');
  t.notOk(afterReset.includes('seeded later'));
  t.ok(afterReset.includes('Checkout button does nothing'), 'reset keeps the start seed');
  t.equal((await linear.viewer).email, 'ada@acme.dev', 'the key still works after reset');
  t.equal(await errorType(linearClient(after.env_vars, 'lin_test_admin').viewer), 'AuthenticationError');

  await t.rejects(admin.seed({ teams: [{ key: 'lower', name: 'x' }] }), /linear seed: "teams\[0\]\.key"/);
});

t.test('linear twin: its presets seed what they promise', async (t) => {
  const presets = PRESETS.filter((p) => p.twins.includes('linear'));
  t.ok(presets.length >= 1, 'at least one preset uses linear');
  for (const preset of presets) {
    const { host } = await tempHost(t);
    const entry = (
      await host.start(preset.id, ['linear'], { adminToken: 'admin', seeds: { linear: preset.seed.linear } })
    ).linear!;
    const linear = linearClient(entry.env_vars);
    const promised = preset.promises.linear!;
    if (promised.teams !== undefined) t.equal((await linear.teams()).nodes.length, promised.teams);
    if (promised.issues !== undefined) t.equal((await linear.issues()).nodes.length, promised.issues);
  }
});

t.test("linear twin: the schema check refuses an answer Linear's schema does not allow", async (t) => {
  const { host } = await tempHost(t);
  const entry = (await host.start('sb', ['linear'], { adminToken: 'admin', seeds: { linear: seed } }))
    .linear!;
  const query = 'query Me { viewer { id email active avatarBackgroundColor } }';
  const { data } = await linearClient(entry.env_vars).client.rawRequest<
    { viewer: Record<string, unknown> },
    Record<string, never>
  >(query);
  t.same(await checkLinearAnswer({ query }, data), [], "the twin's answer conforms");
  const without = structuredClone(data!);
  delete without.viewer.id;
  t.match(await checkLinearAnswer({ query }, without), [/viewer\.id: .*non-nullable field User\.id/]);
  const wrongType = structuredClone(data!);
  wrongType.viewer.active = 'yes';
  t.match(await checkLinearAnswer({ query }, wrongType), [/viewer\.active: .*Boolean/]);
  const numberForString = structuredClone(data!);
  numberForString.viewer.email = 42;
  t.match(await checkLinearAnswer({ query }, numberForString), [/viewer\.email: String expected/]);
  // Through the SDK: an answer that lost a non-null field fails the call.
  const sent = globalThis.fetch;
  checkLinearFetch(t, async (input, init) => {
    const response = await sent(input, init);
    const answer = (await response.json()) as { data: { viewer: Record<string, unknown> } };
    delete answer.data.viewer.id;
    return new Response(JSON.stringify(answer), { status: response.status, headers: response.headers });
  });
  await t.rejects(linearClient(entry.env_vars).viewer, /Linear schema: .*non-nullable field User\.id/);
  globalThis.fetch = sent;
  t.match(await checkLinearAnswer({ query: '{ viewer { nickname } }' }, data), [
    /query: Cannot query field "nickname"/,
  ]);
});

t.test('linear twin: every root field the twin serves was checked against the schema', async (t) => {
  const source = readVendorSchemaJson<{ operations: string[] }>('linear', 'source.json');
  const catalog = JSON.parse(
    readFileSync(new URL('../../server/twins/vendors/linear/catalog.json', import.meta.url), 'utf8'),
  ) as { operations: string[] };
  t.same([...checkedOperations].sort(), [...source.operations].sort());
  t.same([...catalog.operations].sort(), [...source.operations].sort(), 'the catalog names the same ones');
});

t.test(
  'linear twin: the schema it shapes answers to is what generate.ts derives from @linear/sdk',
  async (t) => {
    // The twin's run-time schema is committed (no fetched file, no devDependency at run time); regenerated from
    // the installed SDK it must come out the same, or an SDK upgrade was not followed by generate.ts.
    const dir = await tempDir(t);
    const out = join(dir, 'schema.graphql');
    const generator = fileURLToPath(
      new URL('../../server/twins/vendors/linear/sdk-schema/generate.ts', import.meta.url),
    );
    await promisify(execFile)(process.execPath, ['--import=tsx', generator, out], { timeout: 240_000 });
    const committed = fileURLToPath(
      new URL('../../server/twins/vendors/linear/sdk-schema/schema.graphql', import.meta.url),
    );
    t.equal(readFileSync(out, 'utf8'), readFileSync(committed, 'utf8'));
  },
);

t.test('linear twin: the same issue flow with @linear/sdk 97', async (t) => {
  const { host } = await tempHost(t);
  const env = (await host.start('sb', ['linear'], { adminToken: 'admin', seeds: { linear: seed } })).linear!
    .env_vars;
  const { LinearClient: LinearClientV97 } = await import('linear-sdk-v97');
  // Version 97 has the same calls; its declarations are a copy of their own, which TypeScript keeps apart.
  const linear = new LinearClientV97({ apiKey: env.LINEAR_API_KEY, apiUrl: env.LINEAR_API_URL });
  const { issue } = await issueFlow(t, linear as unknown as LinearClient);
  t.equal(issue.identifier, 'WEB-2');
  const bogus = new LinearClientV97({
    apiKey: 'lin_api_0000000000000000000000000000000000000000',
    apiUrl: env.LINEAR_API_URL,
  });
  t.equal(await errorType(bogus.viewer), 'AuthenticationError');
});
