import t from 'tap';
import { execFileSync } from 'node:child_process';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { EXIT } from '../../client/cli/exit-codes.ts';
import { startLiveTwinbox } from '../client/helpers.ts';
import { tempDir } from '../helpers/twinbox.ts';
import { cliHome, mailedCode, runCli, startCli } from './run-cli.ts';

// The committed dist/cli.js as a child process against a live Twinbox on loopback. The scripted
// deployer (test/client/helpers.ts) stands in for the deploy engine so `--wait` can reach `ready`.

// The tests below are independent (a Twinbox and a CLI home each) and mostly wait on the CLI's processes
// and the scripted deploy: two run at once.
t.jobs = 2;

t.test('create --wait, get, list, logs, delete, with human and --json output', async (t) => {
  const { baseUrl, user, deployer } = await startLiveTwinbox(t);
  deployer.delayMs = 1500;
  const home = await cliHome(t, { TWINBOX_API_URL: baseUrl, TWINBOX_API_KEY: user.key });

  const created = await runCli(home, [
    'create',
    '--repo',
    'acme/shop',
    '--branch',
    'main',
    '--twins',
    'github,stripe',
    '--env',
    'FEATURE=on',
    '--env',
    'URL=http://x/?a=b',
    '--ttl-minutes',
    '30',
    '--wait',
    '--json',
  ]);
  t.equal(created.code, 0, 'created');
  const sandbox = JSON.parse(created.stdout);
  t.equal(sandbox.status, 'ready');
  t.equal(sandbox.env_vars.URL, 'http://x/?a=b');
  t.same(Object.keys(sandbox.twins).sort(), ['github', 'stripe']);
  t.match(created.stderr, /: queued|: building/, 'progress on stderr');
  t.match(created.stderr, /: ready/);
  t.equal(
    created.stderr.split('\n').filter((l) => l.includes(': building')).length <= 1,
    true,
    'one line per change',
  );

  const shown = await runCli(home, ['get', sandbox.sandbox_id]);
  t.equal(shown.code, 0);
  t.match(shown.stdout, new RegExp(`Sandbox:\\s+${sandbox.sandbox_id}`));
  t.match(shown.stdout, /Status:\s+ready/);
  t.match(shown.stdout, new RegExp(`App:\\s+${sandbox.app_url}`));
  t.match(shown.stdout, /github\s+http:\/\/127\.0\.0\.1:41000/);
  t.notMatch(shown.stdout, sandbox.twin_admin_token, 'secrets only with --json');
  t.notMatch(shown.stdout, 'http://x/?a=b');

  const second = await runCli(home, ['create', '--repo', 'acme/shop', '--branch', 'dev']);
  t.equal(second.code, 0);
  t.match(second.stdout, /Status:\s+queued/);

  const page = await runCli(home, ['list', '--limit', '1']);
  t.equal(page.code, 0);
  t.match(page.stdout, /^ID\s+STATUS\s+REPO\s+TARGET\s+CREATED$/m);
  const cursor = /More: twinbox list --cursor (\S+)/.exec(page.stdout)?.[1];
  t.ok(cursor, 'a next-page hint');
  const next = await runCli(home, ['list', '--limit', '1', '--cursor', cursor!, '--json']);
  t.equal(
    JSON.parse(next.stdout).sandboxes[0].sandbox_id,
    sandbox.sandbox_id,
    'the cursor gives the older one',
  );
  const all = JSON.parse((await runCli(home, ['list', '--all', '--limit', '1', '--json'])).stdout);
  t.equal(all.sandboxes.length, 2);

  // The scripted deployer keeps no log: the route answers an empty one, which the CLI prints as is.
  const logs = await runCli(home, ['logs', sandbox.sandbox_id]);
  t.equal(logs.code, EXIT.ok, 'logs printed');
  t.equal(logs.stdout, '', 'an empty log');
  const unknown = await runCli(home, ['logs', '00000000-0000-4000-8000-000000000000']);
  t.equal(unknown.code, EXIT.notFound, 'an unknown sandbox');
  t.match(unknown.stderr, /^twinbox: .+\(HTTP 404/, "with the API's detail");

  const deleted = await runCli(home, ['delete', sandbox.sandbox_id]);
  t.equal(deleted.code, 0);
  t.equal(deleted.stdout, `Deleted sandbox ${sandbox.sandbox_id} (status: deleted).\n`);
  const again = JSON.parse((await runCli(home, ['get', sandbox.sandbox_id, '--json'])).stdout);
  t.equal(again.status, 'deleted');
});

t.test('create defaults repo and branch to the current git checkout', async (t) => {
  const { baseUrl, user } = await startLiveTwinbox(t, {}, false);
  const home = await cliHome(t, { TWINBOX_API_URL: baseUrl, TWINBOX_API_KEY: user.key });
  const clone = await tempDir(t, 'twinbox-clone-');
  const git = (...args: string[]) => execFileSync('git', args, { cwd: clone, stdio: 'ignore' });
  git('init', '-q');
  git('remote', 'add', 'origin', 'git@github.com:acme/shop.git');
  git('checkout', '-q', '-b', 'feature/x');
  const run = await runCli(home, ['create', '--json'], { cwd: clone });
  t.equal(run.code, 0, run.stderr);
  const sandbox = JSON.parse(run.stdout);
  t.equal(sandbox.repo, 'acme/shop');
  t.equal(sandbox.branch, 'feature/x');
});

t.test('errors: distinct exit codes and the API detail', async (t) => {
  const { baseUrl, user, deployer } = await startLiveTwinbox(t);
  const home = await cliHome(t, { TWINBOX_API_URL: baseUrl, TWINBOX_API_KEY: user.key });
  const base = ['create', '--repo', 'acme/shop', '--branch', 'main'];

  const noKey = await runCli(home, ['list'], { env: { TWINBOX_API_KEY: '' } });
  t.equal(noKey.code, EXIT.auth);
  t.match(noKey.stderr, /Not signed in: run `twinbox login`/);

  const badKey = await runCli(home, ['list'], { env: { TWINBOX_API_KEY: 'twinbox_sk_nope' } });
  t.equal(badKey.code, EXIT.auth);
  t.match(badKey.stderr, /HTTP 401.*Run `twinbox login`, or check TWINBOX_API_KEY/);

  const unknownTwin = await runCli(home, [...base, '--twins', 'nosuch', '--json']);
  t.equal(unknownTwin.code, EXIT.rejected);
  t.match(unknownTwin.stderr, /nosuch.*\(HTTP 400, unknown_twin\)/);
  const body = JSON.parse(unknownTwin.stdout);
  t.same([body.status, body.code, body.exit_code], [400, 'unknown_twin', EXIT.rejected]);

  const missing = await runCli(home, ['get', '00000000-0000-4000-8000-000000000000']);
  t.equal(missing.code, EXIT.notFound);

  const badEnv = await runCli(home, [...base, '--env', 'NOEQUALS']);
  t.equal(badEnv.code, EXIT.usage);
  t.match(badEnv.stderr, /--env number 1: expected KEY=VALUE/);
  t.equal((await runCli(home, ['frobnicate'])).code, EXIT.usage);
  t.equal((await runCli(home, ['list', '--nope'])).code, EXIT.usage);
  t.equal((await runCli(home, ['get'])).code, EXIT.usage);
  const help = await runCli(home, ['--help']);
  t.equal(help.code, EXIT.ok);
  t.match(help.stdout, /Usage: twinbox <command>/);

  deployer.hang = true;
  const slow = await runCli(home, [...base, '--wait', '--timeout-minutes', '0.02']);
  t.equal(slow.code, EXIT.timeout);
  t.match(slow.stderr, /was not ready after 1s/);

  deployer.hang = false;
  deployer.delayMs = 100;
  deployer.failWith = 'health check: nothing listening on port 3000';
  const failed = await runCli(home, [...base, '--wait']);
  t.equal(failed.code, EXIT.sandboxEnded);
  t.match(failed.stderr, /failed: health check: nothing listening on port 3000/);

  const down = await runCli(home, ['list'], { env: { TWINBOX_API_URL: 'http://127.0.0.1:1' } });
  t.equal(down.code, EXIT.unreachable);
  t.match(down.stderr, /Could not reach Twinbox at http:\/\/127\.0\.0\.1:1/);
});

t.test('login: e-mail code sign-in stores an API key (0600) that the other commands use', async (t) => {
  const { baseUrl, tb } = await startLiveTwinbox(t, {}, false);
  const probe = await fetch(`${baseUrl}/auth/email/login`, { method: 'POST' });
  if (probe.status === 404) {
    // The identity endpoints are not in this build: only the error path can be tested.
    const home = await cliHome(t, { TWINBOX_API_URL: baseUrl });
    const run = await runCli(home, ['login', '--email', 'a@example.com']);
    t.equal(run.code, EXIT.notFound);
    return;
  }
  const email = `cli-${Date.now()}@example.com`;
  await tb.accounts.create(email, 'free');
  const home = await cliHome(t, { TWINBOX_API_URL: baseUrl });
  const seen = new Set<string>();

  // Interactive: the e-mail and then the code typed at the prompts.
  const { child, done } = startCli(home, ['login']);
  child.stdin.write(`${email}\n`);
  const code = await mailedCode(tb.dataDir, email, seen);
  child.stdin.end(`${code}\n`);
  const login = await done;
  t.equal(login.code, 0, 'signed in');
  t.match(login.stderr, /E-mail: We sent a code to .+ Code: /);
  t.match(
    login.stdout,
    new RegExp(`Signed in as ${email}\\. API key twinbox_sk_\\w+\\.\\.\\. saved to ${home.configFile}`),
  );
  const config = JSON.parse(await readFile(home.configFile, 'utf8'));
  t.match(config, { api_url: baseUrl, email, api_key: /^twinbox_sk_/ });
  t.equal((await stat(home.configFile)).mode & 0o777, 0o600);
  t.equal((await stat(join(home.home, '.config', 'twinbox'))).mode & 0o777, 0o700);

  // The saved key and URL are used without any environment; TWINBOX_API_KEY overrides the file.
  const { TWINBOX_API_URL: _, ...bare } = home.env;
  const homeOnly = { ...home, env: bare };
  const listed = await runCli(homeOnly, ['list', '--json']);
  t.equal(listed.code, 0, listed.stderr);
  t.same(JSON.parse(listed.stdout).sandboxes, []);
  const overridden = await runCli(homeOnly, ['list'], { env: { TWINBOX_API_KEY: 'twinbox_sk_nope' } });
  t.equal(overridden.code, EXIT.auth);

  // Scripted: --send-code, then --code; a wrong code is an auth error. Another address each time,
  // since a second code to the same address within a minute is rate-limited (429).
  const other = `cli2-${Date.now()}@example.com`;
  await tb.accounts.create(other, 'free');
  const sent = await runCli(home, ['login', '--email', other, '--send-code']);
  t.equal(sent.code, 0, 'the code is sent');
  if (sent.code !== 0) t.comment(sent.stderr);
  const scripted = await mailedCode(tb.dataDir, other, seen);
  const wrong = await runCli(home, [
    'login',
    '--email',
    other,
    '--code',
    scripted === '000000' ? '111111' : '000000',
  ]);
  t.equal(wrong.code, EXIT.auth);
  const xdg = await tempDir(t, 'twinbox-xdg-');
  const ok = await runCli(home, ['login', '--email', other, '--code', scripted, '--json'], {
    env: { XDG_CONFIG_HOME: xdg },
  });
  t.equal(ok.code, 0, ok.stderr);
  t.equal(JSON.parse(ok.stdout).config, join(xdg, 'twinbox', 'config.json'), 'XDG_CONFIG_HOME is honoured');
  const key = JSON.parse(await readFile(join(xdg, 'twinbox', 'config.json'), 'utf8')).api_key;
  t.not(key, config.api_key, 'each login makes its own key');

  const third = `cli3-${Date.now()}@example.com`;
  await tb.accounts.create(third, 'free');
  const noCode = await runCli(home, ['login', '--email', third]);
  t.equal(noCode.code, EXIT.usage, 'stdin ended without a code');
  t.match(noCode.stderr, /No code entered/);
});
