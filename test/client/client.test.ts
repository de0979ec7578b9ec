import t from 'tap';
import { SandboxWaitError, TwinboxApiError, TwinboxClient, type Sandbox } from '../../client/client.ts';
import { startLiveTwinbox } from './helpers.ts';

// Every test talks to a live Twinbox over real HTTP on loopback, with the client as the only caller.

t.test('create, get, list with cursor, delete', async (t) => {
  const { baseUrl, user } = await startLiveTwinbox(t, {}, false);
  const client = new TwinboxClient({ baseUrl: `${baseUrl}/`, apiKey: user.key });
  const created = await client.createSandbox({
    repo: 'acme/shop',
    branch: 'main',
    ttl_minutes: 30,
    env: { A: '1' },
  });
  t.equal(created.status, 'queued');
  t.equal(created.app_url, null);
  t.same(created.twins, {});
  t.equal(created.ttl_minutes, 30);
  t.same(await client.getSandbox(created.sandbox_id), created);

  const ids = [created.sandbox_id];
  for (let i = 0; i < 4; i++)
    ids.push((await client.createSandbox({ repo: 'acme/shop', branch: `b${i}` })).sandbox_id);
  const first = await client.listSandboxes({ limit: 2 });
  t.equal(first.sandboxes.length, 2);
  t.type(first.next_cursor, 'string');
  const second = await client.listSandboxes({ limit: 2, cursor: first.next_cursor! });
  t.notSame(second.sandboxes[0]!.sandbox_id, first.sandboxes[0]!.sandbox_id);
  const all: Sandbox[] = [];
  for await (const sandbox of client.allSandboxes({ limit: 2, repo: 'acme/shop' })) all.push(sandbox);
  t.same(all.map((s) => s.sandbox_id).sort(), [...ids].sort(), 'allSandboxes follows every cursor');

  const deleted = await client.deleteSandbox(created.sandbox_id);
  t.equal(deleted.status, 'deleted');
  t.equal((await client.listSandboxes({ status: 'deleted' })).sandboxes.length, 1);
});

t.test('errors carry status, code and detail', async (t) => {
  const { baseUrl, user } = await startLiveTwinbox(t, {}, false);
  const client = new TwinboxClient({ baseUrl, apiKey: user.key });

  const unknownTwin = await client
    .createSandbox({ repo: 'a/b', branch: 'm', twins: ['nope'] })
    .catch((e) => e);
  t.type(unknownTwin, TwinboxApiError);
  t.equal(unknownTwin.status, 400);
  t.equal(unknownTwin.code, 'unknown_twin');
  t.match(unknownTwin.detail, /nope/);
  t.match(unknownTwin.message, /\(HTTP 400, unknown_twin\)$/);

  const tooLong = await client.createSandbox({ repo: 'a/b', branch: 'm', ttl_minutes: 300 }).catch((e) => e);
  t.equal(tooLong.status, 403);
  t.equal(tooLong.code, 'plan_limit_exceeded');

  const missing = await client.getSandbox('00000000-0000-4000-8000-000000000000').catch((e) => e);
  t.equal(missing.status, 404);
  t.ok(missing.detail);

  const badKey = new TwinboxClient({ baseUrl, apiKey: 'twinbox_sk_nope' });
  const unauthorized = await badKey.listSandboxes().catch((e) => e);
  t.equal(unauthorized.status, 401);
  t.ok(unauthorized.detail);

  const nowhere = new TwinboxClient({ baseUrl: 'http://127.0.0.1:1', apiKey: user.key });
  const network = await nowhere.listSandboxes().catch((e) => e);
  t.equal(network.status, 0);
  t.equal(network.code, 'network_error');
  t.match(network.detail, /Could not reach Twinbox at http:\/\/127\.0\.0\.1:1/);
});

t.test('logs: text when the route exists, else a 404 with detail', async (t) => {
  const { baseUrl, user } = await startLiveTwinbox(t, {}, false);
  const client = new TwinboxClient({ baseUrl, apiKey: user.key });
  const { sandbox_id } = await client.createSandbox({ repo: 'a/b', branch: 'm' });
  // The logs route belongs to the deploy engine; the client must handle both its presence and absence.
  const logs = await client.sandboxLogs(sandbox_id).catch((e) => e);
  if (logs instanceof TwinboxApiError) {
    t.equal(logs.status, 404);
    t.ok(logs.detail);
  } else t.type(logs, 'string');
  const other = await client.sandboxLogs('00000000-0000-4000-8000-000000000000').catch((e) => e);
  t.equal(other.status, 404);
  t.ok(other.detail);
});

