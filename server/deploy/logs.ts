import { closeSync, fstatSync, openSync, renameSync, writeSync } from 'node:fs';
import { mkdir, open } from 'node:fs/promises';
import { join } from 'node:path';

/** The on-disk cap when the caller names none (TWINBOX_APP_LOG_FILE_BYTES's default). */
export const DEFAULT_LOG_FILE_BYTES = 16 * 1024 * 1024;

/**
 * One sandbox's output (install, build, app): the last `maxBytes` in memory for the logs endpoint and error
 * texts, and on disk `<id>.log` plus one older `<id>.log.1`, which outlive the sandbox for post-mortems.
 * Each file holds at most half of `maxFileBytes`: when `<id>.log` would pass that it becomes `<id>.log.1`
 * (replacing the older one) and a new `<id>.log` starts, so the two never take more than `maxFileBytes`
 * however much an app prints.
 *
 * Writes are synchronous: a chunk from a pipe (64 KiB at most) into the page cache takes microseconds, and
 * unlike a stream nothing queues in Twinbox's memory when an app prints faster than the disk takes it.
 */
export class LogSink {
  private chunks: Buffer[] = [];
  private size = 0;
  private fd: number | undefined;
  private fileBytes = 0;
  private readonly half: number;

  constructor(
    readonly path: string,
    private readonly maxBytes: number,
    readonly maxFileBytes = DEFAULT_LOG_FILE_BYTES,
  ) {
    this.half = Math.max(1, Math.floor(maxFileBytes / 2));
    this.openFile();
  }

  private openFile(): void {
    try {
      this.fd = openSync(this.path, 'a', 0o600);
      this.fileBytes = fstatSync(this.fd).size;
    } catch {
      this.fd = undefined; // no log file (disk gone): the ring buffer still works
    }
  }

  private closeFile(): void {
    if (this.fd === undefined) return;
    try {
      closeSync(this.fd);
    } catch {
      // already closed
    }
    this.fd = undefined;
  }

  private rotate(): void {
    this.closeFile();
    try {
      renameSync(this.path, `${this.path}.1`);
    } catch {
      // nothing to keep
    }
    this.openFile();
  }

  private toFile(chunk: Buffer): void {
    if (this.fd === undefined) return;
    const data = chunk.length > this.half ? chunk.subarray(chunk.length - this.half) : chunk;
    if (this.fileBytes + data.length > this.half) {
      this.rotate();
      if (this.fd === undefined) return;
    }
    try {
      writeSync(this.fd, data);
    } catch {
      // a full disk must not crash Twinbox
    }
    // Counted as written even when it failed: the cap must hold, whatever a retry would add.
    this.fileBytes += data.length;
  }

  write(data: Buffer | string): void {
    const chunk = typeof data === 'string' ? Buffer.from(data) : data;
    this.toFile(chunk);
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
    this.closeFile();
    return Promise.resolve();
  }
}

/** The last `length` bytes of a file, or fewer; empty when it does not exist. */
async function lastBytes(path: string, length: number): Promise<Buffer> {
  try {
    const handle = await open(path, 'r');
    try {
      const { size } = await handle.stat();
      const n = Math.min(size, length);
      const buffer = Buffer.alloc(n);
      await handle.read(buffer, 0, n, size - n);
      return buffer;
    } finally {
      await handle.close();
    }
  } catch {
    return Buffer.alloc(0);
  }
}

/** Log sinks of live sandboxes, and the files of ended ones. */
export class SandboxLogs {
  private readonly live = new Map<string, LogSink>();

  constructor(
    private readonly dir: string,
    private readonly maxBytes: number,
    /** Cap on disk per sandbox, both files together (TWINBOX_APP_LOG_FILE_BYTES). */
    private readonly maxFileBytes = DEFAULT_LOG_FILE_BYTES,
  ) {}

  async open(sandboxId: string): Promise<LogSink> {
    const existing = this.live.get(sandboxId);
    if (existing) return existing;
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    const sink = new LogSink(this.pathOf(sandboxId), this.maxBytes, this.maxFileBytes);
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

  /** The last `maxBytes` of a sandbox's log, live or from its files (newest last); '' when it never logged. */
  async read(sandboxId: string): Promise<string> {
    const sink = this.live.get(sandboxId);
    if (sink) return sink.text();
    const path = this.pathOf(sandboxId);
    const newest = await lastBytes(path, this.maxBytes);
    const older =
      newest.length < this.maxBytes
        ? await lastBytes(`${path}.1`, this.maxBytes - newest.length)
        : Buffer.alloc(0);
    return Buffer.concat([older, newest]).toString('utf8');
  }

  private pathOf(sandboxId: string): string {
    return join(this.dir, `${encodeURIComponent(sandboxId)}.log`);
  }
}
