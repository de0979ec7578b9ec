/**
 * Waits until `url` answers HTTP with a status below 500, polling. Rejects when `exited` settles first
 * (the app died), when `timeoutMs` passes, or when `signal` aborts. The reason is in the Error's message.
 */
export async function waitForHttp(
  url: string,
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
      const response = await fetch(url, {
        signal: AbortSignal.timeout(Math.min(2000, remaining)),
        redirect: 'manual',
      });
      await response.body?.cancel();
      if (response.status < 500) return;
      lastProblem = `last answer: HTTP ${response.status}`;
    } catch (error) {
      lastProblem = `last attempt: ${(error as Error).cause ? String((error as Error & { cause: Error }).cause.message ?? (error as Error).cause) : (error as Error).message}`;
    }
    await new Promise((resolve) => setTimeout(resolve, opts.intervalMs ?? 50));
  }
}
