import { createWriteStream, type WriteStream } from 'node:fs';
import { mkdir, open } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * One sandbox's output (install, build, app): the last `maxBytes` in memory for the logs endpoint and error
 * texts, everything appended to `<dataDir>/logs/<id>.log`, which outlives the sandbox for post-mortems.
 */
export class LogSink {
  private chunks: Buffer[] = [];
  private size = 0;
  private readonly file: WriteStream;

  constructor(
    readonly path: string,
    private readonly maxBytes: number,
  ) {
    this.file = createWriteStream(path, { flags: 'a', mode: 0o600 });
    this.file.on('error', () => {}); // a full disk must not crash Twinbox; the ring buffer still works
  }

  write(data: Buffer | string): void {
    const chunk = typeof data === 'string' ? Buffer.from(data) : data;
    this.file.write(chunk);
    this.chunks.push(chunk);
    this.size += chunk.length;
    while (this.size > this.maxBytes) {
      const first = this.chunks[0]!;
      const excess = this.size - this.maxBytes;
      if (first.length <= excess) {
        this.chunks.shift();
        this.size -= first.length;
      } else {
        this.chunks[0] = first.subarray(excess);
        this.size -= excess;
      }
    }
  }

  /** A line from Twinbox itself, marked so it stands out from the app's output. */
  note(text: string): void {
    this.write(`[twinbox ${new Date().toISOString()}] ${text}\n`);
  }

  text(): string {
    return Buffer.concat(this.chunks).toString('utf8');
  }

  /** The last `lines` lines, for error texts. */
  tail(lines: number): string {
    return this.text().split('\n').filter(Boolean).slice(-lines).join('\n');
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.file.end(resolve));
  }
}

/** Log sinks of live sandboxes, and the files of ended ones. */
export class SandboxLogs {
  private readonly live = new Map<string, LogSink>();

  constructor(
    private readonly dir: string,
    private readonly maxBytes: number,
  ) {}

  async open(sandboxId: string): Promise<LogSink> {
    const existing = this.live.get(sandboxId);
    if (existing) return existing;
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    const sink = new LogSink(this.pathOf(sandboxId), this.maxBytes);
    this.live.set(sandboxId, sink);
    return sink;
  }

  get(sandboxId: string): LogSink | undefined {
    return this.live.get(sandboxId);
  }

  async close(sandboxId: string): Promise<void> {
    const sink = this.live.get(sandboxId);
    this.live.delete(sandboxId);
    await sink?.close();
  }

  /** The last `maxBytes` of a sandbox's log, live or from its file; '' when it never logged. */
  async read(sandboxId: string): Promise<string> {
    const sink = this.live.get(sandboxId);
    if (sink) return sink.text();
    try {
      const handle = await open(this.pathOf(sandboxId), 'r');
      try {
        const { size } = await handle.stat();
        const length = Math.min(size, this.maxBytes);
        const buffer = Buffer.alloc(length);
        await handle.read(buffer, 0, length, size - length);
        return buffer.toString('utf8');
      } finally {
        await handle.close();
      }
    } catch {
      return '';
    }
  }

  private pathOf(sandboxId: string): string {
    return join(this.dir, `${encodeURIComponent(sandboxId)}.log`);
  }
}
