import t from 'tap';
import { execFile, execFileSync } from 'node:child_process';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { EXIT } from '../../client/cli/exit-codes.ts';
import { githubRepositoryOf } from '../../client/cli/git.ts';
import { startLiveTwinbox } from '../client/helpers.ts';
import { until } from '../helpers/deploy.ts';
import { REPO_ROOT } from '../helpers/process.ts';
import { createUser, tempDir } from '../helpers/twinbox.ts';
import { cliHome, mailedCode, runCli } from './run-cli.ts';

// The committed dist/cli.js as a child process against a live Twinbox on loopback (the scripted deployer
// of test/client/helpers.ts stands in for the deploy engine).

const VERSION = JSON.parse(await readFile(join(REPO_ROOT, 'package.json'), 'utf8')).version as string;

// The tests below are independent (a Twinbox and a CLI home each) and mostly wait on the CLI's processes
// and the scripted deploy: two run at once.
t.jobs = 2;

t.test('--version, -V, per-command --help and `help <command>`', async (t) => {
  const home = await cliHome(t);
  for (const flag of ['--version', '-V']) {
    const run = await runCli(home, [flag]);
    t.same([run.code, run.stdout], [EXIT.ok, `twinbox ${VERSION}\n`], flag);
  }
  t.same(JSON.parse((await runCli(home, ['--version', '--json'])).stdout), { version: VERSION });

  const createHelp = await runCli(home, ['create', '--help']);
  t.equal(createHelp.code, EXIT.ok);
  t.match(createHelp.stdout, /^Usage: twinbox create \[--repo owner\/name\]/);
  t.match(createHelp.stdout, /--timeout-minutes <n>/);
  t.notMatch(createHelp.stdout, /Commands:/, "create's usage, not the overview");
  t.equal((await runCli(home, ['help', 'create'])).stdout, createHelp.stdout, 'help create is the same');
  t.equal((await runCli(home, ['create', '-h'])).stdout, createHelp.stdout);
  for (const command of ['login', 'logout', 'whoami', 'get', 'list', 'logs', 'open', 'delete']) {
    const run = await runCli(home, [command, '--help']);
    t.equal(run.code, EXIT.ok, command);
    t.match(run.stdout, new RegExp(`^Usage: twinbox ${command}\\b`), command);
    t.match(run.stdout, /Options for every command:/, command);
  }
  t.match((await runCli(home, ['logs', '--help'])).stdout, /--follow, -f/);
  t.match((await runCli(home, ['open', '--help'])).stdout, /--page[\s\S]*--print/);

  const overview = await runCli(home, ['help']);
  t.equal(overview.code, EXIT.ok);
  t.match(overview.stdout, /Commands:[\s\S]*logout[\s\S]*whoami[\s\S]*open <id>/);
  t.equal((await runCli(home, ['--help'])).stdout, overview.stdout);
  const unknown = await runCli(home, ['help', 'frobnicate']);
  t.equal(unknown.code, EXIT.usage);
  t.match(unknown.stderr, /Unknown command "frobnicate"/);
  const nothing = await runCli(home, []);
  t.equal(nothing.code, EXIT.usage, 'no command: the overview on stderr');
  t.match(nothing.stderr, /Usage: twinbox <command>/);

  const missingId = await runCli(home, ['get'], { env: { TWINBOX_API_KEY: 'twinbox_sk_unused' } });
  t.equal(missingId.code, EXIT.usage);
  t.match(missingId.stderr, /Usage: twinbox get <sandbox-id> \(see twinbox get --help\)/);
  const badFlag = await runCli(home, ['list', '--nope']);
  t.match(badFlag.stderr, /see `twinbox list --help`/);
});

