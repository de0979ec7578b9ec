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

/**
 * Shares directory fsyncs between concurrent writes (group commit): a caller arriving while a sync of
 * its directory runs may have renamed after that sync began, so it waits for the next one, which every
 * caller arriving meanwhile shares. N writes landing together cost one or two directory fsyncs, not N.
 * `fsync` is the real one outside tests.
 */
export function directorySyncer(
  fsync: (directory: string) => Promise<void>,
): (directory: string) => Promise<void> {
  const states = new Map<string, { running?: Promise<void>; queued?: Promise<void> }>();
  const start = (directory: string, state: { running?: Promise<void>; queued?: Promise<void> }) => {
    const running: Promise<void> = fsync(directory).finally(() => {
      if (state.running !== running) return;
      state.running = undefined;
      if (!state.queued) states.delete(directory);
    });
    state.running = running;
    return running;
  };
  return (directory) => {
    let state = states.get(directory);
    if (!state) states.set(directory, (state = {}));
    if (!state.running) return start(directory, state);
    const current = state;
    const next = () => {
      current.queued = undefined;
      return start(directory, current);
    };
    return (state.queued ??= state.running.then(next, next));
  };
}

async function fsyncDirectory(directory: string): Promise<void> {
  const handle = await open(directory, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Makes a create, rename or unlink in `directory` durable (shared with concurrent writes there). */
export const syncDirectory: (directory: string) => Promise<void> = directorySyncer(fsyncDirectory);
