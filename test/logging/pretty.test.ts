import t, { type Test } from 'tap';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigError, loadConfig } from '../../server/config.ts';
import { chooseLogFormat, createLogger } from '../../server/logger.ts';
import { call, createUser, LogCapture, startTestTwinbox, tempDir } from '../helpers/twinbox.ts';

const repoRoot = fileURLToPath(new URL('../..', import.meta.url));

t.test('auto is readable lines on a terminal outside production, JSON everywhere else', async (t) => {
  t.equal(chooseLogFormat('auto', 'development', true), 'pretty');
  t.equal(chooseLogFormat('auto', 'test', true), 'pretty');
  t.equal(chooseLogFormat('auto', 'development', false), 'json', 'a pipe or file gets JSON');
  t.equal(chooseLogFormat('auto', 'production', true), 'json', 'production: JSON even on a terminal');
  t.equal(chooseLogFormat('json', 'development', true), 'json');
  t.equal(chooseLogFormat('pretty', 'development', false), 'pretty');
  t.equal(chooseLogFormat('pretty', 'production', true), 'json');
});

t.test('LOG_FORMAT: auto by default, pretty or json; pretty is refused in production', async (t) => {
  t.equal(loadConfig({}).logFormat, 'auto');
  t.equal(loadConfig({ LOG_FORMAT: 'pretty' }).logFormat, 'pretty');
  t.equal(loadConfig({ LOG_FORMAT: 'json' }).logFormat, 'json');
  t.throws(() => loadConfig({ LOG_FORMAT: 'colour' } as unknown as NodeJS.ProcessEnv), ConfigError);
  t.throws(
    () => loadConfig({ NODE_ENV: 'production', LOG_FORMAT: 'pretty' }),
    /"LOG_FORMAT" must be one of auto, pretty, json \(production: auto or json\)/,
  );
  t.equal(loadConfig({ NODE_ENV: 'production', LOG_FORMAT: 'json' }).logFormat, 'json');
});

t.test('pretty lines are readable and redact what JSON lines redact', async (t) => {
  const pretty = new LogCapture();
  const tb = await startTestTwinbox(t, {}, { logger: createLogger('info', pretty, 'pretty') });
  const user = await createUser(tb);
  // Requests carrying the key: good, and refused (a key that is almost right).
  t.equal((await call(tb, { url: '/sandboxes', token: user.key })).status, 200);
  t.equal((await call(tb, { url: '/sandboxes', token: `${user.key}x` })).status, 401);
  tb.logger.info(
    { token: user.key, key: user.key, secret: 'shh-secret-value', code: '123456', sandbox_id: 'sb-1' },
    'a line with every redacted field',
  );
  const text = pretty.text();
  t.notMatch(text, user.key, 'the API key never reaches the pretty log');
  t.notMatch(text, 'shh-secret-value');
  t.notMatch(text, '123456');
  const line = pretty.lines.find((l) => l.includes('a line with every redacted field'));
  t.ok(line, 'the line was written');
  t.match(line!, /^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: a line with every redacted field \{/);
  t.match(line!, '"token":"[redacted]"');
  t.match(line!, '"sandbox_id":"sb-1"', 'other fields are kept');
  t.match(text, /INFO: \[response\] get \/sandboxes 200/, 'one readable line a request');
  t.notOk(
    pretty.lines.some((l) => l.startsWith('{')),
    'no JSON lines in pretty mode',
  );
  t.notMatch(text, /\u001b\[/, 'no colour codes when not writing to a terminal');
});

/** Runs `npm start`'s entry point until its startup hint is out; returns stdout and the data dir. */
async function startMain(t: Test, env: Record<string, string>): Promise<{ stdout: string; dataDir: string }> {
  const dataDir = await tempDir(t);
  const child = spawn(process.execPath, ['--import', 'tsx', 'server/main.ts'], {
    cwd: repoRoot,
    env: {
      PATH: process.env.PATH,
      NODE_ENV: 'development',
      PORT: '0',
      TWINBOX_DATA_DIR: dataDir,
      // Nothing to deploy here: the engine's isolation probes and warnings are another test's business.
      TWINBOX_DEPLOY_ENGINE: 'none',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const exited = once(child, 'exit');
  t.teardown(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await exited;
    }
  });
  // The hint ends with the sample's payload line; an exit before that is a failure to start.
  await new Promise<void>((resolve, reject) => {
    const check = () => {
      if (/"ttl_minutes":30\}'\n\n/.test(stdout)) resolve();
    };
    child.stdout.on('data', check);
    void exited.then(() => reject(new Error(`main.ts exited before its hint:\n${stdout}\n${stderr}`)));
    check();
  });
  child.kill('SIGTERM');
  const [code] = await exited;
  t.equal(code, 0, 'SIGTERM stops it cleanly');
  return { stdout, dataDir };
}

t.test('npm start: JSON logs on a pipe, the pages to open and a sample that deploys', async (t) => {
  const { stdout, dataDir } = await startMain(t, {});
  const key = (await readFile(join(dataDir, 'dev-api-key'), 'utf8')).trim();
  t.notMatch(stdout, key, 'the key is read from its file, never printed');
  const logLines = stdout.split('\n').filter((line) => line.startsWith('{'));
  t.ok(logLines.length >= 2, 'log lines are there');
  for (const line of logLines) t.doesNotThrow(() => JSON.parse(line), 'a log line on a pipe is JSON');
  const port = /Twinbox listening on http:\/\/127\.0\.0\.1:(\d+) /.exec(stdout)?.[1];
  t.ok(port, 'the listening line names the port');
  const web = `http://127.0.0.1:${port}`;
  t.match(stdout, `Open ${web}/dashboard in a browser`);
  t.match(stdout, `${web}/signup`);
  t.match(stdout, `${web}/login`);
  t.match(stdout, `Sign-in codes are mailed as files to ${join(dataDir, 'outbox')}/`);
  t.match(stdout, `-H "Authorization: Bearer $(cat ${join(dataDir, 'dev-api-key')})"`);
  t.match(stdout, `-d '{"repo":"octocat/Hello-World","branch":"master","ttl_minutes":30}'`);
});

t.test('npm start with LOG_FORMAT=pretty: readable lines, not JSON', async (t) => {
  const { stdout } = await startMain(t, { LOG_FORMAT: 'pretty' });
  t.match(
    stdout,
    /^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: Twinbox is listening \{"url":"http:\/\/127\.0\.0\.1:\d+"/m,
  );
  t.notOk(
    stdout.split('\n').some((line) => line.startsWith('{')),
    'no JSON lines',
  );
  t.match(stdout, /Open http:\/\/127\.0\.0\.1:\d+\/dashboard/);
});
