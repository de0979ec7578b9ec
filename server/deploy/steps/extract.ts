import { constants } from 'node:fs';
import { mkdir, open } from 'node:fs/promises';
import { dirname, join, resolve, sep } from 'node:path';
import { Readable, Transform, type TransformCallback } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import { createGunzip } from 'node:zlib';
import * as tar from 'tar';

/** Caps on what one repository may put on disk, on both fetch paths (tarball, and trees with blobs). */
export interface SourceLimits {
  /** Bytes of file content, counted as they are unpacked. */
  maxBytes: number;
  /** Files and directories (every entry of the archive or of the tree listing). */
  maxFiles: number;
}

export const DEFAULT_SOURCE_LIMITS: SourceLimits = { maxBytes: 512 * 1024 * 1024, maxFiles: 50_000 };

/** A repository over a cap: its message is the whole reason, ready for the sandbox's `error`. */
export class SourceLimitError extends Error {
  override name = 'SourceLimitError';
}

function describeBytes(bytes: number): string {
  const mib = bytes / (1024 * 1024);
  return mib >= 1 ? `${bytes} bytes (${Number.isInteger(mib) ? mib : mib.toFixed(1)} MiB)` : `${bytes} bytes`;
}

export function tooManyFiles(limits: SourceLimits): SourceLimitError {
  return new SourceLimitError(
    `the repository has more than ${limits.maxFiles} files and directories (TWINBOX_SOURCE_MAX_FILES)`,
  );
}

export function tooLarge(limits: SourceLimits): SourceLimitError {
  return new SourceLimitError(
    `the repository is larger than ${describeBytes(limits.maxBytes)} unpacked (TWINBOX_SOURCE_MAX_BYTES)`,
  );
}

/**
 * What a repository has cost so far. Both fetch paths charge it as data arrives, so a cap is enforced the
 * moment it is passed, whatever sizes the archive or the tree listing declared.
 */
export class SourceBudget {
  bytes = 0;
  entries = 0;

  constructor(readonly limits: SourceLimits) {}

  addEntries(count: number): void {
    this.entries += count;
    if (this.entries > this.limits.maxFiles) throw tooManyFiles(this.limits);
  }

  addBytes(count: number): void {
    this.bytes += count;
    if (this.bytes > this.limits.maxBytes) throw tooLarge(this.limits);
  }

  get remainingBytes(): number {
    return Math.max(0, this.limits.maxBytes - this.bytes);
  }

  /** A pass-through stream that charges every byte flowing through it. */
  meter(): Transform {
    return new Transform({
      transform: (chunk: Buffer, _encoding, done: TransformCallback) => {
        try {
          this.addBytes(chunk.length);
          done(null, chunk);
        } catch (error) {
          done(error as Error);
        }
      },
    });
  }
}

/** Entries kept from an archive: regular files and directories only. */
const FILE_TYPES = new Set(['File', 'OldFile', 'ContiguousFile']);

/**
 * Tar framing allowed on top of file content: a 512-byte header and up to 511 bytes of padding per entry,
 * pax records for long names, and the end-of-archive blocks. Anything beyond is not source and is refused.
 */
const FRAMING_PER_ENTRY = 2048;
const FRAMING_SLACK = 1024 * 1024;

/** Opens for writing without following a symlink at the last component (none should exist; belt and braces). */
const WRITE_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_TRUNC | constants.O_NOFOLLOW;

/** Modes written: the owner's rw, everyone's r, and x only when the entry had an x bit. Nothing else. */
export const fileMode = (mode: number | undefined): number => ((mode ?? 0) & 0o111 ? 0o755 : 0o644);

/**
 * Where an archive path lands under `root` once its top directory is dropped, or undefined when it must not
 * be written at all: absolute paths, `..` anywhere, NUL bytes, or nothing left after the top directory.
 */
export function safeTarget(root: string, archivePath: string, strip: number): string | undefined {
  if (archivePath.startsWith('/') || archivePath.includes('\0')) return undefined;
  const parts = archivePath.split('/');
  if (parts.includes('..')) return undefined;
  const rest = parts.slice(strip).filter((part) => part !== '' && part !== '.');
  if (rest.length === 0) return undefined;
  const target = join(root, ...rest);
  return target.startsWith(root + sep) ? target : undefined;
}

/** Writes one file's bytes from `body` (through `meter` when given), creating its directories. */
export async function writeSourceFile(
  target: string,
  body: Readable | AsyncIterable<Buffer>,
  mode: number,
  signal?: AbortSignal,
  meter?: Transform,
): Promise<void> {
  await mkdir(dirname(target), { recursive: true, mode: 0o755 });
  const file = await open(target, WRITE_FLAGS, mode);
  // The stream owns the handle from here and closes it when done or destroyed.
  const out = file.createWriteStream();
  await (meter ? pipeline(body, meter, out, { signal }) : pipeline(body, out, { signal }));
}

