import { closeSync, fstatSync, openSync, renameSync, writeSync } from 'node:fs';
import { mkdir, open, stat } from 'node:fs/promises';
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
 *
 * Every byte has an offset: its position in everything the sink was ever given (plus `startOffset`, where
 * a reopened log's file ended). The buffer and the files drop old bytes, but offsets never move, so a
 * reader can ask for "what came after offset N" across rotations (SandboxLogs.slice).
 */
export class LogSink {
  private chunks: Buffer[] = [];
  private size = 0;
  private fd: number | undefined;
  private fileBytes = 0;
  private readonly half: number;
  /** The offset just past the last byte written. */
  private total: number;
  /** Settled by the next write (nextWrite): one promise, however many callers wait. */
  private written: { promise: Promise<void>; resolve: () => void } | undefined;

  constructor(
    readonly path: string,
    private readonly maxBytes: number,
    readonly maxFileBytes = DEFAULT_LOG_FILE_BYTES,
    /** The offset of the end of what `path` already holds (appended to), when a log is reopened. */
    startOffset?: number,
  ) {
    this.half = Math.max(1, Math.floor(maxFileBytes / 2));
    this.openFile();
    this.total = startOffset ?? this.fileBytes;
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

  /** Resolves at the next write: a caller polling the process for readiness looks again at once. */
  nextWrite(): Promise<void> {
    if (!this.written) {
      let resolve = () => {};
      const promise = new Promise<void>((settle) => (resolve = settle));
      this.written = { promise, resolve };
    }
    return this.written.promise;
  }

  write(data: Buffer | string): void {
    const chunk = typeof data === 'string' ? Buffer.from(data) : data;
    this.written?.resolve();
    this.written = undefined;
    this.toFile(chunk);
    this.total += chunk.length;
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

  /** The offset just past the last byte written: where the next byte will be. */
  get end(): number {
    return this.total;
  }

  /** The bytes kept in memory from `offset` on (from the oldest kept one when `offset` is older). */
  bytesFrom(offset: number): { data: Buffer; start: number } {
    const oldest = this.total - this.size;
    const start = Math.min(Math.max(offset, oldest), this.total);
    return { data: Buffer.concat(this.chunks).subarray(start - oldest), start };
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

/** The last `length` bytes of a file, or fewer, and the file's size; empty when it does not exist. */
async function lastBytes(path: string, length: number): Promise<{ data: Buffer; size: number }> {
  try {
    const handle = await open(path, 'r');
    try {
      const { size } = await handle.stat();
      const n = Math.min(size, length);
      const buffer = Buffer.alloc(n);
      await handle.read(buffer, 0, n, size - n);
      return { data: buffer, size };
    } finally {
      await handle.close();
    }
  } catch {
    return { data: Buffer.alloc(0), size: 0 };
  }
}

async function sizeOf(path: string): Promise<number> {
  try {
    return (await stat(path)).size;
  } catch {
    return 0;
  }
}

/**
 * Part of a sandbox's log from an offset on. Offsets count bytes from the start of the sandbox's output;
 * `start` is past the asked offset when the bytes there are no longer kept, and both ends fall on
 * character boundaries, so `text` never holds half of a UTF-8 character.
 */
export interface LogSlice {
  text: string;
  /** Offset of the first byte of `text`. */
  start: number;
  /** Offset just past `text`: ask from here next time. */
  end: number;
  /** The log is still being written (the sandbox's deploy or app runs). */
  open: boolean;
}

/** Ended logs remembered at most, for offsets that differ from what their files alone would give. */
const MAX_REMEMBERED_ENDS = 10_000;

/** Log sinks of live sandboxes, and the files of ended ones. */
export class SandboxLogs {
  private readonly live = new Map<string, LogSink>();
  /**
   * Where closed logs ended, for those whose files no longer hold all they were given (rotation dropped
   * the oldest output): their files' bytes keep the offsets they had while live. Otherwise, and after a
   * restart, a log's files are taken to hold it from offset 0.
   */
  private readonly ends = new Map<string, number>();

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
    const path = this.pathOf(sandboxId);
    const end = this.ends.get(sandboxId) ?? (await sizeOf(`${path}.1`)) + (await sizeOf(path));
    const sink = new LogSink(path, this.maxBytes, this.maxFileBytes, end);
    this.live.set(sandboxId, sink);
    return sink;
  }

  get(sandboxId: string): LogSink | undefined {
    return this.live.get(sandboxId);
  }

  async close(sandboxId: string): Promise<void> {
    const sink = this.live.get(sandboxId);
    this.live.delete(sandboxId);
    if (!sink) return;
    await sink.close();
    const path = this.pathOf(sandboxId);
    const onDisk = (await sizeOf(`${path}.1`)) + (await sizeOf(path));
    this.ends.delete(sandboxId);
    if (sink.end !== onDisk) {
      this.ends.set(sandboxId, sink.end);
      // Oldest first out: a Map iterates in insertion order.
      if (this.ends.size > MAX_REMEMBERED_ENDS) this.ends.delete(this.ends.keys().next().value!);
    }
  }

  /** The last `maxBytes` of a sandbox's log, live or from its files (newest last); '' when it never logged. */
  async read(sandboxId: string): Promise<string> {
    const sink = this.live.get(sandboxId);
    if (sink) return sink.text();
    return (await this.kept(sandboxId)).data.toString('utf8');
  }

  /**
   * The log from `offset` on, within what `read` would give (the last `maxBytes`): older bytes are gone
   * from the answer, and `start` says where it begins. An offset past the end gets an empty slice at
   * the end, so a reader holding an offset from before a restart finds where the log stands now.
   */
  async slice(sandboxId: string, offset: number): Promise<LogSlice> {
    const sink = this.live.get(sandboxId);
    const { data, start } = sink ? sink.bytesFrom(offset) : await this.keptFrom(sandboxId, offset);
    const head = leadingContinuationBytes(data);
    const tail = data.length - incompleteTail(data);
    const whole = head <= tail ? data.subarray(head, tail) : Buffer.alloc(0);
    return {
      text: whole.toString('utf8'),
      start: start + Math.min(head, tail),
      end: start + Math.min(head, tail) + whole.length,
      open: sink !== undefined,
    };
  }

  /** The last `maxBytes` of a closed log's files, and the offset of their first byte. */
  private async kept(sandboxId: string): Promise<{ data: Buffer; start: number }> {
    const path = this.pathOf(sandboxId);
    const newest = await lastBytes(path, this.maxBytes);
    const older = await lastBytes(`${path}.1`, this.maxBytes - newest.data.length);
    const data = older.data.length ? Buffer.concat([older.data, newest.data]) : newest.data;
    const end = this.ends.get(sandboxId) ?? older.size + newest.size;
    return { data, start: end - data.length };
  }

  private async keptFrom(sandboxId: string, offset: number): Promise<{ data: Buffer; start: number }> {
    const { data, start: oldest } = await this.kept(sandboxId);
    const end = oldest + data.length;
    const start = Math.min(Math.max(offset, oldest), end);
    return { data: data.subarray(start - oldest), start };
  }

  private pathOf(sandboxId: string): string {
    return join(this.dir, `${encodeURIComponent(sandboxId)}.log`);
  }
}

/** UTF-8 continuation bytes (10xxxxxx) at the start: the rest of a character that began earlier. */
function leadingContinuationBytes(data: Buffer): number {
  let n = 0;
  while (n < Math.min(3, data.length) && (data[n]! & 0xc0) === 0x80) n++;
  return n;
}

/** Bytes at the end that begin a UTF-8 character whose other bytes have not been written yet. */
function incompleteTail(data: Buffer): number {
  for (let back = 1; back <= Math.min(4, data.length); back++) {
    const byte = data[data.length - back]!;
    if ((byte & 0xc0) === 0x80) continue; // a continuation byte: the lead is further back
    const length = byte >= 0xf0 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc0 ? 2 : 1;
    return length > back ? back : 0;
  }
  return 0;
}