t.test('whoami: e-mail, plan, token and where it came from, GitHub login', async (t) => {
  const { baseUrl, tb, user } = await startLiveTwinbox(t, {}, false);
  const home = await cliHome(t, { TWINBOX_API_URL: baseUrl, TWINBOX_API_KEY: user.key });
  const run = await runCli(home, ['whoami']);
  t.equal(run.code, EXIT.ok, run.stderr);
  t.match(run.stdout, new RegExp(`^E-mail:\\s+${user.email}$`, 'm'));
  t.match(run.stdout, /^Plan:\s+free$/m);
  t.match(run.stdout, /^Token:\s+API key, from TWINBOX_API_KEY$/m);
  t.match(run.stdout, /^GitHub:\s+not connected/m);
  t.match(run.stdout, new RegExp(`^API:\\s+${baseUrl}$`, 'm'));
  t.notMatch(run.stdout, user.key, 'the key itself is never printed');

  await tb.store.identities.insert({
    id: 'idn_cli_test',
    account_id: user.id,
    provider: 'github',
    provider_key: 'github:4242',
    login: 'octo-ada',
    created_at: new Date().toISOString(),
  });
  const { TWINBOX_API_KEY: _, ...withoutKey } = home.env;
  await mkdir(dirname(home.configFile), { recursive: true });
  await writeFile(home.configFile, JSON.stringify({ api_url: baseUrl, api_key: user.key }));
  const saved = await runCli({ ...home, env: withoutKey }, ['whoami']);
  t.match(saved.stdout, /^GitHub:\s+octo-ada$/m);
  t.match(saved.stdout, new RegExp(`^Token:\\s+API key, saved in ${home.configFile}$`, 'm'));
  const json = JSON.parse((await runCli({ ...home, env: withoutKey }, ['whoami', '--json'])).stdout);
  t.match(json, {
    account: { email: user.email, plan: 'free' },
    identities: [{ provider: 'github', login: 'octo-ada' }],
    token_type: 'api_key',
    key_source: 'config',
  });

  const signedOut = await runCli(home, ['whoami'], { env: { TWINBOX_API_KEY: 'twinbox_sk_nope' } });
  t.equal(signedOut.code, EXIT.auth);
});

t.test('login hint keeps --api-url; logout revokes the saved key and forgets it', async (t) => {
  const { baseUrl, tb } = await startLiveTwinbox(t, {}, false);
  const home = await cliHome(t); // no TWINBOX_API_URL: --api-url is the only way to this Twinbox
  const email = `logout-${Date.now()}@example.com`;
  await tb.accounts.create(email, 'free');
  const sent = await runCli(home, ['login', '--api-url', baseUrl, '--email', email, '--send-code']);
  t.equal(sent.code, EXIT.ok, sent.stderr);
  const finish = /Finish with: (.+)$/m.exec(sent.stdout)?.[1];
  t.equal(finish, `twinbox login --api-url ${baseUrl} --email ${email} --code <code>`);
  const code = await mailedCode(tb.dataDir, email);
  // Run the hint as printed, with the code filled in.
  const hinted = finish!.replace('<code>', code).split(' ').slice(1);
  const login = await runCli(home, hinted);
  t.equal(login.code, EXIT.ok, login.stderr);
  const config = JSON.parse(await readFile(home.configFile, 'utf8'));
  t.equal(config.api_url, baseUrl);
  t.equal((await runCli(home, ['list'])).code, EXIT.ok, 'signed in with the saved key');

  const logout = await runCli(home, ['logout']);
  t.equal(logout.code, EXIT.ok, logout.stderr);
  t.match(logout.stdout, `Revoked the API key ${config.api_key.slice(0, 15)}... of ${email} on ${baseUrl}.`);
  t.match(logout.stdout, `Forgot the API key saved in ${home.configFile}.`);
  t.same(JSON.parse(await readFile(home.configFile, 'utf8')), { api_url: baseUrl }, 'the URL stays');
  const revoked = await fetch(`${baseUrl}/sandboxes`, {
    headers: { authorization: `Bearer ${config.api_key}` },
  });
  t.equal(revoked.status, 401, 'the key no longer works anywhere');
  const after = await runCli(home, ['list']);
  t.equal(after.code, EXIT.auth);
  t.match(after.stderr, /Not signed in/);
  const twice = await runCli(home, ['logout']);
  t.equal(twice.code, EXIT.ok);
  t.match(twice.stdout, 'No API key saved in');

  // A key already revoked elsewhere: said so, and forgotten all the same.
  const stale = await createUser(tb);
  await tb.apiKeys.revoke(stale.id, stale.keyId);
  await writeFile(
    home.configFile,
    JSON.stringify({ api_url: baseUrl, api_key: stale.key, email: stale.email }),
  );
  const gone = await runCli(home, ['logout', '--json']);
  t.match(JSON.parse(gone.stdout), { forgotten: true, revoked: false, api_url: baseUrl });
  t.equal(gone.stderr, '', 'with --json, nothing on stderr when all went as it could');
  t.notOk(JSON.parse(await readFile(home.configFile, 'utf8')).api_key);

  // Twinbox unreachable: the key is forgotten, and the output says it still works.
  const live = await createUser(tb);
  await writeFile(home.configFile, JSON.stringify({ api_url: 'http://127.0.0.1:1', api_key: live.key }));
  const offline = await runCli(home, ['logout'], { env: { TWINBOX_API_KEY: live.key } });
  t.equal(offline.code, EXIT.ok);
  t.match(
    offline.stderr,
    /could not revoke the API key on http:\/\/127\.0\.0\.1:1: .*It still works until you revoke it/,
  );
  t.match(offline.stderr, /TWINBOX_API_KEY is set in your environment and still signs you in/);
  t.match(offline.stdout, 'Forgot the API key saved in');
  t.notMatch(offline.stdout + offline.stderr, live.key, 'never the key itself');
  t.notOk(JSON.parse(await readFile(home.configFile, 'utf8')).api_key);
});

