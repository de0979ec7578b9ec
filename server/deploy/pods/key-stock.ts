import { makeRsaKey } from '../../twins/runtime/rsa-keys.ts';

/**
 * RSA keys Twinbox makes ahead for pods (server/twins/runtime/rsa-keys.ts): a pod that must start a twin
 * which makes one (the GitHub twin's App key) before it could make the key itself, a first pod after a
 * start or a spare a deploy takes while it still starts, is given one of these instead of a prime search
 * of 100-500 ms of a core on its deploy's path. One key is kept (a pod that warmed makes its own, off any
 * deploy's path); it is made at `fill`, one at a time, on libuv's pool, never on the event loop. Each key
 * is given once.
 */
export class RsaKeyStock {
  private readonly made: string[] = [];
  private making: Promise<void> | undefined;
  private stopped = false;

  constructor(private readonly size = 1) {}

  /** Starts making keys until `size` are in stock; what is made or being made is not made again. */
  fill(): void {
    if (this.stopped || this.making || this.made.length >= this.size) return;
    const making = makeRsaKey().then(
      (key) => {
        if (!this.stopped) this.made.push(key);
      },
      // A failure is not kept: a pod without a key makes its own, and the next fill tries again.
      () => {},
    );
    this.making = making.finally(() => {
      this.making = undefined;
      // One at a time: the next only once this one is made, so a stock never takes both cores.
      if (this.made.length < this.size) this.fill();
    });
  }

  /** How many keys are in stock now. */
  get stocked(): number {
    return this.made.length;
  }

  /** Up to `count` keys in stock now, taken; none are waited for. */
  takeNow(count: number): string[] {
    return this.made.splice(0, count);
  }

  /**
   * Up to `count` keys: those in stock, else the one being made once it is (a pod that reads its keys
   * later than they come still gets them). Resolves with fewer, or none, rather than waiting for a key
   * not yet begun.
   */
  async take(count: number): Promise<string[]> {
    if (count <= 0) return [];
    if (this.made.length === 0 && this.making) await this.making;
    return this.takeNow(count);
  }

  /** Drops the keys in stock and makes no more. */
  stop(): void {
    this.stopped = true;
    this.made.length = 0;
  }
}
