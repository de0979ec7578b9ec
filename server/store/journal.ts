import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdir, open, readdir, readFile, rename, unlink, writeFile, type FileHandle } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { crc32 } from 'node:zlib';
import { syncDirectory, writeFileDurably } from '../durable-write.ts';
import { SAFE_RECORD_ID, StoreClosedError } from './store.ts';

/**
 * The embedded store's write-ahead journal. A write appends one line, `<crc32> {"p":<file>,"r":<record
 * or null>}`, to `<store>/journal-<n>.log`, and resolves once an `fdatasync` covers it: every write
 * arriving while one batch syncs goes into the next (group commit), so a burst of creates costs a few
 * syncs of one file instead of an fsync, a rename and a directory fsync per record. The one-file-per-record
 * folders stay the store's shape at rest: a checkpoint writes each journalled record to its file, makes
 * them durable (writeDurably: each fsynced, or many at once by a `syncfs`), and only then removes that
 * journal. Opening
 * replays whatever journals a stop left (oldest first) onto the files the same way, before the
 * collections load them.
 *
 * A line is trusted only whole, with its checksum and a file name of a known collection: a torn last
 * line (never acknowledged: its sync did not finish) is dropped; a damaged line elsewhere stops that
 * journal's replay there, with a warning, and the journal is kept aside as `.unreadable`.
 */
export class StoreJournal {
  /** The generation being appended to. */
  private current: Generation;
  /** Appended and synced, waiting for their checkpoint; always checkpointed oldest first. */
  private readonly retired: Generation[] = [];
  private queue: Pending[] = [];
  private pumping: Promise<void> | undefined;
  private draining: Promise<void> | undefined;
  private ageTimer: NodeJS.Timeout | undefined;
  private closed = false;
  /** Set when an append could not be undone: the journal's tail is unknown, so nothing more is taken. */
  private broken: Error | undefined;

  private constructor(
    private readonly root: string,
    first: Generation,
    private readonly limits: JournalLimits,
    private readonly durability: Durability,
  ) {
    this.current = first;
  }

  /**
   * Replays the journals left under `root` onto the record files of `tables` and starts a new one.
   * Resolves once the replayed records are durable in their files.
   */
  static async open(
    root: string,
    tables: Iterable<string>,
    options: JournalOptions = {},
  ): Promise<StoreJournal> {
    const limits = { maxBytes: options.maxBytes ?? 32 * 1024 * 1024, maxAgeMs: options.maxAgeMs ?? 30_000 };
    const durability: Durability = {
      syncFileSystem: options.syncFileSystem ?? syncFileSystemOf,
      syncEachUpTo: options.syncEachUpTo ?? 256,
    };
    await mkdir(root, { recursive: true, mode: 0o700 });
    const known = new Set(tables);
    const left = (await readdir(root))
      .map((name) => ({ name, seq: journalSeq(name) }))
      .filter((entry): entry is { name: string; seq: number } => entry.seq !== undefined)
      .sort((a, b) => a.seq - b.seq);
    const latest = new Map<string, string | null>();
    const damaged: string[] = [];
    for (const { name } of left) {
      const path = join(root, name);
      const read = readJournal(await readFile(path, 'utf8'), known);
      for (const [file, record] of read.entries) latest.set(file, record);
      if (read.damagedAt !== undefined) {
        damaged.push(path);
        process.emitWarning(
          `Twinbox store: ${path} is damaged at line ${read.damagedAt}; the lines before it were replayed, ` +
            `and the journal is kept as ${path}.unreadable`,
        );
      }
    }
    if (left.length > 0) {
      // Nothing else runs yet: as fast as the pool goes.
      await writeDurably(root, latest, 32, durability);
      for (const { name } of left) {
        const path = join(root, name);
        if (damaged.includes(path)) await rename(path, `${path}.unreadable`);
        else await unlink(path);
      }
      await syncDirectory(root);
    }
    const next = (left.at(-1)?.seq ?? 0) + 1;
    return new StoreJournal(root, await openGeneration(root, next), limits, durability);
  }

  /**
   * Journals `record` (its JSON text; null for a removal) as the content of `<table>/<id>.json`.
   * Resolves once the line is synced to disk. Writes to one record must not overlap: the collection
   * chains them, so their lines land in the order they were made.
   */
  write(table: string, id: string, record: string | null): Promise<void> {
    if (this.closed) return Promise.reject(new StoreClosedError(table));
    if (this.broken) return Promise.reject(this.broken);
    const file = `${table}/${id}.json`;
    const body = `{"p":${JSON.stringify(file)},"r":${record ?? 'null'}}`;
    return new Promise((resolve, reject) => {
      this.queue.push({ line: `${checksum(body)} ${body}\n`, file, record, resolve, reject });
      this.pump();
    });
  }