t.test('get: a failed sandbox shows its error; a deleted or expired one says so', async (t) => {
  const { baseUrl, tb, user, deployer } = await startLiveTwinbox(t);
  const home = await cliHome(t, { TWINBOX_API_URL: baseUrl, TWINBOX_API_KEY: user.key });
  const base = ['create', '--repo', 'acme/shop', '--branch', 'main'];
  deployer.delayMs = 50;
  deployer.failWith = 'Build failed: `npm run build` exited with code 3';
  const failed = await runCli(home, [...base, '--wait', '--json']);
  t.equal(failed.code, EXIT.sandboxEnded);
  const failedId = JSON.parse(failed.stdout).sandbox.sandbox_id;
  const shown = await runCli(home, ['get', failedId]);
  t.match(shown.stdout, /^Status:\s+failed$/m);
  t.match(shown.stdout, /^Error:\s+Build failed: `npm run build` exited with code 3$/m);
  t.match(shown.stdout, /^App:\s+\(none: the deploy failed, see Error\)$/m);
  t.match(shown.stdout, new RegExp(`^Logs:\\s+twinbox logs ${failedId}$`, 'm'));
  t.notMatch(shown.stdout, 'not deployed yet');

  deployer.failWith = undefined;
  const ready = JSON.parse((await runCli(home, [...base, '--wait', '--json'])).stdout);
  await runCli(home, ['delete', ready.sandbox_id]);
  const deleted = await runCli(home, ['get', ready.sandbox_id]);
  t.match(deleted.stdout, /^App:\s+\(gone: the sandbox was deleted\)$/m);
  t.match(deleted.stdout, /^Deleted:\s+\d{4}-/m);
  t.match(deleted.stdout, /^Twins \(stopped\):$/m);
  t.notMatch(deleted.stdout, ready.app_url, 'not a URL that no longer serves the app');

  const expiring = JSON.parse((await runCli(home, [...base, '--wait', '--json'])).stdout);
  await tb.lifecycle.end(expiring.sandbox_id, 'expired');
  const expired = await runCli(home, ['get', expiring.sandbox_id]);
  t.match(expired.stdout, /^App:\s+\(gone: the sandbox expired\)$/m);
  t.match(expired.stdout, /^Expired:\s+\d{4}-/m);
});

