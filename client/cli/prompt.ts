import { createInterface, type Interface } from 'node:readline';

/**
 * Reads answers a line at a time from stdin. Lines are buffered from the first prompt on, so a script
 * that pipes its answers in before we ask still gets them read in order.
 */
export class Prompter {
  private rl: Interface | undefined;
  private lines: AsyncIterator<string> | undefined;

  constructor(
    private readonly input: NodeJS.ReadableStream = process.stdin,
    private readonly output: NodeJS.WritableStream = process.stderr,
  ) {}

  /** The answer, trimmed; undefined when stdin ended first. */
  async ask(question: string): Promise<string | undefined> {
    this.output.write(question);
    if (!this.lines) {
      this.rl = createInterface({ input: this.input, terminal: false });
      this.lines = this.rl[Symbol.asyncIterator]();
    }
    const next = await this.lines.next();
    return next.done ? undefined : next.value.trim();
  }

  close(): void {
    this.rl?.close();
  }
}
