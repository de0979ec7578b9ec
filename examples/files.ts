import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const EXAMPLES = fileURLToPath(new URL('.', import.meta.url));

/** Every file of an example app (`examples/<name>/`), as GitHub twin seed files (path → text). */
export async function exampleFiles(name: string): Promise<Record<string, string>> {
  const root = join(EXAMPLES, name);
  const files: Record<string, string> = {};
  const walk = async (dir: string) => {
    for (const entry of await readdir(dir, { withFileTypes: true })) {
      if (entry.name === 'node_modules') continue;
      const path = join(dir, entry.name);
      if (entry.isDirectory()) await walk(path);
      else files[relative(root, path)] = await readFile(path, 'utf8');
    }
  };
  await walk(root);
  return files;
}