t.test('open: the app or the sandbox page; --print only prints; the opener gets the URL', async (t) => {
  const { baseUrl, user, deployer } = await startLiveTwinbox(t);
  const home = await cliHome(t, { TWINBOX_API_URL: `${baseUrl}/`, TWINBOX_API_KEY: user.key });
  deployer.delayMs = 50;
  const ready = JSON.parse(
    (await runCli(home, ['create', '--repo', 'acme/shop', '--branch', 'main', '--wait', '--json'])).stdout,
  );
  const id = ready.sandbox_id;
  const printed = await runCli(home, ['open', id, '--print']);
  t.same([printed.code, printed.stdout, printed.stderr], [EXIT.ok, `${ready.app_url}\n`, '']);
  const page = await runCli(home, ['open', id, '--page', '--print']);
  t.equal(page.stdout, `${baseUrl}/dashboard/sandboxes/${id}\n`);

  // A stand-in for the desktop's opener on the PATH: it records what it was asked to open.
  const bin = await tempDir(t, 'twinbox-bin-');
  const record = join(bin, 'opened.txt');
  await writeFile(join(bin, 'xdg-open'), `#!/bin/sh\nprintf '%s\\n' "$1" >> '${record}'\n`);
  await chmod(join(bin, 'xdg-open'), 0o755);
  const opened = await runCli(home, ['open', id], { env: { PATH: `${bin}:/usr/bin:/bin` } });
  t.equal(opened.code, EXIT.ok, opened.stderr);
  t.equal(opened.stdout, `${ready.app_url}\n`, 'the URL is printed too');
  t.match(opened.stderr, 'Opened in your browser (xdg-open).');
  await until(
    async () => (await readFile(record, 'utf8').catch(() => '')) !== '',
    'the opener to run',
    30_000,
  );
  t.equal(await readFile(record, 'utf8'), `${ready.app_url}\n`);

  const noOpener = await runCli(home, ['open', id, '--page'], { env: { PATH: await tempDir(t) } });
  t.equal(noOpener.code, EXIT.ok);
  t.equal(noOpener.stdout, `${baseUrl}/dashboard/sandboxes/${id}\n`);
  t.match(
    noOpener.stderr,
    'Could not open a browser (no xdg-open on the PATH): open the URL above yourself.',
  );

  deployer.hang = true;
  const queued = JSON.parse(
    (await runCli(home, ['create', '--repo', 'acme/shop', '--branch', 'x', '--json'])).stdout,
  );
  const early = await runCli(home, ['open', queued.sandbox_id, '--print']);
  t.equal(early.code, EXIT.rejected);
  t.match(
    early.stderr,
    /has no app yet \(status: (queued|building)\)\. Its page: http.+\/dashboard\/sandboxes\//,
  );
  await runCli(home, ['delete', id]);
  const ended = await runCli(home, ['open', id, '--print']);
  t.equal(ended.code, EXIT.sandboxEnded);
  t.match(ended.stderr, `Sandbox ${id} was deleted: its app is gone.`);
  t.equal(
    (await runCli(home, ['open', '00000000-0000-4000-8000-000000000000', '--print'])).code,
    EXIT.notFound,
  );
});

