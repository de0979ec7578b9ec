import t from 'tap';
import { readdirSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { SandboxLogs } from '../../server/deploy/confinement/logs.ts';
import { call, createSandbox, createUser, startTestTwinbox, tempDir } from '../helpers/twinbox.ts';

// Offsets of GET /sandboxes/{id}/logs?offset=N (docs/api.md, "Logs"): the log store's semantics first,
// then the route over hapi.

const line = (n: number) => `line ${String(n).padStart(4, '0')}\n`; // 10 bytes

t.test('offsets: what came after N, the oldest kept byte when N is gone, nothing past the end', async (t) => {
  const logs = new SandboxLogs(await tempDir(t), 64, 1024 * 1024);
  const id = randomUUID();
  const sink = await logs.open(id);
  sink.write('hello\n');
  t.same(await logs.slice(id, 0), { text: 'hello\n', start: 0, end: 6, open: true });
  t.same(await logs.slice(id, 6), { text: '', start: 6, end: 6, open: true }, 'nothing new');
  sink.write('world\n');
  t.same(await logs.slice(id, 6), { text: 'world\n', start: 6, end: 12, open: true }, 'only the new bytes');

  for (let n = 0; n < 20; n++) sink.write(line(n)); // 212 bytes in all, 64 kept in memory
  const behind = await logs.slice(id, 6);
  t.equal(behind.start, 212 - 64, 'a reader that fell behind resumes at the oldest kept byte');
  t.equal(behind.end, 212);
  t.equal(behind.text, '013\n' + [14, 15, 16, 17, 18, 19].map(line).join(''), 'the last 64 bytes');
  t.same(await logs.slice(id, 10_000), { text: '', start: 212, end: 212, open: true }, 'past the end');
  t.equal(await logs.read(id), behind.text, 'the plain read is the slice from 0');
  t.same(await logs.slice(id, 0), behind);
});

t.test('offsets never split a UTF-8 character', async (t) => {
  const logs = new SandboxLogs(await tempDir(t), 1024);
  const id = randomUUID();
  const sink = await logs.open(id);
  const euro = Buffer.from('€'); // 3 bytes
  sink.write(Buffer.concat([Buffer.from('a'), euro.subarray(0, 2)]));
  t.same(await logs.slice(id, 0), { text: 'a', start: 0, end: 1, open: true }, 'the half character waits');
  sink.write(Buffer.concat([euro.subarray(2), Buffer.from('b')]));
  t.same(await logs.slice(id, 1), { text: '€b', start: 1, end: 5, open: true });
  t.same(
    await logs.slice(id, 2),
    { text: 'b', start: 4, end: 5, open: true },
    'from mid-character: the next one',
  );
});

t.test('offsets survive rotation, the sandbox ending, a reopen and a restart', async (t) => {
  const dir = await tempDir(t);
  const logs = new SandboxLogs(dir, 100, 200); // files rotate at 100 bytes; 100 bytes kept for reading
  const id = randomUUID();
  const sink = await logs.open(id);
  for (let n = 0; n < 50; n++) sink.write(line(n)); // 500 bytes: rotated 4 times, the oldest dropped
  const live = await logs.slice(id, 470);
  t.same(live, { text: line(47) + line(48) + line(49), start: 470, end: 500, open: true });
  t.equal(readdirSync(dir).length, 2, '<id>.log and <id>.log.1, nothing else on disk');

  await logs.close(id);
  t.same(
    await logs.slice(id, 470),
    { ...live, open: false },
    'after the sink closes, the files answer with the same offsets',
  );
  const oldest = await logs.slice(id, 0);
  t.equal(oldest.end, 500);
  t.equal(oldest.start, 400, 'the last 100 bytes are kept');
  t.equal(oldest.text, [40, 41, 42, 43, 44, 45, 46, 47, 48, 49].map(line).join(''));

  const reopened = await logs.open(id);
  reopened.write(line(50));
  t.same(
    await logs.slice(id, 500),
    { text: line(50), start: 500, end: 510, open: true },
    'a reopened log goes on',
  );
  await logs.close(id);

  // A restarted Twinbox no longer knows how much rotation dropped: the files count from 0.
  const restarted = new SandboxLogs(dir, 100, 200);
  const after = await restarted.slice(id, 0);
  t.equal(after.text.slice(-10), line(50));
  t.equal(after.end, after.start + Buffer.byteLength(after.text));
  t.ok(after.end < 510, `offsets start over from what the files hold (${after.end})`);
  t.same(await restarted.slice(id, 510), { text: '', start: after.end, end: after.end, open: false });
  t.same(await restarted.slice(randomUUID(), 5), { text: '', start: 0, end: 0, open: false }, 'never logged');
});

t.test(
  'GET /sandboxes/{id}/logs?offset: headers, 400 for a bad offset, 404 for another account',
  async (t) => {
    const tb = await startTestTwinbox(t);
    const user = await createUser(tb);
    const other = await createUser(tb);
    const id = (await createSandbox(tb, user.key)).body.sandbox_id;

    // Without the deploy engine nothing is ever logged: an empty log that is complete once the sandbox ends.
    const empty = await call(tb, { url: `/sandboxes/${id}/logs?offset=0`, token: user.key });
    t.equal(empty.status, 200);
    t.equal(empty.body, '');
    t.match(empty.headers, {
      'x-log-start': '0',
      'x-log-offset': '0',
      'x-log-complete': 'false',
      'cache-control': 'no-store',
    });
    t.equal((await call(tb, { url: `/sandboxes/${id}/logs`, token: user.key })).headers['x-log-offset'], '0');
    for (const bad of ['-1', 'abc', '1.5', '', '9007199254740992']) {
      const res = await call(tb, { url: `/sandboxes/${id}/logs?offset=${bad}`, token: user.key });
      t.equal(res.status, 400, `offset=${bad}`);
      t.match(res.body.detail, /offset/, `offset=${bad}: ${res.body.detail}`);
    }
    t.equal((await call(tb, { url: `/sandboxes/${id}/logs?offset=0`, token: other.key })).status, 404);
    await call(tb, { method: 'DELETE', url: `/sandboxes/${id}`, token: user.key });
    const ended = await call(tb, { url: `/sandboxes/${id}/logs?offset=0`, token: user.key });
    t.equal(ended.headers['x-log-complete'], 'true', 'a deleted sandbox writes nothing more');

    const doc = (await call(tb, { url: '/openapi.json' })).body;
    const operation = doc.paths['/sandboxes/{sandbox_id}/logs'].get;
    t.match(
      operation.parameters.find((p: { name: string }) => p.name === 'offset'),
      { in: 'query', required: false, schema: { type: 'integer', minimum: 0 } },
    );
    t.same(Object.keys(operation.responses['200'].headers).sort(), [
      'X-Log-Complete',
      'X-Log-Offset',
      'X-Log-Start',
    ]);
    t.ok(operation.responses['200'].content['text/plain'], 'documented as text');
    t.ok(operation.responses['400']);
  },
);

t.test('DELETE /api-keys/current: a key revokes itself; a session is told to use the id', async (t) => {
  const tb = await startTestTwinbox(t);
  const user = await createUser(tb);
  const spare = await tb.apiKeys.issue(user.id, 'spare');
  const revoked = await call(tb, { method: 'DELETE', url: '/api-keys/current', token: user.key });
  t.equal(revoked.status, 200);
  t.match(revoked.body, { id: user.keyId, revoked_at: /^\d{4}-/ });
  t.notOk('key' in revoked.body, 'the secret is never sent back');
  t.equal((await call(tb, { url: '/sandboxes', token: user.key })).status, 401, 'the key stops working');
  t.equal(
    (await call(tb, { url: '/sandboxes', token: spare.key })).status,
    200,
    "the account's other keys do not",
  );
  const again = await call(tb, { method: 'DELETE', url: '/api-keys/current', token: user.key });
  t.equal(again.status, 401);

  const session = await tb.sessions.issue(user.id);
  const bySession = await call(tb, { method: 'DELETE', url: '/api-keys/current', token: session });
  t.equal(bySession.status, 400);
  t.match(bySession.body.detail, /DELETE \/api-keys\/\{id\}/);
  t.equal((await call(tb, { method: 'DELETE', url: '/api-keys/current' })).status, 401);
});
