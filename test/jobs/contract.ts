/**
 * The JobQueue contract (server/jobs/queue.ts), run on the embedded queue (embedded.test.ts) and on
 * pg-boss (postgres.test.ts). A "place" is one durable home for jobs (a data directory, a schema);
 * `open` opens a Store and a queue on it, as a Twinbox process would.
 */
import { spawn } from 'node:child_process';
import type { Test } from 'tap';
import pino from 'pino';
import type { Store } from '../../server/store/store.ts';
import type { Job, JobData, JobQueue } from '../../server/jobs/queue.ts';
import { JobArgumentError } from '../../server/jobs/queue.ts';
import { REPO_ROOT } from '../helpers/process.ts';

export interface Opened {
  store: Store;
  queue: JobQueue;
  close(): Promise<void>;
}

export interface Place {
  open(): Promise<Opened>;
  /** What test/jobs/worker.ts needs in its environment to open the same place. */
  env: Record<string, string>;
}

export interface QueueSetup {
  fresh(t: Test): Promise<Place>;
  /** Only one process may have the embedded store open at a time: close before another opens it. */
  oneProcessAtATime: boolean;
}

export const silent = pino({ level: 'silent' });

/** Resolves once `count()` reaches `n` (handlers of other processes count through the store). */
/** Waits for `check`, for at most `ms`: shorter than the lease where the lease must not be what helped. */
export async function until(
  what: string,
  check: () => boolean | Promise<boolean>,
  ms = 60_000,
): Promise<void> {
  for (const end = Date.now() + ms; Date.now() < end;) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

export function gate(): { promise: Promise<void>; open(): void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

export function jobQueueContract(t: Test, setup: QueueSetup): void {
  const opened = async (t: Test, place: Place): Promise<Opened> => {
    const o = await place.open();
    let closed = false;
    const close = async () => {
      if (closed) return;
      closed = true;
      await o.close();
    };
    t.teardown(close);
    return { ...o, close };
  };

  t.test('a job sent is worked once, with its data as JSON (any string kept), attempt 1', async (t) => {
    const place = await setup.fresh(t);
    const { queue } = await opened(t, place);
    const seen: Array<Job<JobData>> = [];
    await queue.work('plain', { concurrency: 2 }, async (job) => {
      seen.push(job);
    });
    const data = { text: 'a\u0000b\ud800c \u{1f600}', nested: { n: 7, list: [1, 'two', null] } };
    const sent = await queue.send('plain', data);
    t.equal(sent.duplicate, false);
    t.type(sent.id, 'string');
    await queue.idle('plain');
    t.equal(seen.length, 1, 'worked once');
    t.same(seen[0]!.data, data, 'data as sent');
    t.equal(seen[0]!.id, sent.id);
    t.equal(seen[0]!.queue, 'plain');
    t.equal(seen[0]!.attempt, 1);
    t.equal(seen[0]!.signal.aborted, false);
  });

  t.test('a key is accepted once, ever: before, during and after its job ran', async (t) => {
    const place = await setup.fresh(t);
    const { queue } = await opened(t, place);
    const runs: string[] = [];
    const hold = gate();
    await queue.work('keyed', { concurrency: 4 }, async (job) => {
      runs.push(String(job.data.n));
      await hold.promise;
    });
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, n) => queue.send('keyed', { n }, { key: 'delivery-1' })),
    );
    const first = results.filter((r) => !r.duplicate);
    t.equal(first.length, 1, '20 concurrent sends of one key: exactly one accepted');
    t.ok(
      results.every((r) => r.id === first[0]!.id),
      'every duplicate answers the first job id',
    );
    await until('the job to start', () => runs.length === 1);
    const during = await queue.send('keyed', { n: 99 }, { key: 'delivery-1' });
    t.same(during, { id: first[0]!.id, duplicate: true }, 'refused while the job runs');
    hold.open();
    await queue.idle('keyed');
    const after = await queue.send('keyed', { n: 100 }, { key: 'delivery-1' });
    t.same(after, { id: first[0]!.id, duplicate: true }, 'refused after the job ran');
    const otherQueue = await queue.send('keyed-elsewhere', { n: 1 }, { key: 'delivery-1' });
    t.equal(otherQueue.duplicate, false, 'keys are per queue');
    const other = await queue.send('keyed', { n: 2 }, { key: 'delivery-2' });
    t.equal(other.duplicate, false);
    await queue.idle('keyed');
    t.equal(runs.length, 2, 'one run per key');
  });

  t.test('a key survives a restart', async (t) => {
    const place = await setup.fresh(t);
    const first = await opened(t, place);
    const sent = await first.queue.send('keyed', { n: 1 }, { key: 'k' });
    await first.close();
    const second = await opened(t, place);
    t.same(await second.queue.send('keyed', { n: 2 }, { key: 'k' }), { id: sent.id, duplicate: true });
  });

  t.test('at most `concurrency` handlers at once; all jobs end', async (t) => {
    const place = await setup.fresh(t);
    const { queue } = await opened(t, place);
    let running = 0;
    let most = 0;
    let done = 0;
    const hold = gate();
    await queue.work('bounded', { concurrency: 2 }, async () => {
      running++;
      most = Math.max(most, running);
      await hold.promise;
      running--;
      done++;
    });
    for (let n = 0; n < 6; n++) await queue.send('bounded', { n });
    await until('two handlers to run', () => running === 2);
    hold.open();
    await queue.idle('bounded');
    t.equal(most, 2, 'never more than 2 at once');
    t.equal(done, 6);
  });

  t.test('a handler that throws finishes its job (not retried); the others go on', async (t) => {
    const place = await setup.fresh(t);
    const { queue } = await opened(t, place);
    const calls: number[] = [];
    await queue.work('throws', { concurrency: 1 }, async (job) => {
      calls.push(job.data.n as number);
      if (job.data.n === 1) throw new Error('handler refused');
    });
    await queue.send('throws', { n: 1 });
    await queue.send('throws', { n: 2 });
    await queue.idle('throws');
    t.same(calls.sort(), [1, 2], 'each ran once');
  });

  t.test('jobs sent while nobody works the queue are worked after a restart', async (t) => {
    const place = await setup.fresh(t);
    const first = await opened(t, place);
    for (let n = 0; n < 3; n++) await first.queue.send('later', { n }, { key: `k${n}` });
    await first.close();
    const second = await opened(t, place);
    const seen: number[] = [];
    await second.queue.work('later', { concurrency: 2 }, async (job) => {
      seen.push(job.data.n as number);
    });
    await second.queue.idle('later');
    t.same(
      seen.sort((a, b) => a - b),
      [0, 1, 2],
    );
  });

  t.test('stop() aborts running handlers; a job whose handler threw then is worked again', async (t) => {
    const place = await setup.fresh(t);
    const first = await opened(t, place);
    const started = gate();
    let reason: unknown;
    await first.queue.work('long', { concurrency: 1 }, async (job) => {
      started.open();
      await new Promise((resolve) => job.signal.addEventListener('abort', resolve));
      reason = job.signal.reason;
      throw job.signal.reason;
    });
    const sent = await first.queue.send('long', { n: 1 });
    await started.promise;
    await first.queue.stop();
    t.match(String(reason), /stopping/, 'the signal says why');
    await first.close();
    const second = await opened(t, place);
    const again: Array<Job<JobData>> = [];
    await second.queue.work('long', { concurrency: 1 }, async (job) => {
      again.push(job);
    });
    await second.queue.idle('long');
    t.equal(again.length, 1, 'worked again after the restart');
    t.equal(again[0]!.id, sent.id);
    t.equal(again[0]!.attempt, 2, 'as its second attempt');
  });

  t.test('a job whose handler resolved at stop() is not worked again', async (t) => {
    const place = await setup.fresh(t);
    const first = await opened(t, place);
    const started = gate();
    await first.queue.work('finishes', { concurrency: 1 }, async (job) => {
      started.open();
      await new Promise((resolve) => job.signal.addEventListener('abort', resolve));
    });
    await first.queue.send('finishes', { n: 1 });
    await started.promise;
    await first.close();
    const second = await opened(t, place);
    let runs = 0;
    await second.queue.work('finishes', { concurrency: 1 }, async () => {
      runs++;
    });
    await second.queue.idle('finishes');
    t.equal(runs, 0);
  });

  t.test('kill -9 of the process running a job: the job is worked again, as attempt 2', async (t) => {
    const place = await setup.fresh(t);
    const parent = await opened(t, place);
    const sent = await parent.queue.send('crash', { n: 1 }, { key: 'the-one' });
    if (setup.oneProcessAtATime) await parent.close();
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/jobs/worker.ts'], {
      cwd: REPO_ROOT,
      env: { PATH: process.env.PATH, HOME: process.env.HOME, ...place.env, JOB_QUEUE: 'crash' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise((resolve) => child.on('exit', resolve));
    t.teardown(() => {
      child.kill('SIGKILL');
      return exited;
    });
    await until('the child to start the job', () => /^started /m.test(output));
    t.match(output, `started ${sent.id} 1`, 'the child ran it as attempt 1');
    child.kill('SIGKILL');
    await exited;
    const after = setup.oneProcessAtATime ? await opened(t, place) : parent;
    const again: Array<Job<JobData>> = [];
    await after.queue.work('crash', { concurrency: 1 }, async (job) => {
      again.push(job);
    });
    await until('the job to run again', () => again.length > 0);
    await after.queue.idle('crash');
    t.equal(again.length, 1, 'worked again, once');
    t.equal(again[0]!.id, sent.id);
    t.equal(again[0]!.attempt, 2);
    t.same(await after.queue.send('crash', { n: 2 }, { key: 'the-one' }), { id: sent.id, duplicate: true });
  });

  t.test('queue names and keys are checked', async (t) => {
    const place = await setup.fresh(t);
    const { queue } = await opened(t, place);
    await t.rejects(queue.send('Bad Name', {}), JobArgumentError);
    await t.rejects(queue.send('ok', {}, { key: '' }), JobArgumentError);
    await t.rejects(queue.send('ok', {}, { key: 'x'.repeat(201) }), JobArgumentError);
    await queue.work('ok', { concurrency: 1 }, async () => {});
    await t.rejects(
      queue.work('ok', { concurrency: 1 }, async () => {}),
      JobArgumentError,
    );
  });
}