  /**
   * Refuses writes from now on, syncs those already taken, and checkpoints every journal, so the next
   * start has nothing to replay. A checkpoint that fails leaves its journal for that start.
   */
  async close(): Promise<void> {
    if (this.closed) {
      while (this.draining) await this.draining;
      return;
    }
    this.closed = true;
    clearTimeout(this.ageTimer);
    while (this.pumping) await this.pumping;
    while (this.draining) await this.draining;
    this.retired.push(this.current);
    await this.drain();
  }

  private pump(): void {
    this.pumping ??= this.appendAll().finally(() => {
      this.pumping = undefined;
      // A write queued after the loop's last look.
      if (this.queue.length > 0) this.pump();
    });
  }

  private async appendAll(): Promise<void> {
    do {
      if (this.queue.length > 0) {
        const batch = this.queue;
        this.queue = [];
        await this.append(batch);
      }
      // Between batches, so a journal's last batch is synced before the next journal's first.
      if (this.due() && !this.closed) await this.rotate();
    } while (this.queue.length > 0);
  }

  /** Appends `batch` at the end of the good data and syncs it; on failure, cuts the file back. */
  private async append(batch: Pending[]): Promise<void> {
    const generation = this.current;
    const bytes = Buffer.from(batch.map((pending) => pending.line).join(''));
    try {
      if (this.broken) throw this.broken;
      let written = 0;
      while (written < bytes.length) {
        const { bytesWritten } = await generation.handle.write(
          bytes,
          written,
          bytes.length - written,
          generation.size + written,
        );
        written += bytesWritten;
      }
      await generation.handle.datasync();
    } catch (error) {
      // A half-written batch would hide every later line from replay: cut it off, or stop taking writes.
      await generation.handle.truncate(generation.size).catch((cut: Error) => {
        this.broken ??= new JournalBrokenError(generation.path, cut);
      });
      for (const pending of batch) pending.reject(error as Error);
      return;
    }
    generation.size += bytes.length;
    if (generation.firstAt === undefined) {
      generation.firstAt = Date.now();
      this.ageTimer = setTimeout(() => this.pump(), this.limits.maxAgeMs).unref();
    }
    for (const pending of batch) {
      generation.latest.set(pending.file, pending.record);
      pending.resolve();
    }
  }

  private due(): boolean {
    const { size, firstAt } = this.current;
    return (
      size >= this.limits.maxBytes || (firstAt !== undefined && Date.now() - firstAt >= this.limits.maxAgeMs)
    );
  }

  /** Starts the next journal and hands this one to a checkpoint. */
  private async rotate(): Promise<void> {
    clearTimeout(this.ageTimer);
    const next = await openGeneration(this.root, this.current.seq + 1).catch(() => undefined);
    // Could not start one (the disk is full, say): keep appending here and try again at the next batch.
    if (!next) return;
    this.retired.push(this.current);
    this.current = next;
    void this.drain();
  }

  /** Checkpoints the retired journals, oldest first; one that fails stays first, for the next try. */
  private drain(): Promise<void> {
    this.draining ??= this.checkpointAll().then((done) => {
      this.draining = undefined;
      // One retired while the loop was ending.
      if (done && this.retired.length > 0) return this.drain();
    });
    return this.draining;
  }

  private async checkpointAll(): Promise<boolean> {
    while (this.retired.length > 0) {
      const generation = this.retired[0]!;
      try {
        await generation.handle.close().catch(() => {});
        // One file at a time, behind the writes: a pool full of checkpoint writes held each batch's
        // append and fdatasync back (POST /sandboxes fell from ~1,500/s to ~400/s while one ran).
        await writeDurably(this.root, generation.latest, 1, this.durability);
        await unlink(generation.path);
        await syncDirectory(this.root);
      } catch (error) {
        process.emitWarning(
          `Twinbox store: the checkpoint of ${generation.path} failed (${(error as Error).message}); ` +
            'it stays on disk, to be tried again and replayed at the next start',
        );
        return false;
      }
      this.retired.shift();
    }
    return true;
  }
}

export interface JournalOptions {
  /** A journal this long is checkpointed (32 MiB). */
  maxBytes?: number;
  /** A journal whose first line is this old is checkpointed (30 s), so a quiet store replays little. */
  maxAgeMs?: number;
  /** Makes every file written under the path durable; `sync -f` by default. */
  syncFileSystem?: (path: string) => Promise<void>;
  /** Up to this many files (256), a checkpoint fsyncs each instead of syncing the file system. */
  syncEachUpTo?: number;
}

interface Durability {
  syncFileSystem: (path: string) => Promise<void>;
  syncEachUpTo: number;
}

/**
 * Writes each file of `latest` and makes them all durable. A few are each written durably (fsync, rename,
 * shared directory fsync: durable-write.ts); many are written plainly and made durable by one syncfs.
 * A syncfs flushes everything every program wrote to the file system and waits for it: for the few
 * records a quiet Twinbox (or a test's) writes between checkpoints, their own fsyncs cost less and wait
 * for nothing else.
 */
