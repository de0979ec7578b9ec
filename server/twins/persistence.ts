import { mkdir, open, readFile, readdir, rename, rm, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';

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
}

/** Sandbox ids come from callers; encode them so they can never escape the data directory. */
export function sandboxDir(dataDir: string, sandboxId: string): string {
  return join(dataDir, encodeURIComponent(sandboxId));
}

export async function writeInstance(dataDir: string, record: PersistedInstance): Promise<void> {
  const dir = sandboxDir(dataDir, record.sandbox_id);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const path = join(dir, `${record.twin}.json`);
  // Write-then-rename so a crash mid-write never leaves a truncated state file behind.
  const tmp = `${path}.${randomUUID()}.tmp`;
  const file = await open(tmp, 'wx', 0o600);
  try {
    await file.writeFile(JSON.stringify(record));
  } finally {
    await file.close();
  }
  try {
    await rename(tmp, path);
  } catch (error) {
    await unlink(tmp).catch(() => {});
    throw error;
  }
}

export async function readSandbox(dataDir: string, sandboxId: string): Promise<PersistedInstance[]> {
  const dir = sandboxDir(dataDir, sandboxId);
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return [];
  }
  const records: PersistedInstance[] = [];
  for (const name of names.filter((n) => n.endsWith('.json')).sort()) {
    const parsed = JSON.parse(await readFile(join(dir, name), 'utf8')) as PersistedInstance;
    if (parsed.format === 1) records.push(parsed);
  }
  return records;
}

export async function purgeSandbox(dataDir: string, sandboxId: string): Promise<void> {
  await rm(sandboxDir(dataDir, sandboxId), { recursive: true, force: true });
}
