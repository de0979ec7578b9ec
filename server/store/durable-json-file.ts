import { readFile, unlink } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Adapter } from 'lowdb';
import { syncDirectory, writeFileDurably } from '../durable-write.ts';

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
    await writeFileDurably(this.path, JSON.stringify(data));
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
