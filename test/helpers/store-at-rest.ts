import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { COLLECTIONS } from '../../server/store/collections.ts';
import { journalSeq, readJournal } from '../../server/store/journal.ts';

/**
 * Every file the embedded store keeps under `dataDir`, as text: the record files and the journal (a
 * write lives only in the journal until its checkpoint), so a secret is looked for everywhere it could be.
 */
export async function storeTextAtRest(dataDir: string): Promise<string> {
  const texts: string[] = [];
  for (const entry of await readdir(join(dataDir, 'store'), { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    texts.push(await readFile(join(entry.parentPath, entry.name), 'latin1').catch(() => ''));
  }
  return texts.join('\n');
}

/**
 * The records of one collection that a restart would load now, as JSON texts: its files, with the
 * journals replayed on top in order (server/store/journal.ts).
 */
export async function recordsAtRest(dataDir: string, table: string): Promise<string[]> {
  const root = join(dataDir, 'store');
  const records = new Map<string, string | null>();
  for (const name of await readdir(join(root, table)).catch(() => [] as string[])) {
    if (name.endsWith('.json'))
      records.set(`${table}/${name}`, await readFile(join(root, table, name), 'utf8'));
  }
  const tables = new Set(Object.values(COLLECTIONS).map((spec) => spec.table));
  const journals = (await readdir(root))
    .map((name) => ({ name, seq: journalSeq(name) }))
    .filter((entry): entry is { name: string; seq: number } => entry.seq !== undefined)
    .sort((a, b) => a.seq - b.seq);
  for (const { name } of journals) {
    for (const [file, record] of readJournal(await readFile(join(root, name), 'utf8'), tables).entries) {
      if (file.startsWith(`${table}/`)) records.set(file, record);
    }
  }
  return [...records.values()].filter((record): record is string => record !== null);
}