t.test('repo detection: GitHub remotes only; anything else asks for --repo', async (t) => {
  const accepted: Array<[string, string]> = [
    ['git@github.com:acme/shop.git', 'acme/shop'],
    ['github.com:acme/shop', 'acme/shop'],
    ['https://github.com/acme/shop', 'acme/shop'],
    ['https://github.com/acme/shop.git/', 'acme/shop'],
    ['https://token@github.com/acme/my.repo.git', 'acme/my.repo'],
    ['ssh://git@github.com/acme/shop.git', 'acme/shop'],
    ['ssh://git@github.com:22/acme/shop', 'acme/shop'],
    ['git+ssh://git@GitHub.com/acme/shop.git', 'acme/shop'],
  ];
  for (const [url, repo] of accepted) t.equal(githubRepositoryOf(url), repo, url);
  const refused = [
    '/work/main',
    '../shop',
    'file:///srv/git/shop.git',
    'https://gitlab.com/acme/shop.git',
    'git@bitbucket.org:acme/shop.git',
    'https://github.com/acme',
    'https://github.com/acme/shop/tree/main',
    'https://github.com.evil.example/acme/shop',
    'C:\\src\\shop',
  ];
  for (const url of refused) t.equal(githubRepositoryOf(url), undefined, url);
  t.equal(githubRepositoryOf('git@github.example.com:acme/shop.git', ['github.example.com']), 'acme/shop');
  t.equal(githubRepositoryOf('https://github.example.com:8443/a/b', ['github.example.com:8443']), 'a/b');

  const { baseUrl, user } = await startLiveTwinbox(t, {}, false);
  const home = await cliHome(t, { TWINBOX_API_URL: baseUrl, TWINBOX_API_KEY: user.key });
  const clone = await tempDir(t, 'twinbox-clone-');
  const git = (...args: string[]) => execFileSync('git', args, { cwd: clone, stdio: 'ignore' });
  git('init', '-q');
  git('checkout', '-q', '-b', 'feature/x');
  const origin = (url: string) => {
    git('remote', 'remove', 'origin');
    git('remote', 'add', 'origin', url);
  };
  git('remote', 'add', 'origin', '/work/main');
  const local = await runCli(home, ['create'], { cwd: clone });
  t.equal(local.code, EXIT.usage);
  t.match(
    local.stderr,
    'The origin remote (/work/main) is not a GitHub repository on github.com: pass --repo owner/name.',
  );
  origin('https://ci:s3cret@git.example.com/acme/shop.git');
  const other = await runCli(home, ['create'], { cwd: clone });
  t.equal(other.code, EXIT.usage);
  t.match(
    other.stderr,
    'The origin remote (https://git.example.com/acme/shop.git) is not a GitHub repository',
  );
  t.notMatch(other.stderr, 's3cret', 'credentials in the remote are not printed');
  const enterprise = await runCli(home, ['create', '--json'], {
    cwd: clone,
    env: { TWINBOX_GITHUB_URL: 'https://git.example.com' },
  });
  t.equal(enterprise.code, EXIT.ok, enterprise.stderr);
  t.match(JSON.parse(enterprise.stdout), { repo: 'acme/shop', branch: 'feature/x' });
  const flag = await runCli(home, ['create', '--repo', 'acme/other', '--json'], { cwd: clone });
  t.equal(JSON.parse(flag.stdout).repo, 'acme/other', '--repo needs no origin');
  origin('ssh://git@github.com/acme/shop.git');
  const ssh = await runCli(home, ['create', '--json'], { cwd: clone });
  t.equal(JSON.parse(ssh.stdout).repo, 'acme/shop');
});

t.test('create --wait on a terminal: one status line, rewritten, its clock ticking', async (t) => {
  const { baseUrl, user, deployer } = await startLiveTwinbox(t);
  deployer.delayMs = 3500;
  const home = await cliHome(t, { TWINBOX_API_URL: baseUrl, TWINBOX_API_KEY: user.key });
  // util-linux's script(1) runs the CLI on a pseudo-terminal, so stderr is a real TTY.
  const command = `${process.execPath} ${join(REPO_ROOT, 'dist/cli.js')} create --repo acme/shop --branch main --wait`;
  const output = await new Promise<string>((resolve, reject) => {
    execFile(
      'script',
      ['-qefc', command, '/dev/null'],
      { cwd: home.home, env: home.env, timeout: 120_000 },
      (error: Error | null, stdout: string) => (error ? reject(error) : resolve(stdout)),
    );
  });
  t.match(
    output,
    /\r\x1b\[2K[-\\|/] Sandbox [0-9a-f-]+: (queued|building) \(0s\)/,
    'a line redrawn in place',
  );
  const clocks = new Set([...output.matchAll(/: building \((\d+)s\)/g)].map((m) => m[1]));
  t.ok(clocks.size >= 2, `the clock ticks between polls (${[...clocks].join(', ')} s seen)`);
  t.match(output, /: ready \(\d+s\)\r?\n/, 'ends on a fresh line');
  t.match(output, /Status:\s+ready/);
});
