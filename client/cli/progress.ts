import { formatDuration } from '../client.ts';
import type { Sandbox } from '../types.ts';

/**
 * Progress of `create --wait`, on stderr so stdout stays clean for `--json`. A terminal gets one line
 * rewritten in place; a pipe or CI log gets a line per status change, not one per poll.
 */
export class ProgressDisplay {
  private last: string | undefined;
  private frame = 0;
  private static readonly FRAMES = ['-', '\\', '|', '/'];

  constructor(private readonly out: NodeJS.WriteStream = process.stderr) {}

  update(sandbox: Sandbox, elapsedMs: number): void {
    const text = `Sandbox ${sandbox.sandbox_id}: ${sandbox.status} (${formatDuration(elapsedMs)})`;
    if (this.out.isTTY) {
      const spinner = ProgressDisplay.FRAMES[this.frame++ % ProgressDisplay.FRAMES.length];
      this.out.write(`\r\x1b[2K${spinner} ${text}`);
    } else if (sandbox.status !== this.last) {
      this.out.write(`${text}\n`);
    }
    this.last = sandbox.status;
  }

  /** Ends the in-place line so what follows starts on a fresh one. */
  done(): void {
    if (this.out.isTTY && this.last) this.out.write('\n');
  }
}
