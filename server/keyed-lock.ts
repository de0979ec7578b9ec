/**
 * Runs tasks one after another per key, in the order they were asked for; different keys run at once.
 * In memory: it orders work within one process only.
 */
export class KeyedLock {
  private readonly tails = new Map<string, Promise<void>>();

  run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    const run = previous.then(task, task);
    const settled = run.then(
      () => undefined,
      () => undefined,
    );
    this.tails.set(key, settled);
    void settled.then(() => {
      if (this.tails.get(key) === settled) this.tails.delete(key);
    });
    return run;
  }

  /** True while `key` has work running or waiting. */
  busy(key: string): boolean {
    return this.tails.has(key);
  }

  /** Resolves once no key has work running or waiting. */
  async idle(): Promise<void> {
    while (this.tails.size) await Promise.all(this.tails.values());
  }
}
