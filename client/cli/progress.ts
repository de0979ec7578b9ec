import { formatDuration } from '../client.ts';
import type { Sandbox } from '../types.ts';

/** Writes what a progress line needs: a stream, and whether it is a terminal. */
export interface ProgressOutput {
  write(text: string): unknown;
  isTTY?: boolean;
}

/**
 * Progress of `create --wait`, on stderr so stdout stays clean for `--json`. A terminal gets one line
 * rewritten in place, its clock ticking every second between polls (which back off to 5 s apart); a
 * pipe or CI log gets a line per status change, not one per poll, each with the time waited so far.
 */
export class ProgressDisplay {
  private last: Sandbox | undefined;
  private frame = 0;
  private started = Date.now();
  private ticker: NodeJS.Timeout | undefined;
  private static readonly FRAMES = ['-', '\\', '|', '/'];

  constructor(
    private readonly out: ProgressOutput = process.stderr,
    private readonly tickMs = 1000,
  ) {}

  /** `elapsedMs` is counted from the start of the wait, which the display then keeps counting. */
  update(sandbox: Sandbox, elapsedMs: number): void {
    this.started = Date.now() - elapsedMs;
    const changed = sandbox.status !== this.last?.status;
    this.last = sandbox;
    if (this.out.isTTY) {
      this.draw();
      // Started on the first poll, so nothing is drawn before the "waiting" line.
      this.ticker ??= setInterval(() => this.draw(), this.tickMs).unref();
    } else if (changed) {
      this.out.write(`${this.text()}\n`);
    }
  }

  /** Ends the in-place line so what follows starts on a fresh one. */
  done(): void {
    clearInterval(this.ticker);
    this.ticker = undefined;
    if (this.out.isTTY && this.last) this.out.write('\n');
  }

  private text(): string {
    const sandbox = this.last!;
    return `Sandbox ${sandbox.sandbox_id}: ${sandbox.status} (${formatDuration(Date.now() - this.started)})`;
  }

  private draw(): void {
    const spinner = ProgressDisplay.FRAMES[this.frame++ % ProgressDisplay.FRAMES.length];
    this.out.write(`\r\x1b[2K${spinner} ${this.text()}`);
  }
}