async function writeDurably(
  root: string,
  latest: ReadonlyMap<string, string | null>,
  parallel: number,
  durability: Durability,
): Promise<void> {
  if (latest.size <= durability.syncEachUpTo) {
    await materialize(root, latest, Math.max(parallel, 4), true);
    return;
  }
  await materialize(root, latest, parallel, false);
  await durability.syncFileSystem(root);
}

/** The append could not be undone, so the journal's end is unknown; the store takes no more writes. */
export class JournalBrokenError extends Error {
  constructor(
    readonly path: string,
    cause: Error,
  ) {
    super(`Twinbox store: the journal ${path} could not be cut back after a failed write: ${cause.message}`, {
      cause,
    });
    this.name = 'JournalBrokenError';
  }
}

type JournalLimits = Required<Pick<JournalOptions, 'maxBytes' | 'maxAgeMs'>>;

interface Pending {
  line: string;
  file: string;
  record: string | null;
  resolve: () => void;
  reject: (error: Error) => void;
}

interface Generation {
  seq: number;
  path: string;
  handle: FileHandle;
  /** Bytes known synced: the next batch goes here, and a failed one is cut back to here. */
  size: number;
  firstAt?: number;
  /** Each file's content after this journal's last line about it (null: removed). */
  latest: Map<string, string | null>;
}

const JOURNAL_NAME = /^journal-(\d{1,15})\.log$/;

/** The number of a journal's file name (`journal-<n>.log`), or undefined for any other name. */
export function journalSeq(name: string): number | undefined {
  const match = JOURNAL_NAME.exec(name);
  return match ? Number(match[1]) : undefined;
}

async function openGeneration(root: string, seq: number): Promise<Generation> {
  const path = join(root, `journal-${seq}.log`);
  const handle = await open(path, 'wx', 0o600);
  try {
    // Its name must survive a crash for its lines to be found.
    await syncDirectory(root);
  } catch (error) {
    await handle.close();
    await unlink(path).catch(() => {});
    throw error;
  }
  return { seq, path, handle, size: 0, latest: new Map() };
}

function checksum(body: string): string {
  return crc32(body).toString(16).padStart(8, '0');
}

/** The whole, checked lines of one journal, and the line number of the first damaged one, if any. */
export function readJournal(
  text: string,
  tables: ReadonlySet<string>,
): { entries: [string, string | null][]; damagedAt?: number } {
  const lines = text.split('\n');
  // The text after the last newline is a line whose append never finished: never acknowledged.
  lines.pop();
  const entries: [string, string | null][] = [];
  for (const [index, line] of lines.entries()) {
    const entry = parseLine(line, tables);
    if (!entry) return { entries, damagedAt: index + 1 };
    entries.push(entry);
  }
  return { entries };
}

function parseLine(line: string, tables: ReadonlySet<string>): [string, string | null] | undefined {
  const body = line.slice(9);
  if (line[8] !== ' ' || line.slice(0, 8) !== checksum(body)) return undefined;
  let entry: { p?: unknown; r?: unknown };
  try {
    entry = JSON.parse(body) as typeof entry;
  } catch {
    return undefined;
  }
  const file = typeof entry.p === 'string' ? entry.p.split('/') : [];
  const [table, name] = file;
  if (file.length !== 2 || !tables.has(table!) || !name!.endsWith('.json')) return undefined;
  if (!SAFE_RECORD_ID.test(name!.slice(0, -'.json'.length))) return undefined;
  if (entry.r !== null && (typeof entry.r !== 'object' || Array.isArray(entry.r))) return undefined;
  return [entry.p as string, entry.r === null ? null : JSON.stringify(entry.r)];
}

/**
 * Writes each file's content or removes it, `parallel` files at a time (each is an open, a write, a close
 * and a rename on libuv's pool of four threads): `durably`, each with its fsyncs; else none, for the
 * caller to sync the file system once.
 */
async function materialize(
  root: string,
  latest: ReadonlyMap<string, string | null>,
  parallel: number,
  durably: boolean,
): Promise<void> {
  const folders = new Set<string>();
  for (const file of latest.keys()) folders.add(file.split('/')[0]!);
  for (const folder of folders) await mkdir(join(root, folder), { recursive: true, mode: 0o700 });
  const files = [...latest];
  for (let at = 0; at < files.length; at += parallel) {
    await Promise.all(
      files.slice(at, at + parallel).map(async ([file, record]) => {
        const path = join(root, file);
        if (record === null) {
          await unlink(path).catch((error: NodeJS.ErrnoException) => {
            if (error.code !== 'ENOENT') throw error;
          });
          if (durably) await syncDirectory(dirname(path));
          return;
        }
        if (durably) return writeFileDurably(path, record);
        const temp = `${path}.${randomUUID()}.tmp`;
        await writeFile(temp, record, { mode: 0o600, flag: 'wx' });
        await rename(temp, path);
      }),
    );
  }
}

const execFileAsync = promisify(execFile);

/** `syncfs(2)` on the file system holding `path`: Node has no binding for it, coreutils' sync does. */
async function syncFileSystemOf(path: string): Promise<void> {
  await execFileAsync('sync', ['-f', path]);
}
