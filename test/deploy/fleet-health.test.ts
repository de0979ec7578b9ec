import t, { type Test } from 'tap';
import { createServer, type Server } from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HealthCheckError, waitForHttp } from '../../server/deploy/steps/health.ts';

/**
 * An app behind a Unix socket (as behind its pod) that answers each request after `delayMs`, or never.
 * Counts the requests it got and the answers that reached a probe still waiting for them.
 */
async function slowApp(t: Test, delayMs: number | 'never') {
  const dir = await mkdtemp(join(tmpdir(), 'twinbox-fleet-health-'));
  const socketPath = join(dir, 'app.sock');
  const seen = { requests: 0, answered: 0 };
  const server: Server = createServer((req, res) => {
    seen.requests++;
    if (delayMs === 'never') return;
    const timer = setTimeout(() => {
      if (res.destroyed) return;
      res.end('ok', () => seen.answered++);
    }, delayMs);
    res.on('close', () => clearTimeout(timer));
  });
  await new Promise<void>((resolve) => server.listen(socketPath, resolve));
  t.teardown(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await rm(dir, { recursive: true, force: true });
  });
  return { target: { socketPath, path: '/' }, seen };
}

const running = new Promise<string>(() => {});

t.test('an app slower than the first probe still passes: later probes wait longer', async (t) => {
  // 2.5 s an answer: past the first probe's 2 s, as an app on a saturated machine whose GET / reads its
  // twins. Cut at 2 s every time, each answer was abandoned and the check failed however long it ran.
  const app = await slowApp(t, 2500);
  await waitForHttp(app.target, { timeoutMs: 30_000, exited: running });
  t.ok(app.seen.requests >= 2, `the first probe ran out of time and another followed (${app.seen.requests})`);
  t.equal(app.seen.answered, 1, 'one answer reached a probe that was still waiting for it');
});

t.test('an app that never answers still fails, as timed out, within the check', async (t) => {
  const app = await slowApp(t, 'never');
  const error = await waitForHttp(app.target, { timeoutMs: 5000, exited: running }).catch((e: unknown) => e);
  t.ok(error instanceof HealthCheckError, 'a typed health check failure');
  t.equal((error as HealthCheckError).kind, 'timed-out');
  t.ok(app.seen.requests >= 2, `it was asked more than once (${app.seen.requests})`);
});

t.test('an app that answers at once passes on the first probe', async (t) => {
  const app = await slowApp(t, 0);
  await waitForHttp(app.target, { timeoutMs: 30_000, exited: running });
  t.equal(app.seen.requests, 1, 'one probe');
  t.equal(app.seen.answered, 1, 'answered');
});

t.test(
  'probes wait for `listening` (the pod seeing the port take a connection), then go as before',
  async (t) => {
    const app = await slowApp(t, 0);
    let say!: (listening: boolean) => void;
    const listening = new Promise<boolean>((resolve) => (say = resolve));
    const began = Date.now();
    setTimeout(() => say(true), 300);
    await waitForHttp(app.target, { timeoutMs: 30_000, exited: running, listening });
    t.ok(Date.now() - began >= 290, 'not before the port takes connections');
    t.equal(app.seen.requests, 1, 'then one probe');

    // A pod that cannot say (its call failed) holds nothing up; an app that exits meanwhile fails at once.
    const failing = await slowApp(t, 0);
    await waitForHttp(failing.target, {
      timeoutMs: 30_000,
      exited: running,
      listening: Promise.reject(new Error('no pod')),
    });
    t.equal(failing.seen.requests, 1, 'a failed listening call: the probes start at once');
    const dead = await slowApp(t, 0);
    const error = await waitForHttp(dead.target, {
      timeoutMs: 30_000,
      exited: Promise.resolve('the app exited with code 1'),
      listening: new Promise(() => {}),
    }).catch((e: unknown) => e);
    t.equal((error as HealthCheckError).kind, 'exited', 'an app that exits ends the wait');
    t.equal(dead.seen.requests, 0, 'without a probe');
  },
);
