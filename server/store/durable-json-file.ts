import { open, readFile, rename, unlink } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Adapter } from 'lowdb';

let tempCounter = 0;

/**
 * A lowdb adapter whose write is atomic and durable: the data goes to a temporary file, is fsynced,
 * renamed over the target and the directory is fsynced. A `kill -9` at any moment leaves either the
 * old file or the new one, never a torn one; once `write` resolves, a power loss keeps the new one.
 * (lowdb's own JSONFile renames but does not fsync, so an acknowledged write could be lost.)
 */
export class DurableJsonFile<T> implements Adapter<T> {
  constructor(readonly path: string) {}

  async read(): Promise<T | null> {
    try {
      return JSON.parse(await readFile(this.path, 'utf8')) as T;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw error;
    }
  }

  async write(data: T): Promise<void> {
    const temp = `${this.path}.${process.pid}.${++tempCounter}.tmp`;
    const file = await open(temp, 'w', 0o600);
    try {
      await file.writeFile(JSON.stringify(data));
      await file.sync();
    } finally {
      await file.close();
    }
    await rename(temp, this.path);
    await syncDirectory(dirname(this.path));
  }

  async remove(): Promise<void> {
    try {
      await unlink(this.path);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    }
    await syncDirectory(dirname(this.path));
  }
}

/** Makes a rename or unlink in `directory` durable. */
export async function syncDirectory(directory: string): Promise<void> {
  const handle = await open(directory, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}
