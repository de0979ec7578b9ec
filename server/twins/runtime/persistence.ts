import { randomUUID } from 'node:crypto';
import { mkdir, open, readFile, readdir, rm, type FileHandle } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import jsonpatch, { type Operation } from 'fast-json-patch';
import { syncDirectory, writeFileDurably } from '../../durable-write.ts';
import { sandboxDir } from './paths.ts';

/**
 * A twin instance's state on disk: a snapshot (`<twin>.json`) and a journal (`<twin>.log`) of the changes
 * made since it was written. A write is answered only once its journal record is fsynced (group-committed:
 * the writes waiting meanwhile share the next fsync), so an answered write survives `kill -9` of any
 * process. Restoring reads the snapshot and replays the journal; the instance then writes a new snapshot
 * and starts a new journal (compaction), as it also does when the journal has grown past its snapshot.
 * docs/twins.md, "Persistence and restart", says what is durable when.
 */

/** What is kept on disk per twin instance, enough to bring it back after a Twinbox restart. */
export interface PersistedInstance {
  format: 1;
  twin: string;
  sandbox_id: string;
  port: number;
  /** SHA-256 of the sandbox admin token: the token itself is never written. */
  admin_token_sha256: string;
  /** Where browsers reach the instance, when that is not its own base URL (a sandbox's, via the router). */
  public_url?: string;
  /** The seed the instance was started with: reset returns to it. */
  seed: unknown;
  /** Driver-specific full state (engine snapshot, generated credentials, webhook target). */
  state: unknown;
  saved_at: string;
  /**
   * The journal whose records follow this snapshot: only a journal that starts with this id is replayed
   * onto it. Absent when the instance keeps no journal (snapshots of older versions, the benchmark's
   * `durableWrites: false`).
   */
  log_id?: string;
}

/** A snapshot read back, with its journal replayed onto `record.state`. */
export interface RestoredInstance {
  record: PersistedInstance;
  /** Journal records replayed. */
  replayed: number;
  /** Why replay stopped before the journal's end (a torn last record after a power cut), if it did. */
  problem?: string;
}

/** The first line of a journal: which snapshot it follows. */
interface JournalHeader {
  format: 1;
  log_id: string;
}

export function snapshotPath(dataDir: string, sandboxId: string, twin: string): string {
  return join(sandboxDir(dataDir, sandboxId), `${twin}.json`);
}

export function journalPath(dataDir: string, sandboxId: string, twin: string): string {
  return join(sandboxDir(dataDir, sandboxId), `${twin}.log`);
}

/** Makes the sandbox's state directory, durably: its entry in `dataDir` must survive a power cut too. */
async function ensureSandboxDir(dataDir: string, sandboxId: string): Promise<void> {
  const dir = sandboxDir(dataDir, sandboxId);
  const created = await mkdir(dir, { recursive: true, mode: 0o700 });
  if (created !== undefined) await syncDirectory(dirname(dir));
}

/**
 * Writes a snapshot (a serialised PersistedInstance) durably (temp file, fsync, rename, directory fsync):
 * never torn, and kept once resolved. Resolves with its size.
 */
export async function writeInstance(
  dataDir: string,
  sandboxId: string,
  twin: string,
  text: string,
): Promise<number> {
  await ensureSandboxDir(dataDir, sandboxId);
  await writeFileDurably(snapshotPath(dataDir, sandboxId, twin), text);
  return Buffer.byteLength(text);
}

export async function readSandbox(dataDir: string, sandboxId: string): Promise<RestoredInstance[]> {
  const dir = sandboxDir(dataDir, sandboxId);
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return [];
  }
  const restored: RestoredInstance[] = [];
  for (const name of names.filter((n) => n.endsWith('.json')).sort()) {
    const parsed = JSON.parse(await readFile(join(dir, name), 'utf8')) as PersistedInstance;
    if (parsed.format !== 1) continue;
    restored.push(await replay(journalPath(dataDir, sandboxId, parsed.twin), parsed));
  }
  return restored;
}

/**
 * Applies the journal's records to the snapshot's state, in order. Only a journal headed by the snapshot's
 * `log_id` belongs to it (one left by an earlier snapshot is already in it). Replay stops at the first
 * record that is torn (no newline: a power cut mid-append, a record never answered) or does not apply.
 */
