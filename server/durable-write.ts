import { randomUUID } from 'node:crypto';
import { open, rename, unlink } from 'node:fs/promises';
import { dirname } from 'node:path';

/**
 * Replaces the file at `path` with `data` atomically and durably: the data goes to a temporary file
 * beside it (`<path>.<uuid>.tmp`), which is fsynced, renamed over `path`, and then the directory is
 * fsynced. A `kill -9` at any moment leaves either the old file or the new one, never a torn one; once the
 * promise resolves, the new one survives a power cut too (as far as the disk honours fsync).
 * Kept beside keyed-lock.ts because the twins (which import nothing else of server/) use it as well as the
 * store and the deploy's resume records.
 */
export async function writeFileDurably(
  path: string,
  data: string | Uint8Array,
  opts: { mode?: number } = {},
): Promise<void> {
  const temp = `${path}.${randomUUID()}.tmp`;
  const file = await open(temp, 'wx', opts.mode ?? 0o600);
  try {
    try {
      await file.writeFile(data);
      await file.sync();
    } finally {
      await file.close();
    }
    await rename(temp, path);
  } catch (error) {
    await unlink(temp).catch(() => {});
    throw error;
  }
  await syncDirectory(dirname(path));
}

/** Makes a create, rename or unlink in `directory` durable. */
export async function syncDirectory(directory: string): Promise<void> {
  const handle = await open(directory, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
