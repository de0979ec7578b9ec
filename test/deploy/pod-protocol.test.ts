import t, { type Test } from 'tap';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { existsSync } from 'node:fs';
import { createPublicKey, generateKeyPairSync } from 'node:crypto';
import { podCall, PodError } from '../../server/deploy/pods/pod-control.ts';
import { bundlePod } from '../../server/deploy/pods/pod-bundle.ts';
import { freePort } from '../../server/deploy/ports.ts';
import { podLayout } from '../../server/pod/layout.ts';
import { checkPodRequest, podCallOf, PodRequestError } from '../../server/pod/protocol.ts';
import { REPO_ROOT } from '../helpers/process.ts';
import { makeRsaKey } from '../../server/twins/runtime/rsa-keys.ts';

/**
 * The pod's control protocol (server/pod/protocol.ts): one module both sides use, its messages checked at
 * the pod's door. A bad message gets a 400 (an unknown route a 404) with a `detail`, and the pod goes on.
 */

t.test('the checks, without a pod', async (t) => {
  t.same(checkPodRequest('exposeApp', { port: 3000 }), { port: 3000 });
  t.same(checkPodRequest('ready', undefined), undefined, 'a GET carries nothing');
  const refused = [
    ['exposeApp', { port: '3000' }, /"port" must be a number/],
    ['exposeApp', { port: 0 }, /"port" must be greater than or equal to 1/],
    ['startTwins', { sandbox_id: 'sb', names: 'github', admin_token: 'x' }, /"names" must be an array/],
    ['startTwins', { sandbox_id: 'sb', names: ['github'] }, /"admin_token" is required/],
    ['restoreTwins', { sandbox_id: 'sb', extra: 1 }, /"extra" is not allowed/],
    ['restoreTwins', ['sb'], /must be of type object/],
    ['stopTwins', { purge: 'yes' }, /"purge" must be a boolean/],
    ['warmTwins', { names: 'github' }, /"names" must be an array/],
  ] as const;
  for (const [call, body, why] of refused) {
    const error = t.throws(() => checkPodRequest(call, body)) as PodRequestError;
    t.ok(error instanceof PodRequestError, `${call}: a PodRequestError`);
    t.equal(error.status, 400);
    t.match(error.message, why);
  }
  t.equal(refused.length, 8, 'every refusal was tried');
  t.equal(podCallOf('PUT', '/app'), 'exposeApp');
  const unknown = t.throws(() => podCallOf('DELETE', '/twins')) as PodRequestError;
  t.equal(unknown.status, 404);
});