async function replay(path: string, record: PersistedInstance): Promise<RestoredInstance> {
  if (!record.log_id) return { record, replayed: 0 };
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { record, replayed: 0 };
    throw error;
  }
  const lines = text.split('\n');
  // The text after the last newline is a record whose append did not finish; it was never answered.
  const torn = lines.pop() !== '';
  const header = parseLine<JournalHeader>(lines.shift());
  if (header?.format !== 1 || header.log_id !== record.log_id) return { record, replayed: 0 };
  let state = record.state;
  let replayed = 0;
  for (const line of lines) {
    const entry = parseLine<{ patch: Operation[] }>(line);
    if (!Array.isArray(entry?.patch)) {
      return { record: { ...record, state }, replayed, problem: `journal record ${replayed + 1} is torn` };
    }
    try {
      state = applyChanges(state, entry.patch);
    } catch (error) {
      const why = error instanceof Error ? error.message : String(error);
      return { record: { ...record, state }, replayed, problem: `journal record ${replayed + 1}: ${why}` };
    }
    replayed++;
  }
  return {
    record: { ...record, state },
    replayed,
    ...(torn ? { problem: `the journal's last record is torn (after ${replayed})` } : {}),
  };
}

function parseLine<T>(line: string | undefined): T | undefined {
  if (!line) return undefined;
  try {
    return JSON.parse(line) as T;
  } catch {
    return undefined;
  }
}

/** The changes from one persisted state to the next, as a journal record holds them (RFC 6902). */
export function stateChanges(before: unknown, after: unknown): Operation[] {
  if (isContainer(before) && isContainer(after) && Array.isArray(before) === Array.isArray(after)) {
    return jsonpatch.compare(before, after);
  }
  return before === after ? [] : [{ op: 'replace', path: '', value: after }];
}

/**
 * `state` with `patch` (as `stateChanges` makes them: add, remove, replace) applied, in place. Keys are
 * defined as own properties, never assigned: twins keep input as keys (ids, idempotency keys), and a key
 * such as `__proto__` must stay a key, not reach a prototype. (fast-json-patch's own apply refuses such
 * paths outright.) The values in a patch from `stateChanges` are copies, so a state advanced this way
 * stays detached from the driver's live objects. Throws JournalRecordError on a patch that does not fit.
 */
export function applyChanges(state: unknown, patch: Operation[]): unknown {
  let root = state;
  for (const op of patch) {
    if (op.op !== 'add' && op.op !== 'remove' && op.op !== 'replace') {
      throw new JournalRecordError(`unexpected operation ${op.op}`);
    }
    if (op.path === '') {
      if (op.op === 'remove') throw new JournalRecordError('the whole state removed');
      root = op.value;
      continue;
    }
    const keys = op.path
      .slice(1)
      .split('/')
      .map((key) => key.replace(/~1/g, '/').replace(/~0/g, '~'));
    const last = keys.pop()!;
    let parent: unknown = root;
    for (const key of keys) parent = ownValue(parent, key, op.path);
    if (!isContainer(parent)) throw new JournalRecordError(`no container at ${op.path}`);
    if (Array.isArray(parent)) {
      const index = last === '-' ? parent.length : Number(last);
      if (!Number.isInteger(index) || index < 0 || index > parent.length) {
        throw new JournalRecordError(`bad index at ${op.path}`);
      }
      if (op.op === 'add') parent.splice(index, 0, op.value);
      else if (op.op === 'replace') parent[index] = op.value;
      else parent.splice(index, 1);
    } else if (op.op === 'remove') {
      delete (parent as Record<string, unknown>)[last];
    } else {
      Object.defineProperty(parent, last, {
        value: op.value,
        writable: true,
        enumerable: true,
        configurable: true,
      });
    }
  }
  return root;
}

function ownValue(parent: unknown, key: string, path: string): unknown {
  if (!isContainer(parent) || !Object.prototype.hasOwnProperty.call(parent, key)) {
    throw new JournalRecordError(`no ${path}`);
  }
  return (parent as Record<string, unknown>)[key];
}

/** A journal record that does not fit the state it follows: replay stops there. */
export class JournalRecordError extends Error {
  constructor(detail: string) {
    super(`the journal record does not apply: ${detail}`);
    this.name = 'JournalRecordError';
  }
}

function isContainer(value: unknown): value is object {
  return typeof value === 'object' && value !== null;
}

export async function purgeSandbox(dataDir: string, sandboxId: string): Promise<void> {
  await rm(sandboxDir(dataDir, sandboxId), { recursive: true, force: true });
}

/** What a journal records: the twin instance's state, seen through the two views the journal needs. */
export interface JournalSource {
  /**
   * The changes since the last call or the last snapshot (empty: none), and the state they lead to is
   * now the persisted one. Called in the journal's turn, so every change made before is in it.
   */
  changes(): Operation[];
  /**
   * Writes a snapshot of the whole state now, naming `logId`, durably (see writeInstance). What it holds
   * is taken before its first await: changes made while it is written go to the new journal.
   */
  snapshot(logId: string): Promise<void>;
}

