import { mkdir } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { isAbsolute, normalize } from 'node:path';
import * as tar from 'tar';

/** Entries kept from an archive: regular files and directories only. */
const KEPT_TYPES = new Set(['File', 'OldFile', 'ContiguousFile', 'Directory']);

/**
 * Unpacks a gzipped tarball into `dest`, dropping its single top directory (GitHub's
 * `<owner>-<repo>-<sha7>/`). Links of any kind are skipped rather than followed: a symlink in a repository
 * could otherwise point a later write, or the app, at a file outside its workspace. Paths with `..` or
 * absolute paths are refused by name here, on top of tar's own checks.
 */
export async function extractTarball(
  archive: Buffer,
  dest: string,
  maxBytes = 512 * 1024 * 1024,
): Promise<number> {
  await mkdir(dest, { recursive: true });
  let files = 0;
  let bytes = 0;
  let tooBig = false;
  await pipeline(
    Readable.from([archive]),
    tar.x({
      cwd: dest,
      strip: 1,
      preserveOwner: false,
      // Apps never need setuid bits or odd modes; keep rw for the owner and the x bits the repo has.
      noChmod: false,
      filter: (path, entry) => {
        const type = 'type' in entry ? entry.type : undefined;
        if (!type || !KEPT_TYPES.has(type)) return false;
        const clean = normalize(path);
        if (isAbsolute(path) || clean.split('/').includes('..')) return false;
        bytes += 'size' in entry ? Number(entry.size ?? 0) : 0;
        if (bytes > maxBytes) {
          tooBig = true;
          return false;
        }
        if (type !== 'Directory') files++;
        return true;
      },
    }),
  );
  if (tooBig) throw new Error(`the repository is larger than ${maxBytes} bytes unpacked`);
  return files;
}
