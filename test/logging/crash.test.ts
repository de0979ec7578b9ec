import t from 'tap';
import type { Deployer } from '../../server/sandboxes/deployer.ts';
import { call, createUser, startTestTwinbox, type TestTwinbox } from '../helpers/twinbox.ts';
import { deployingTwinbox, deploySandbox, githubToDeployFrom, settle, until } from '../helpers/deploy.ts';
import { requireHost } from '../security/isolation-fixtures.ts';

interface Entry {
  level: number;
  msg: string;
  sandbox_id?: string;
  err?: { type?: string; stack?: string };
  responseTime?: number;
}

const entries = (tb: TestTwinbox): Entry[] => tb.logs.lines.map((line) => JSON.parse(line) as Entry);

/** Twinbox's log lines about one sandbox, leaving out the lines of API requests that name it. */
const about = (tb: TestTwinbox, id: string): Entry[] =>
  entries(tb).filter((e) => e.responseTime === undefined && (e.sandbox_id === id || e.msg.includes(id)));

/** A stack frame as Node prints it, or a serialized error's stack field. */
const STACK = /\n\s+at .+:\d+:\d+|"stack"/;

t.test("a crashing app is one line in Twinbox's log, pointing at its own log", async (t) => {
  // Under CI the deploy runs isolated as in production; without bubblewrap it runs in process groups.
  if (!requireHost(t, { bwrap: true })) return;
  const gh = await githubToDeployFrom(t);
  await gh.createRepo({
    owner: 'octocat',
    name: 'crashy',
    files: {
      'package.json': JSON.stringify({ name: 'crashy', private: true, scripts: { start: 'node server.js' } }),
      // An uncaught exception later: Node prints its stack to stderr and exits with code 1.
      'server.js':
        "require('node:http').createServer((q, s) => { if (q.url === '/die') setImmediate(() => { throw new Error('boom later') }); s.end('up') })" +
        '.listen(Number(process.env.PORT), "127.0.0.1");',
    },
    branches: {
      'crash-on-start': { 'server.js': "throw new Error('boom at start');" },
    },
  });
  const tb = await deployingTwinbox(t, gh);
  const user = await createUser(tb);

  // 1. The app dies before it answers: the deploy fails.
  const early = await deploySandbox(tb, user, { repo: 'octocat/crashy', branch: 'crash-on-start' });
  t.equal(early.status, 'failed');
  const earlyId = early.sandbox_id as string;
  const earlyLines = about(tb, earlyId);
  t.equal(earlyLines.length, 1, 'exactly one line about it');
  const { time, pid, hostname, ...line } = earlyLines[0] as Entry & Record<string, unknown>;
  t.ok(time && pid && hostname);
  t.same(line, {
    level: 40,
    sandbox_id: earlyId,
    msg:
      `sandbox ${earlyId} failed: App crashed on start: the app exited with code 1 before answering HTTP ` +
      `(see GET /sandboxes/${earlyId}/logs)`,
  });
  const earlyLog = await call(tb, { url: `/sandboxes/${earlyId}/logs`, token: user.key });
  t.match(earlyLog.body, 'Error: boom at start', "the app's stack is in its own log");

  // 2. A ready app that dies later.
  const ready = await deploySandbox(tb, user, { repo: 'octocat/crashy', branch: 'main' });
  t.equal(ready.status, 'ready', ready.error ?? '');
  const id = ready.sandbox_id as string;
  await fetch(`${ready.app_url}/die`).catch(() => {});
  await until(
    async () => (await call(tb, { url: `/sandboxes/${id}`, token: user.key })).body.status === 'failed',
    'the crashed sandbox to fail',
    60_000,
  );
  await until(() => about(tb, id).some((e) => e.level >= 40), 'the failure line', 30_000);
  const lines = about(tb, id);
  t.same(
    lines.map((e) => e.msg),
    [
      'app ready',
      `sandbox ${id} failed: App crashed: the app exited with code 1 (see GET /sandboxes/${id}/logs)`,
    ],
    'the ready line, then one line for the crash',
  );
  t.equal(lines[1]!.level, 40, 'a warning, not an error of Twinbox');
  t.notOk(lines[1]!.err, 'no error object');
  const log = await call(tb, { url: `/sandboxes/${id}/logs`, token: user.key });
  t.match(log.body, 'Error: boom later');
  t.match(log.body, /at Immediate\.<anonymous>/, 'the stack trace is there, in the sandbox log');

  t.notMatch(tb.logs.text(), STACK, "no stack trace anywhere in Twinbox's log");
  t.notMatch(tb.logs.text(), /boom (at start|later)/, "the app's output stays in its own log");
});

t.test('an error of Twinbox itself during a deploy keeps its stack', async (t) => {
  const broken: Deployer = {
    async deploy(sandbox) {
      // A programming error of the kind only Twinbox's code can make.
      return (undefined as unknown as { twins: never }).twins[sandbox.id as never];
    },
    async teardown() {},
  };
  const tb = await startTestTwinbox(t, {}, { deployer: broken });
  const user = await createUser(tb);
  const { body } = await call(tb, {
    method: 'POST',
    url: '/sandboxes',
    token: user.key,
    payload: { repo: 'octocat/any', branch: 'main' },
  });
  const sandbox = await settle(tb, user, body.sandbox_id);
  t.equal(sandbox.status, 'failed');
  const lines = about(tb, sandbox.sandbox_id);
  t.equal(lines.length, 2);
  t.equal(lines[0]!.level, 50);
  t.equal(lines[0]!.msg, 'deploy failed: an error in Twinbox');
  t.equal(lines[0]!.err?.type, 'TypeError');
  t.match(lines[0]!.err?.stack, /TypeError: .*\n\s+at .*crash\.test\.ts:\d+:\d+/, 'where it happened');
  t.equal(lines[1]!.level, 40);
  t.match(lines[1]!.msg, `sandbox ${sandbox.sandbox_id} failed: Cannot read properties of undefined`);
});
