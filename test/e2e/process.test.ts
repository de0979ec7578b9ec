import t from 'tap';
import { execFile } from 'node:child_process';
import { readFile, readdir, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { tempDir } from '../helpers/twinbox.ts';
import { recordsAtRest } from '../helpers/store-at-rest.ts';
import { devApiKey, runTwinboxToExit, spawnTwinbox, stopGracefully } from '../helpers/process.ts';

const run = promisify(execFile);

async function api(baseUrl: string, key: string, path: string, init: RequestInit = {}) {
  const response = await fetch(`${baseUrl}${path}`, {
    ...init,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...init.headers },
  });
  return { status: response.status, body: (await response.json()) as any };
}

t.test('first start: a local owner, a 0600 key file and a curl that works as printed', async (t) => {
  const dataDir = await tempDir(t);
  const proc = await spawnTwinbox(t, { TWINBOX_DATA_DIR: dataDir });
  const deadline = Date.now() + 10_000;
  while (!proc.output().includes("-d '{") && Date.now() < deadline)
    await new Promise((r) => setTimeout(r, 50));
  const printed = /(curl -s -X POST[\s\S]*?\}')/.exec(proc.output())?.[1];
  t.ok(printed, 'a curl command is printed');
  const keyFile = join(dataDir, 'dev-api-key');
  t.equal((await stat(keyFile)).mode & 0o777, 0o600);
  const key = (await readFile(keyFile, 'utf8')).trim();
  t.notOk(proc.output().includes(key), 'the key itself is not printed');

  const { stdout } = await run('bash', ['-c', printed!]);
  const sandbox = JSON.parse(stdout);
  t.equal(sandbox.status, 'queued');
  t.match(sandbox.sandbox_id, /^[0-9a-f-]{36}$/);
  const me = await api(proc.baseUrl, key, `/sandboxes/${sandbox.sandbox_id}`);
  t.equal(me.status, 200);
  await stopGracefully(proc);
});

t.test('a second Twinbox on the same data dir refuses to start, with a clear message', async (t) => {
  const dataDir = await tempDir(t);
  const first = await spawnTwinbox(t, { TWINBOX_DATA_DIR: dataDir });
  const second = await runTwinboxToExit({ TWINBOX_DATA_DIR: dataDir });
  t.equal(second.code, 1);
  t.match(
    second.output,
    `Another Twinbox process (pid ${first.child.pid}) is already using the data directory`,
  );
  const key = await devApiKey(first, dataDir);
  t.equal((await api(first.baseUrl, key, '/sandboxes')).status, 200, 'the first one is unaffected');
  await stopGracefully(first);
});

t.test('a bad configuration value stops startup naming the variable', async (t) => {
  const result = await runTwinboxToExit({ TWINBOX_DATA_DIR: await tempDir(t), PORT: 'http' });
  t.equal(result.code, 1);
  t.match(result.output, /Invalid configuration[\s\S]*"PORT" must be a number/);
});

t.test(
  'restart: accounts, keys and sandboxes survive; time that passed while down expires them',
  async (t) => {
    const dataDir = await tempDir(t);
    const first = await spawnTwinbox(t, { TWINBOX_DATA_DIR: dataDir });
    const key = await devApiKey(first, dataDir);
    const keep = await api(first.baseUrl, key, '/sandboxes', {
      method: 'POST',
      body: JSON.stringify({ repo: 'a/keep', branch: 'main' }),
    });
    const lapse = await api(first.baseUrl, key, '/sandboxes', {
      method: 'POST',
      body: JSON.stringify({ repo: 'a/lapse', branch: 'main', ttl_minutes: 1 }),
    });
    t.equal(keep.status, 201);
    await stopGracefully(first);

    // While Twinbox is down, the lapsing sandbox's minute passes (its record is moved back in time).
    const file = join(dataDir, 'store', 'sandboxes', `${lapse.body.sandbox_id}.json`);
    const record = JSON.parse(await readFile(file, 'utf8'));
    record.expires_at = new Date(Date.now() - 1000).toISOString();
    await writeFile(file, JSON.stringify(record));

    const second = await spawnTwinbox(t, { TWINBOX_DATA_DIR: dataDir });
    t.equal(
      (await api(second.baseUrl, key, `/sandboxes/${keep.body.sandbox_id}`)).body.status,
      'queued',
      'key and sandbox survive',
    );
    t.equal((await api(second.baseUrl, key, `/sandboxes/${lapse.body.sandbox_id}`)).body.status, 'expired');
    t.equal((await recordsAtRest(dataDir, 'accounts')).length, 1, 'no second owner was created');
    await stopGracefully(second);
  },
);

t.test(
  'kill -9 during a burst of creates: the store loads and every acknowledged sandbox exists',
  async (t) => {
    const dataDir = await tempDir(t);
    // The burst holds 150+ sandboxes at once: above the pro plan's default quota of 50.
    const first = await spawnTwinbox(t, {
      TWINBOX_DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
      TWINBOX_SANDBOX_QUOTA_PRO: '100000',
    });
    const key = await devApiKey(first, dataDir);
    const acknowledged: string[] = [];
    let killed = false;
    const worker = async (n: number) => {
      for (let i = 0; !killed; i++) {
        try {
          const res = await api(first.baseUrl, key, '/sandboxes', {
            method: 'POST',
            body: JSON.stringify({ repo: `burst/w${n}`, branch: `b${i}` }),
          });
          if (res.status === 201) acknowledged.push(res.body.sandbox_id);
          else throw new Error(`create answered ${res.status}: ${JSON.stringify(res.body)}`);
        } catch (error) {
          if (!killed) throw error; // a refusal is a failure; after the kill the connection dies
          return;
        }
        if (acknowledged.length >= 150 && !killed) {
          killed = true;
          first.child.kill('SIGKILL');
        }
      }
    };
    await Promise.all(Array.from({ length: 16 }, (_, n) => worker(n)));
    await first.exited;
    t.ok(acknowledged.length >= 150, `${acknowledged.length} creates acknowledged before the kill`);

    const second = await spawnTwinbox(t, { TWINBOX_DATA_DIR: dataDir, LOG_LEVEL: 'warn' });
    const missing = [];
    for (const id of acknowledged) {
      if ((await api(second.baseUrl, key, `/sandboxes/${id}`)).status !== 200) missing.push(id);
    }
    t.same(missing, [], 'no acknowledged sandbox was lost');
    const files = await readdir(join(dataDir, 'store', 'sandboxes'));
    t.notOk(
      files.some((f) => f.endsWith('.tmp') || f.endsWith('.unreadable')),
      'no torn or leftover files',
    );
    t.notOk(second.output().includes('not valid JSON'), 'nothing was unreadable');
    await stopGracefully(second);
  },
);