/** The pod as Twinbox runs it (its bundle, plain JavaScript, no TypeScript loader), in `dir`, host network. */
async function spawnPod(t: Test, dir: string): Promise<{ pod: ChildProcess; output: () => string }> {
  const program = await bundlePod(join(dir, 'data', 'pod-bundle'));
  const pod = spawn(process.execPath, [program.entry], {
    cwd: REPO_ROOT,
    env: {
      PATH: process.env.PATH,
      TWINBOX_POD_DIR: dir,
      TWINBOX_POD_STATE_DIR: join(dir, 'state'),
      TWINBOX_POD_NETWORK: 'host',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  pod.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  pod.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  const exited = new Promise<number | null>((resolve) => pod.once('exit', (code) => resolve(code)));
  t.teardown(async () => {
    if (pod.exitCode === null && pod.signalCode === null) {
      pod.kill('SIGTERM');
      await exited;
    }
  });
  await new Promise<void>((resolve, reject) => {
    const bound = setTimeout(() => reject(new Error(`the pod did not start: ${output}`)), 120_000);
    pod.stdout!.on('data', () => {
      if (output.includes('pod ready')) {
        clearTimeout(bound);
        resolve();
      }
    });
    void exited.then((code) => reject(new Error(`the pod exited with ${code}: ${output}`)));
  });
  return { pod, output: () => output };
}

t.test('a pod answers bad control messages with 400 and a detail, and keeps working', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'twinbox-pod-protocol-'));
  t.teardown(() => rm(dir, { recursive: true, force: true, maxRetries: 3 }));
  const { pod } = await spawnPod(t, dir);
  const control = podLayout(dir).control;

  /** A raw request, so that the pod sees exactly what a broken or hostile caller would send. */
  const raw = (method: string, path: string, body: string) =>
    new Promise<{ status: number; json: { detail?: string } }>((resolve, reject) => {
      const req = request({ socketPath: control, method, path }, (res) => {
        let text = '';
        res.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, json: JSON.parse(text) }));
      });
      req.on('error', reject);
      req.end(body);
    });

  const bad = [
    ['POST', '/twins', '{not json', 400, /the body is not JSON/],
    [
      'POST',
      '/twins',
      JSON.stringify({ sandbox_id: 'sb', names: 'github', admin_token: 't' }),
      400,
      /"names" must be an array/,
    ],
    [
      'POST',
      '/twins',
      JSON.stringify({ sandbox_id: 7, names: [], admin_token: 't' }),
      400,
      /"sandbox_id" must be a string/,
    ],
    ['PUT', '/app', JSON.stringify({ port: 'a lot' }), 400, /"port" must be a number/],
    ['PUT', '/app', JSON.stringify([3000]), 400, /must be of type object/],
    ['POST', '/restore', '{}', 400, /"sandbox_id" is required/],
    ['POST', '/stop', JSON.stringify({ purge: 1 }), 400, /"purge" must be a boolean/],
    ['DELETE', '/twins', '', 404, /no pod route DELETE \/twins/],
  ] as const;
  for (const [method, path, body, status, detail] of bad) {
    const answer = await raw(method, path, body);
    t.equal(answer.status, status, `${method} ${path} ${body}: ${status}`);
    t.match(answer.json.detail, detail, 'with a detail that says what is wrong');
  }
  t.equal(bad.length, 8, 'every bad message was sent');

  t.equal(pod.exitCode, null, 'the pod still runs');
  const ready = await podCall(control, 'ready', undefined);
  t.same(ready, { ok: true, network: 'host', prepared: [] }, 'and answers its protocol');
  const refused = await podCall(control, 'exposeApp', { port: -1 }).catch((error: unknown) => error);
  t.ok(refused instanceof PodError, "Twinbox's side gets the refusal as a PodError");
  t.equal((refused as PodError).status, 400);
  // A spare's warm-up: the twins start once in a scratch host and go, leaving nothing on disk.
  const warm = await podCall(control, 'warmTwins', { names: ['github', 'stripe', 'no-such-twin'] });
  t.same(warm, { warmed: ['github', 'stripe'] }, 'a warm-up of the known twins');
  t.notOk(existsSync(join(dir, 'warm-up')), 'its scratch directory is gone');
  t.same(
    await podCall(control, 'ready', undefined),
    { ok: true, network: 'host', prepared: [] },
    'no sandbox yet',
  );
  const { twins } = await podCall(control, 'startTwins', {
    sandbox_id: 'sb-protocol',
    names: ['github'],
    admin_token: 'admin-token-of-this-test',
  });
  t.same(Object.keys(twins), ['github'], 'a good message still starts a twin');
  t.match(twins.github?.base_url, /^http:\/\/127\.0\.0\.1:\d+/);
  const user = await fetch(`${twins.github!.base_url}/user`, {
    headers: { authorization: `Bearer ${twins.github!.env_vars.GITHUB_TOKEN}` },
  });
  t.equal(user.status, 200, "the warmed twin answers the sandbox's token");
  const late = await podCall(control, 'warmTwins', { names: ['github'] }).catch((error: unknown) => error);
  t.ok(late instanceof PodError, 'no warm-up once the pod serves a sandbox');
  t.equal((late as PodError).status, 400);
  t.match((late as PodError).message, /already serves a sandbox/);

  // The app's port: the pod answers once it takes connections, instead of the deploy probing through it.
  const early = await podCall(control, 'appListening', { timeout_ms: 100 }).catch((error: unknown) => error);
  t.ok(early instanceof PodError, 'appListening before exposeApp is refused');
  t.match((early as PodError).message, /exposeApp first/);
  const port = await freePort();
  await podCall(control, 'exposeApp', { port });
  t.same(
    await podCall(control, 'appListening', { timeout_ms: 200 }),
    { listening: false },
    'nothing listens: false once the time is up',
  );
  const asked = Date.now();
  const answer = podCall(control, 'appListening', { timeout_ms: 60_000 });
  await new Promise((resolve) => setTimeout(resolve, 150));
  const app = await listenOn(port);
  t.same(await answer, { listening: true }, 'true once the app listens');
  t.ok(Date.now() - asked < 30_000, 'long before the time was up');
  await new Promise<void>((resolve) => app.server.close(() => resolve()));

  // A caller that leaves: the pod stops trying (no connection reaches a server that listens afterwards).
  const gone = new AbortController();
  const left = podCall(control, 'appListening', { timeout_ms: 60_000 }, undefined, gone.signal);
  left.catch(() => {});
  await new Promise((resolve) => setTimeout(resolve, 100));
  gone.abort();
  await t.rejects(left, /no longer needed/, "the caller's side ends at once");
  // Time for the pod to hear the connection close, even on a loaded machine.
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const after = await listenOn(port);
  await new Promise((resolve) => setTimeout(resolve, 300));
  t.equal(after.connections(), 0, 'and the pod no longer connects');
  await new Promise<void>((resolve) => after.server.close(() => resolve()));
  t.equal(pod.exitCode, null, 'the pod still runs');
});

