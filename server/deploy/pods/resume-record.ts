import { mkdir, readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileDurably } from '../../durable-write.ts';
import type { RuntimeProfile } from '../steps/profile.ts';

/**
 * What a restart needs to bring a deployed sandbox back that its store record does not hold: the context
 * the deploy steps before `start` built. Kept as a small file in the data dir (mode 0600), not in the
 * sandbox's workspace, where its own code could rewrite it (`read_only` decides what bubblewrap shows the
 * app, `profile.start` what runs); and not on the store record, which every Twinbox process and the API
 * share, while this names this host's pod directory and cache paths. The app's variables are not here:
 * they are the record's `env_vars`, and the twins' secrets stay in the twins' own state files.
 */
export interface ResumeRecord {
  format: 1;
  sandbox_id: string;
  /** The pod whose directory holds the twins' state (pods/<slot>/state). */
  pod_slot: string;
  /** Start command, port variable, health path, webhook paths...: as the deploy read them. Absent: a twin set. */
  profile?: RuntimeProfile;
  /** Each twin's base URL inside the sandbox, as the app's variables name it. */
  twin_urls: Record<string, string>;
  /** Read-only paths the app was given besides its workspace (the dependency cache's entry). */
  read_only: string[];
  deployed_at: string;
}

export class ResumeRecords {
  constructor(readonly dir: string) {}

  async write(record: ResumeRecord): Promise<void> {
    await mkdir(this.dir, { recursive: true, mode: 0o700 });
    // Atomic and fsynced: a crash never leaves a torn record that would fail the resume, and a record
    // written before the sandbox went `ready` is there after a power cut too.
    await writeFileDurably(this.pathOf(record.sandbox_id), JSON.stringify(record));
  }

  /** The record of `sandboxId`, or undefined when there is none (or it is not one this Twinbox reads). */
  async read(sandboxId: string): Promise<ResumeRecord | undefined> {
    try {
      const parsed = JSON.parse(await readFile(this.pathOf(sandboxId), 'utf8')) as ResumeRecord;
      return parsed.format === 1 && parsed.sandbox_id === sandboxId ? parsed : undefined;
    } catch {
      return undefined;
    }
  }

  async remove(sandboxId: string): Promise<void> {
    await rm(this.pathOf(sandboxId), { force: true });
  }

  /** Every record on disk (torn temporaries removed). */
  async all(): Promise<ResumeRecord[]> {
    // None there yet (or unreadable): nothing left to find.
    const names = await readdir(this.dir).catch((): string[] => []);
    const records: ResumeRecord[] = [];
    for (const name of names) {
      if (name.endsWith('.tmp')) {
        await rm(join(this.dir, name), { force: true });
        continue;
      }
      if (!name.endsWith('.json')) continue;
      const record = await this.read(decodeURIComponent(name.slice(0, -'.json'.length)));
      if (record) records.push(record);
      else await rm(join(this.dir, name), { force: true });
    }
    return records;
  }

  private pathOf(sandboxId: string): string {
    return join(this.dir, `${encodeURIComponent(sandboxId)}.json`);
  }
}
