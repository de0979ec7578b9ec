import t from 'tap';
import { EXIT } from '../../client/cli/exit-codes.ts';
import { deployingTwinbox, githubToDeployFrom, until } from '../helpers/deploy.ts';
import { createUser } from '../helpers/twinbox.ts';
import { cliHome, runCli, startCli } from './run-cli.ts';

// `twinbox logs --follow` (dist/cli.js) against a Twinbox with the real deploy engine: the app prints a
// line for each request, and the CLI must show each line once, as it comes, and stop when the sandbox ends.

const talker = {
  'package.json': JSON.stringify({ name: 'talker', private: true, scripts: { start: 'node server.js' } }),
  'server.js':
    "require('node:http').createServer((q, s) => { console.log('request ' + q.url + ' é€'); s.end('ok'); })" +
    ".listen(Number(process.env.PORT), '127.0.0.1', () => console.log('talker listening'));",
};

t.test('logs --follow prints new output as it comes, each line once, until the sandbox ends', async (t) => {
  const gh = await githubToDeployFrom(t);
  await gh.createRepo({ owner: 'octocat', name: 'talker', files: talker });
  const tb = await deployingTwinbox(t, gh);
  const user = await createUser(tb);
  const home = await cliHome(t, { TWINBOX_API_URL: tb.server.info.uri, TWINBOX_API_KEY: user.key });

  const created = await runCli(home, [
    'create',
    '--repo',
    'octocat/talker',
    '--branch',
    'main',
    '--wait',
    '--json',
  ]);
  t.equal(created.code, 0, created.stderr);
  const sandbox = JSON.parse(created.stdout);
  t.equal(sandbox.status, 'ready');

  const { child, done } = startCli(home, ['logs', sandbox.sandbox_id, '--follow']);
  t.teardown(() => child.kill());
  let seen = '';
  child.stdout.on('data', (chunk: Buffer) => (seen += chunk));
  await until(() => seen.includes('talker listening'), 'the log so far', 60_000);
  t.match(seen, /\[twinbox [^\]]+\] deploying octocat\/talker branch main/, 'it starts with the whole log');

  for (const marker of ['first', 'second', 'third']) {
    const answer = await fetch(`${sandbox.app_url}/${marker}`);
    t.equal(await answer.text(), 'ok');
    await until(() => seen.includes(`request /${marker} é€`), `the line of /${marker}`, 60_000);
  }

  const deleted = await runCli(home, ['delete', sandbox.sandbox_id]);
  t.equal(deleted.code, 0, deleted.stderr);
  const run = await done;
  t.equal(run.code, EXIT.ok, 'following ends by itself when the sandbox has ended');
  t.match(run.stderr, `[twinbox] sandbox ${sandbox.sandbox_id} was deleted: the log is complete.`);
  for (const marker of ['first', 'second', 'third'])
    t.equal(run.stdout.split(`request /${marker} é€\n`).length - 1, 1, `/${marker} printed once`);
  t.equal(run.stdout.split('talker listening').length - 1, 1, 'nothing printed twice');
  const whole = await runCli(home, ['logs', sandbox.sandbox_id]);
  t.equal(run.stdout, whole.stdout, 'followed to the end, it printed the whole log, byte for byte');

  // An ended sandbox: the whole log, then it stops at once.
  const again = await runCli(home, ['logs', sandbox.sandbox_id, '-f', '--json']);
  t.equal(again.code, 0, again.stderr);
  const lines = again.stdout
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line));
  t.equal(lines.at(-1).complete, true);
  t.match(lines.map((l) => l.text).join(''), 'request /third é€');

  const missing = await runCli(home, ['logs', '00000000-0000-4000-8000-000000000000', '--follow']);
  t.equal(missing.code, EXIT.notFound);
});
