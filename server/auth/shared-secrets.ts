import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { Collection } from '../store/store.ts';
import { UniqueViolationError } from '../store/store.ts';
import type { ServerSecretRecord } from '../store/records.ts';

/**
 * A key every process of one Store uses (the JWT secret when none is configured, the key of code hashes
 * and OAuth states): kept in the Store, so a session signed, a code mailed or a sign-in started by one
 * process is good on every other. Made by whichever process asks first; a race is settled by the
 * Store's unique id, the loser taking the winner's value. A Twinbox from before kept such keys in its
 * data dir (`legacyFile`): that value is adopted, so an upgrade signs nobody out.
 */
export async function sharedSecret(
  secrets: Collection<ServerSecretRecord>,
  name: string,
  legacyFile: string,
): Promise<string> {
  const kept = await secrets.get(name);
  if (kept) return kept.value;
  const value = (await readLegacy(legacyFile)) ?? randomBytes(48).toString('base64url');
  try {
    await secrets.insert({ id: name, value, created_at: new Date().toISOString() });
    return value;
  } catch (error) {
    if (!(error instanceof UniqueViolationError)) throw error;
    const winner = await secrets.get(name);
    if (!winner) throw error;
    return winner.value;
  }
}

async function readLegacy(path: string): Promise<string | undefined> {
  try {
    return (await readFile(path, 'utf8')).trim() || undefined;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}