/** A TCP server on 127.0.0.1:`port` that counts the connections it takes. */
async function listenOn(port: number): Promise<{ server: Server; connections: () => number }> {
  let count = 0;
  const server = createServer((socket) => {
    count++;
    socket.destroy();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  return { server, connections: () => count };
}

t.test('a pod prepares the twins it is told to expect while it starts, and ignores a bad hint', async (t) => {
  const dir = await mkdtemp(join(tmpdir(), 'twinbox-pod-expected-'));
  t.teardown(() => rm(dir, { recursive: true, force: true, maxRetries: 3 }));
  // As Twinbox writes it before the spawn (a spare's warm set) or while the pod starts (a deploy's twins).
  await writeFile(
    podLayout(dir).expectedTwins,
    JSON.stringify({ names: ['stripe', 'github', 'no-such-twin'] }),
  );
  await spawnPod(t, dir);
  const control = podLayout(dir).control;
  let prepared: string[] = [];
  for (let i = 0; i < 600 && prepared.length < 2; i++) {
    prepared = (await podCall(control, 'ready', undefined)).prepared;
    if (prepared.length < 2) await new Promise((resolve) => setTimeout(resolve, 50));
  }
  t.same([...prepared].sort(), ['github', 'stripe'], 'the known twins are loaded and prepared, nothing else');
  const { twins } = await podCall(control, 'startTwins', {
    sandbox_id: 'sb-expected',
    names: ['github', 'stripe'],
    admin_token: 'admin-token-of-this-test',
  });
  t.same(Object.keys(twins).sort(), ['github', 'stripe'], 'and start as usual');
  t.match(
    twins.github!.env_vars.GITHUB_APP_PRIVATE_KEY,
    /^-----BEGIN RSA PRIVATE KEY-----/,
    'with the key made ahead',
  );

  for (const [name, body] of [
    ['not JSON', '{names'],
    ['the wrong shape', JSON.stringify({ names: 'github' })],
  ]) {
    const other = await mkdtemp(join(tmpdir(), 'twinbox-pod-expected-bad-'));
    t.teardown(() => rm(other, { recursive: true, force: true, maxRetries: 3 }));
    await writeFile(podLayout(other).expectedTwins, body!);
    await spawnPod(t, other);
    t.same(
      await podCall(podLayout(other).control, 'ready', undefined),
      { ok: true, network: 'host', prepared: [] },
      `a hint that is ${name}: the pod starts and prepares nothing`,
    );
  }
});

t.test(
  'a pod given RSA keys with its expected twins starts those twins with them, and drops a bad one',
  async (t) => {
    const dir = await mkdtemp(join(tmpdir(), 'twinbox-pod-keys-'));
    t.teardown(() => rm(dir, { recursive: true, force: true, maxRetries: 3 }));
    const [first, second] = await Promise.all([makeRsaKey(), makeRsaKey()]);
    const small = generateKeyPairSync('rsa', { modulusLength: 1024 }).privateKey.export({
      type: 'pkcs1',
      format: 'pem',
    });
    // As Twinbox writes it for a pod a deploy waits for (deploy/pods/key-stock.ts); the bad ones first, so
    // that a pod taking them would hand them out.
    await writeFile(
      podLayout(dir).expectedTwins,
      JSON.stringify({ names: ['github', 'clerk'], rsa_keys: ['not a key', small, first, second] }),
    );
    await spawnPod(t, dir);
    const { twins } = await podCall(podLayout(dir).control, 'startTwins', {
      sandbox_id: 'sb-keys',
      names: ['github', 'clerk'],
      admin_token: 'admin-token-of-this-test',
    });
    const appKey = twins.github!.env_vars.GITHUB_APP_PRIVATE_KEY;
    t.ok(appKey === first || appKey === second, "the GitHub App's key is one of those given");
    const other = appKey === first ? second! : first!;
    const publicOf = (pem: string) =>
      createPublicKey(pem).export({ type: 'spki', format: 'pem' }).toString().trim();
    t.equal(
      twins.clerk!.env_vars.CLERK_JWT_KEY!.trim(),
      publicOf(other),
      "Clerk's session tokens are signed with the other",
    );
  },
);