type Waiter = { resolve: () => void; reject: (error: unknown) => void };
type Queued = Waiter & { kind: 'commit' | 'rotate' | 'close' };

/**
 * A twin instance's journal. A commit resolves once every change made before it was asked for is on
 * disk: the commits waiting when the journal gets its turn share one diff, one write and one fsync (group
 * commit). Rotations (a new snapshot, then an empty journal after it: compaction) take their turn in the
 * same queue, so a snapshot and the records around it never overlap or leave a gap.
 */
export class StateJournal {
  private readonly queue: Queued[] = [];
  private draining = false;
  private file: FileHandle | undefined;
  /** Bytes of the journal that hold complete records: a failed append is cut back to this. */
  private good = 0;
  /** An append failed and could not be cut back: refuse appends until a rotation starts a new journal. */
  private broken = false;
  private closed = false;

  private constructor(
    private readonly path: string,
    private readonly source: JournalSource,
  ) {}

  /** Writes a first snapshot, then starts its journal at `path`. */
  static async start(path: string, source: JournalSource): Promise<StateJournal> {
    const journal = new StateJournal(path, source);
    await journal.rotate();
    return journal;
  }

  /** Bytes of records in the journal since its last rotation. */
  get bytes(): number {
    return this.good;
  }

  /** Resolves once every change made before the call is on disk (fsynced); at once when nothing changed. */
  commit(): Promise<void> {
    return this.enqueue('commit');
  }

  /** A new snapshot holding everything so far, then an empty journal after it (compaction). */
  rotate(): Promise<void> {
    return this.enqueue('rotate');
  }

  /** Waits for what is queued, then closes the file; later commits are refused (JournalClosedError). */
  close(): Promise<void> {
    return this.enqueue('close');
  }

  private enqueue(kind: Queued['kind']): Promise<void> {
    return new Promise((resolve, reject) => {
      this.queue.push({ kind, resolve, reject });
      if (!this.draining) void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.draining = true;
    while (this.queue.length) {
      const head = this.queue[0]!;
      let count = 1;
      if (head.kind === 'commit') while (this.queue[count]?.kind === 'commit') count++;
      const turn = this.queue.splice(0, count);
      try {
        if (head.kind === 'commit') await this.record();
        else if (head.kind === 'rotate') await this.startNew();
        else {
          this.closed = true;
          await this.closeFile();
        }
        for (const waiter of turn) waiter.resolve();
      } catch (error) {
        for (const waiter of turn) waiter.reject(error);
      }
    }
    this.draining = false;
  }

  private async record(): Promise<void> {
    if (this.closed) throw new JournalClosedError();
    const patch = this.source.changes();
    if (!patch.length) return;
    if (this.broken || !this.file) throw new JournalBrokenError();
    const data = `${JSON.stringify({ patch })}\n`;
    try {
      await this.file.write(data);
      // The data only: the size and blocks it needs are written with it; no other metadata matters.
      await this.file.datasync();
      this.good += Buffer.byteLength(data);
    } catch (error) {
      // A partly written record (ENOSPC, EIO) must not sit before later ones: cut back to the last good one.
      await this.file.truncate(this.good).catch(() => {
        this.broken = true;
      });
      throw error;
    }
  }

  /**
   * The snapshot first, then the new journal. A crash between the two leaves the old journal, whose
   * header no longer matches the snapshot: it is ignored, and the snapshot already holds all of it.
   */
  private async startNew(): Promise<void> {
    if (this.closed) throw new JournalClosedError();
    const logId = randomUUID();
    await this.source.snapshot(logId);
    await this.closeFile();
    const header: JournalHeader = { format: 1, log_id: logId };
    await writeFileDurably(this.path, `${JSON.stringify(header)}\n`);
    this.file = await open(this.path, 'a', 0o600);
    this.good = 0;
    this.broken = false;
  }

  private async closeFile(): Promise<void> {
    const file = this.file;
    this.file = undefined;
    await file?.close();
  }
}

/** A commit to a journal whose last append failed and could not be undone: the next rotation heals it. */
export class JournalBrokenError extends Error {
  constructor() {
    super('the twin state journal is not writable until its next snapshot');
    this.name = 'JournalBrokenError';
  }
}

export class JournalClosedError extends Error {
  constructor() {
    super('the twin state journal is closed');
    this.name = 'JournalClosedError';
  }
}