t.test('waitUntilReady: ready, with progress and backoff', async (t) => {
  const { baseUrl, user, deployer } = await startLiveTwinbox(t);
  deployer.delayMs = 1500;
  const client = new TwinboxClient({ baseUrl, apiKey: user.key });
  const { sandbox_id } = await client.createSandbox({ repo: 'a/b', branch: 'm', twins: ['github'] });
  const seen: { status: string; elapsed: number }[] = [];
  const ready = await client.waitUntilReady(sandbox_id, {
    timeoutMs: 20_000,
    initialDelayMs: 100,
    onProgress: (s, elapsed) => seen.push({ status: s.status, elapsed }),
  });
  t.equal(ready.status, 'ready');
  t.match(ready.app_url, /^http:\/\/127\.0\.0\.1:40999\//);
  t.ok(ready.twins.github?.base_url);
  t.equal(seen.at(-1)!.status, 'ready');
  t.ok(seen.length >= 3 && seen.length <= 6, `backoff keeps polls few (${seen.length})`);
});

t.test('waitUntilReady: failed, deleted and timeout end the wait with the reason', async (t) => {
  const { baseUrl, user, deployer } = await startLiveTwinbox(t);
  const client = new TwinboxClient({ baseUrl, apiKey: user.key });

  deployer.delayMs = 200;
  deployer.failWith = 'npm run build exited with code 1';
  const failing = await client.createSandbox({ repo: 'a/b', branch: 'm' });
  const failed = await client
    .waitUntilReady(failing.sandbox_id, { timeoutMs: 10_000, initialDelayMs: 100 })
    .catch((e) => e);
  t.type(failed, SandboxWaitError);
  t.equal(failed.reason, 'failed');
  t.equal(failed.sandbox.status, 'failed');
  t.match(failed.message, /failed: npm run build exited with code 1/);

  deployer.failWith = undefined;
  deployer.hang = true;
  const slow = await client.createSandbox({ repo: 'a/b', branch: 'm' });
  const started = Date.now();
  const timedOut = await client
    .waitUntilReady(slow.sandbox_id, { timeoutMs: 1200, initialDelayMs: 100 })
    .catch((e) => e);
  t.equal(timedOut.reason, 'timeout');
  t.ok(Date.now() - started < 3000, 'the timeout is kept, not overshot by a backoff delay');
  t.match(timedOut.message, /not ready after 1s \(status: (queued|building)\)/);

  const waiting = client
    .waitUntilReady(slow.sandbox_id, { timeoutMs: 10_000, initialDelayMs: 100 })
    .catch((e) => e);
  await client.deleteSandbox(slow.sandbox_id);
  const deleted = await waiting;
  t.equal(deleted.reason, 'deleted');
});

t.test('me, log offsets, following until the sandbox ends, and a key revoking itself', async (t) => {
  const { baseUrl, user } = await startLiveTwinbox(t, {}, false);
  const client = new TwinboxClient({ baseUrl, apiKey: user.key });
  const me = await client.me();
  t.match(me, {
    account: { id: user.id, email: user.email, plan: 'free' },
    identities: [],
    token_type: 'api_key',
  });

  // Without the deploy engine nothing is logged: every chunk is empty, until the sandbox ends.
  const sandbox = await client.createSandbox({ repo: 'a/b', branch: 'm' });
  t.same(await client.sandboxLogsFrom(sandbox.sandbox_id), { text: '', start: 0, next: 0, complete: false });
  t.same(await client.sandboxLogsFrom(sandbox.sandbox_id, 0), {
    text: '',
    start: 0,
    next: 0,
    complete: false,
  });
  const chunks = [];
  for await (const chunk of client.followSandboxLogs(sandbox.sandbox_id, { intervalMs: 50 })) {
    chunks.push(chunk);
    if (chunks.length === 2) await client.deleteSandbox(sandbox.sandbox_id);
  }
  t.ok(chunks.length >= 3, `polled until the end (${chunks.length} chunks)`);
  t.same(
    chunks.at(-1),
    { text: '', start: 0, next: 0, complete: true, gap: 0 },
    'the last one says complete',
  );
  const bad = await client.sandboxLogsFrom(sandbox.sandbox_id, -1).catch((e) => e);
  t.type(bad, TwinboxApiError);
  t.equal(bad.status, 400);

  const revoked = await client.revokeCurrentApiKey();
  t.equal(revoked.id, user.keyId);
  t.type(revoked.revoked_at, 'string');
  const after = await client.me().catch((e) => e);
  t.equal(after.status, 401, 'the key is revoked');
});
