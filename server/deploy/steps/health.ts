import { request } from 'node:http';

/** Where an app answers: a path behind its pod's Unix socket (the app may be in its own network namespace). */
export type HttpTarget = { socketPath: string; path: string };

function statusOf(target: HttpTarget, timeoutMs: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const options = { ...target, headers: { host: 'localhost' } };
    const req = request({ ...options, timeout: timeoutMs }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('timeout', () => req.destroy(new Error('no answer within the attempt')));
    req.on('error', reject);
    req.end();
  });
}

/**
 * Waits until `target` answers HTTP with a status below 500, polling. Rejects when `exited` settles first
 * (the app died), when `timeoutMs` passes, or when `signal` aborts. The reason is in the Error's message.
 */
export async function waitForHttp(
  target: HttpTarget,
  opts: { timeoutMs: number; exited: Promise<string>; signal?: AbortSignal; intervalMs?: number },
): Promise<void> {
  const deadline = Date.now() + opts.timeoutMs;
  let died: string | undefined;
  void opts.exited.then((reason) => (died = reason));
  let lastProblem = 'no answer yet';
  while (true) {
    if (died !== undefined) throw new Error(died);
    if (opts.signal?.aborted) throw new Error('deploy cancelled');
    const remaining = deadline - Date.now();
    if (remaining <= 0) throw new Error(`timed out (${lastProblem})`);
    try {
      const status = await statusOf(target, Math.min(2000, remaining));
      if (status < 500 && status > 0) return;
      lastProblem = `last answer: HTTP ${status}`;
    } catch (error) {
      lastProblem = `last attempt: ${(error as Error).message}`;
    }
    await new Promise((resolve) => setTimeout(resolve, opts.intervalMs ?? 50));
  }
}