export type ArchiveBody = Buffer | Readable | WebReadableStream<Uint8Array> | ReadableStream<Uint8Array>;

function readableOf(archive: ArchiveBody): Readable {
  if (Buffer.isBuffer(archive)) return Readable.from([archive]);
  if (archive instanceof Readable) return archive;
  return Readable.fromWeb(archive as WebReadableStream<Uint8Array>);
}

/**
 * Unpacks a gzipped tarball into `dest`, streaming: the archive is inflated chunk by chunk and every byte
 * is counted as it flows, so memory stays flat and a cap is enforced the moment it is passed, whatever the
 * entry headers declare (a gzip bomb hidden after the end of the archive, in a pax header or in an entry
 * that is skipped is refused just the same). The single top directory (GitHub's `<owner>-<repo>-<sha7>/`)
 * is dropped.
 *
 * Only regular files and directories are written, by this function rather than by tar's unpacker, so
 * nothing an archive says about links, devices, owners or mode bits reaches the disk: symlinks and hard
 * links could point a later write, or the app, outside its workspace; setuid/setgid/sticky bits and odd
 * modes are never needed by an app. Paths with `..` or absolute paths are skipped.
 *
 * Returns the number of regular files written.
 */
export async function extractTarball(
  archive: ArchiveBody,
  dest: string,
  opts: Partial<SourceLimits> & { signal?: AbortSignal } = {},
): Promise<number> {
  const limits: SourceLimits = {
    maxBytes: opts.maxBytes ?? DEFAULT_SOURCE_LIMITS.maxBytes,
    maxFiles: opts.maxFiles ?? DEFAULT_SOURCE_LIMITS.maxFiles,
  };
  const root = resolve(dest);
  await mkdir(root, { recursive: true });
  const budget = new SourceBudget(limits);
  // The whole stream (compressed, then inflated) may exceed the file bytes only by the tar framing.
  const streamCap = () => limits.maxBytes + FRAMING_SLACK + FRAMING_PER_ENTRY * budget.entries;

  let files = 0;
  let failure: Error | undefined;
  const writes: Promise<void>[] = [];

  let compressed = 0;
  const download = new Transform({
    transform(chunk: Buffer, _encoding, done: TransformCallback) {
      compressed += chunk.length;
      done(compressed > streamCap() ? tooLarge(limits) : null, chunk);
    },
  });

  let inflated = 0;
  let head = Buffer.alloc(0);
  let ended = false;
  const parser = new tar.Parser({ strict: true });
  parser.on('eof', () => (ended = true));
  const inflate = new Transform({
    transform(chunk: Buffer, _encoding, done: TransformCallback) {
      inflated += chunk.length;
      if (inflated > streamCap()) return done(tooLarge(limits));
      if (head.length < 4) {
        head = Buffer.concat([head, chunk.subarray(0, 4)]).subarray(0, 4);
        // The tar parser would inflate a second compressed layer on its own, outside this count.
        const zstd = head.length === 4 && head.readUInt32BE(0) === 0x28b52ffd;
        if ((head[0] === 0x1f && head[1] === 0x8b) || zstd) {
          return done(new Error('the archive is compressed twice; expected a gzipped tar'));
        }
      }
      // After the end-of-archive blocks nothing is source: count it (above), never buffer it.
      done(null, ended ? undefined : chunk);
    },
  });

  // One failure stops everything: the download, the parser, and any file still being written.
  const stop = new AbortController();
  const signal = opts.signal ? AbortSignal.any([opts.signal, stop.signal]) : stop.signal;
  const fail = (error: unknown) => {
    failure ??= error as Error;
    inflate.destroy(failure);
    stop.abort(failure);
  };

  parser.on('entry', (entry: tar.ReadEntry) => {
    const target = safeTarget(root, entry.path, 1);
    // Every entry counts except the top directory: skipped links and refused paths cost parsing too.
    const isTop = entry.path.split('/').filter(Boolean).length <= 1;
    try {
      if (!isTop) budget.addEntries(1);
      // Refuse on the declared size before a byte of it is written; the stream cap above covers the rest.
      budget.addBytes(entry.size ?? 0);
    } catch (error) {
      entry.resume();
      return fail(error);
    }
    if (target && entry.type === 'Directory') {
      entry.resume();
      writes.push(mkdir(target, { recursive: true, mode: 0o755 }).then(() => undefined, fail));
    } else if (target && FILE_TYPES.has(entry.type)) {
      files++;
      writes.push(writeSourceFile(target, entry, fileMode(entry.mode), signal).catch(fail));
    } else {
      entry.resume();
    }
  });

  try {
    await pipeline(readableOf(archive), download, createGunzip({ chunkSize: 64 * 1024 }), inflate, parser, {
      signal,
    });
  } catch (error) {
    fail(error);
  }
  await Promise.all(writes);
  if (failure) throw failure;
  return files;
}
